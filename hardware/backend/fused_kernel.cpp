#include "hardware/backend/fused_kernel.h"

#include <algorithm>
#include <memory>

#include "core/errors.h"
#include "hardware/backend/fused_loop.h"
#include "hardware/device_spec.h"

namespace gopt::hardware::backend {
namespace {

using I64 = std::int64_t;

I64 elements_of(const core::NodeAttrs& attrs) {
  I64 n = 1;
  for (I64 d : primary_shape(attrs)) n *= std::max<I64>(d, 1);
  return std::max<I64>(n, 1);
}

/// One input of a loop member: the tile of an earlier member of the same loop, or floats
/// in memory (read at the tile's offset, or a tile-sized replica of a broadcast operand).
struct LoopInput {
  std::int32_t member = -1;  ///< index in the loop, or -1: memory
  const float* base = nullptr;
  bool at_offset = true;  ///< base + tile start; false: a replica, the same for every tile
};

struct LoopMember {
  LoopOp op = LoopOp::kCopy;
  bool alias = false;  ///< a reshape: its tile is its input's, nothing computed
  std::vector<LoopInput> inputs;
  std::vector<const float*> pointers;  ///< scratch for run_tile's argument
  float* written = nullptr;            ///< its output in memory, or nullptr: tile only
  std::vector<float> tile;             ///< kFusedTileElements floats when not written
};

struct Loop {
  I64 elements = 0;
  std::vector<LoopMember> members;
  std::vector<const float*> tile_of;  ///< per member: its current tile

  void run() {
    for (I64 start = 0; start < elements; start += kFusedTileElements) {
      const I64 n = std::min(kFusedTileElements, elements - start);
      for (std::size_t j = 0; j < members.size(); ++j) {
        LoopMember& m = members[j];
        for (std::size_t k = 0; k < m.inputs.size(); ++k) {
          const LoopInput& in = m.inputs[k];
          m.pointers[k] = in.member >= 0 ? tile_of[static_cast<std::size_t>(in.member)]
                          : in.at_offset ? in.base + start
                                         : in.base;
        }
        if (m.alias) {
          tile_of[j] = m.pointers[0];
          continue;
        }
        float* out = m.written ? m.written + start : m.tile.data();
        run_tile(m.op, m.pointers.data(), static_cast<int>(m.pointers.size()), out, n);
        tile_of[j] = out;
      }
    }
  }
};

struct Stage {
  std::unique_ptr<Loop> loop;  ///< a fused loop, or
  Kernel kernel;               ///< one member's own kernel
};

struct State {
  std::vector<Stage> stages;
  std::vector<torch::Tensor> memory;  ///< operands and outputs of the loops

  const float* floats(I64 count, const torch::Device& device) {
    memory.push_back(torch::rand({count}, torch::TensorOptions().device(device)));
    return memory.back().data_ptr<float>();
  }
  /// A broadcast operand of `len` floats read by a loop over `elements`: a replica of one
  /// tile when whole copies of it fill a tile, else the full expansion.
  LoopInput broadcast(I64 len, I64 elements, const torch::Device& device) {
    if (len >= elements) return {-1, floats(elements, device), true};
    if (kFusedTileElements % len == 0) {
      auto one = torch::rand({len}, torch::TensorOptions().device(device));
      memory.push_back(one.repeat({kFusedTileElements / len}).contiguous());
      return {-1, memory.back().data_ptr<float>(), false};
    }
    auto one = torch::rand({len}, torch::TensorOptions().device(device));
    memory.push_back(one.repeat({(elements + len - 1) / len}).narrow(0, 0, elements).contiguous());
    return {-1, memory.back().data_ptr<float>(), true};
  }
};

}  // namespace

FusedKernel make_fused_kernel(const FusedGroupView& group, const torch::Device& device) {
  const core::Graph& graph = *group.graph;
  const core::CompiledGraph& cg = *group.compiled;
  const auto& group_of = *group.group_of;
  GOPT_ASSERT(group.members.size() >= 2, "a fused group has at least two members");
  const bool loops_here = device.is_cpu();

  auto state = std::make_shared<State>();
  FusedKernel fused;
  const auto count = group.members.size();
  std::vector<std::int32_t> stage_of(count, -1);
  std::vector<std::int32_t> index_in_loop(count, -1);
  std::vector<I64> stage_elements;  // per stage: the loop's element count, or -1
  std::vector<std::int32_t> member_at(static_cast<std::size_t>(cg.num_nodes()), -1);
  for (std::size_t j = 0; j < count; ++j)
    member_at[static_cast<std::size_t>(group.members[j])] = static_cast<std::int32_t>(j);

  auto in_group = [&](core::NodeId v) {
    return group_of[static_cast<std::size_t>(v)] == group.group;
  };
  // A member leaves a tile in memory when its output leaves the group, is a graph output,
  // or feeds a member outside its own loop (decided once every member has its stage).
  std::vector<bool> loop_member(count, false);
  std::vector<LoopOp> ops(count, LoopOp::kCopy);
  for (std::size_t j = 0; j < count; ++j) {
    const core::NodeId v = group.members[j];
    const core::NodeAttrs& attrs = graph.node(v);
    bool loop = loops_here && runs_in_fused_loop(attrs.kind);
    if (loop && attrs.kind == core::OpKind::kElementwise) {
      if (!loop_op_of(attrs.op_type, ops[j])) {
        ops[j] = LoopOp::kAdd;  // as unfused: an addition over the same elements
        fused.proxy_members.push_back(v);
      }
    }
    loop_member[j] = loop;
    const I64 elements = elements_of(attrs);
    // The latest stage holding a producer of this member.
    std::int32_t latest = -1;
    for (auto s = cg.in_begin(v); s < cg.in_end(v); ++s) {
      core::NodeId u = cg.in_source(s);
      if (in_group(u)) {
        latest = std::max(
            latest, stage_of[static_cast<std::size_t>(member_at[static_cast<std::size_t>(u)])]);
      }
    }
    std::int32_t stage = -1;
    if (loop) {
      for (auto s = std::max<std::int32_t>(latest, 0);
           s < static_cast<std::int32_t>(stage_elements.size()); ++s) {
        if (stage_elements[static_cast<std::size_t>(s)] != elements) continue;
        stage = s;  // a loop of this size at or after every producer: the producer, if in
        break;      // stage `latest`, is then an earlier member of the same loop
      }
    }
    if (stage < 0) {
      stage = static_cast<std::int32_t>(stage_elements.size());
      stage_elements.push_back(loop ? elements : -1);
      state->stages.emplace_back();
      if (loop) {
        state->stages.back().loop = std::make_unique<Loop>();
        state->stages.back().loop->elements = elements;
        ++fused.loops;
      }
    }
    stage_of[j] = stage;
  }

  for (std::size_t j = 0; j < count; ++j) {
    const core::NodeId v = group.members[j];
    const core::NodeAttrs& attrs = graph.node(v);
    Stage& stage = state->stages[static_cast<std::size_t>(stage_of[j])];
    if (!loop_member[j]) {
      OpView view{&attrs, {}, group.channels_last};
      for (auto s = cg.in_begin(v); s < cg.in_end(v); ++s) {
        if (!cg.edge_is_control(cg.in_edge(s)))
          view.input_bytes.push_back(cg.edge_bytes(cg.in_edge(s)));
      }
      stage.kernel = make_kernel(view, device);
      if (stage.kernel.proxy) fused.proxy_members.push_back(v);
      continue;
    }
    ++fused.loop_ops;
    Loop& loop = *stage.loop;
    const I64 elements = loop.elements;
    const int elem_size = std::max(1, core::dtype_size_bytes(attrs.dtype));
    LoopMember m;
    m.op = ops[j];
    m.alias = attrs.kind == core::OpKind::kReshape;
    std::vector<LoopInput> data_inputs;
    for (auto s = cg.in_begin(v); s < cg.in_end(v); ++s) {
      auto e = cg.in_edge(s);
      if (cg.edge_is_control(e)) continue;
      core::NodeId u = cg.in_source(s);
      std::int32_t pj = in_group(u) ? member_at[static_cast<std::size_t>(u)] : -1;
      if (pj >= 0 && stage_of[static_cast<std::size_t>(pj)] == stage_of[j]) {
        data_inputs.push_back({index_in_loop[static_cast<std::size_t>(pj)], nullptr, true});
        continue;
      }
      I64 len = std::max<I64>(1, (cg.edge_bytes(e) + elem_size - 1) / elem_size);
      data_inputs.push_back(state->broadcast(len, elements, device));
    }
    int arity = m.alias ? 1 : loop_op_arity(m.op);
    if (m.op == LoopOp::kAddN) arity = std::max<int>(2, static_cast<int>(data_inputs.size()));
    data_inputs.resize(
        static_cast<std::size_t>(std::min<int>(arity, static_cast<int>(data_inputs.size()))));
    while (static_cast<int>(data_inputs.size()) < arity) {
      data_inputs.push_back({-1, state->floats(elements, device), true});
    }
    m.inputs = std::move(data_inputs);
    m.pointers.resize(m.inputs.size());
    // Written to memory: a graph output, or read by an op outside this loop.
    bool written = false;
    bool has_data_out = false;
    for (auto e = cg.out_begin(v); e < cg.out_end(v); ++e) {
      if (cg.edge_is_control(e) || cg.edge_bytes(e) == 0) continue;
      has_data_out = true;
      core::NodeId w = cg.out_target(e);
      std::int32_t wj = in_group(w) ? member_at[static_cast<std::size_t>(w)] : -1;
      written = written || wj < 0 || stage_of[static_cast<std::size_t>(wj)] != stage_of[j];
    }
    written = written || !has_data_out;
    if (m.alias) {
      written = false;  // a view, as unfused: its readers read its input's memory
    } else if (written) {
      state->memory.push_back(torch::empty({elements}, torch::TensorOptions().device(device)));
      m.written = state->memory.back().data_ptr<float>();
    } else {
      m.tile.resize(static_cast<std::size_t>(kFusedTileElements));
    }
    index_in_loop[j] = static_cast<std::int32_t>(loop.members.size());
    loop.members.push_back(std::move(m));
    loop.tile_of.push_back(nullptr);
  }
  // A reshape aliasing a memory input reads memory; one aliasing nothing (no data input)
  // reads a buffer of its own.
  for (auto& stage : state->stages) {
    if (!stage.loop) continue;
    for (auto& m : stage.loop->members) {
      if (m.alias && m.inputs.empty()) {
        m.inputs.push_back({-1, state->floats(stage.loop->elements, device), true});
        m.pointers.resize(1);
      }
    }
  }

  fused.kernel.what = "fused group of " + std::to_string(count) +
                      " ops: " + std::to_string(fused.loop_ops) + " in " +
                      std::to_string(fused.loops) + " loop(s), " +
                      std::to_string(static_cast<I64>(count) - fused.loop_ops) + " own kernel(s)";
  fused.kernel.run = [state](std::vector<torch::Tensor>&) {
    for (auto& stage : state->stages) {
      if (stage.loop) {
        stage.loop->run();
      } else if (!stage.kernel.no_work && stage.kernel.run) {
        (void)stage.kernel.run(stage.kernel.operands);
      }
    }
    return torch::Tensor();
  };
  return fused;
}

}  // namespace gopt::hardware::backend
