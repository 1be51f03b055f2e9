#include "agents/baselines/tf_default.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "agents/baselines/human_expert.h"
#include "agents/option_fields.h"
#include "core/errors.h"
#include "simulator/fusion.h"

namespace gopt::agents {
namespace {

// Operands (distinct producers outside group g with a data edge into it) plus outputs
// (members with a data edge leaving g, or with no data consumer at all) of group g.
// `stamp` is per-node scratch holding the last group that counted that producer.
std::int32_t operands_and_outputs(const core::CompiledGraph& graph,
                                  const simulator::FusionGroups& groups, std::int32_t g,
                                  std::vector<std::int32_t>& stamp) {
  std::int32_t count = 0;
  const auto begin = groups.member_offset[static_cast<std::size_t>(g)];
  const auto end = groups.member_offset[static_cast<std::size_t>(g) + 1];
  for (auto i = begin; i < end; ++i) {
    const NodeId m = groups.members[static_cast<std::size_t>(i)];
    for (auto s = graph.in_begin(m); s < graph.in_end(m); ++s) {
      const NodeId src = graph.in_source(s);
      if (graph.edge_bytes(graph.in_edge(s)) == 0) continue;
      if (groups.group_of[static_cast<std::size_t>(src)] == g) continue;
      if (stamp[static_cast<std::size_t>(src)] == g) continue;
      stamp[static_cast<std::size_t>(src)] = g;
      ++count;
    }
    bool has_data_out = false;
    bool leaves = false;
    for (auto e = graph.out_begin(m); e < graph.out_end(m); ++e) {
      if (graph.edge_bytes(e) == 0) continue;
      has_data_out = true;
      leaves = leaves || groups.group_of[static_cast<std::size_t>(graph.out_target(e))] != g;
    }
    if (!has_data_out || leaves) ++count;
  }
  return count;
}

// TensorFlow's default pipeline: see tf_default.h and docs/agents.md.
class TfDefaultAgent final : public Agent {
 public:
  explicit TfDefaultAgent(TfDefaultOptions options) : options_(options) {}
  std::string name() const override { return "tf_default"; }

  core::Decision propose(const Problem& problem) override {
    core::Decision d;
    d.placement = tf_default_placement(problem, options_.single_device);
    // No priorities: the executor's FIFO order.
    if (options_.fusion) {
      d.fusion = xla_fusion_priorities(problem.graph, d.placement->data(), options_.xla);
    }
    return d;
  }

 private:
  TfDefaultOptions options_;
};

}  // namespace

std::vector<core::DeviceId> tf_default_placement(const Problem& problem, bool single_device) {
  if (single_device) return std::vector<DeviceId>(static_cast<std::size_t>(problem.num_nodes()), 0);
  return *make_human_expert_agent()->propose(problem).placement;
}

bool xla_fusible(core::OpKind kind) {
  switch (kind) {
    case core::OpKind::kElementwise:
    case core::OpKind::kReduction:
    case core::OpKind::kSoftmax:
    case core::OpKind::kNormalization:
    case core::OpKind::kDataMovement:
    case core::OpKind::kReshape:
      return true;
    default:
      return false;
  }
}

std::vector<std::int32_t> xla_fusion_priorities(const core::CompiledGraph& graph,
                                                const core::DeviceId* placement,
                                                const XlaFusionOptions& options) {
  const auto n = static_cast<std::size_t>(graph.num_nodes());
  std::vector<std::int32_t> fusion(n, 0);
  const auto& rank = graph.topological_rank();
  for (std::size_t v = 0; v < n; ++v) {
    if (xla_fusible(graph.kind()[v])) fusion[v] = 1 + rank[v];
  }
  if (options.max_operands_and_outputs <= 0 && options.max_ops <= 0) return fusion;
  std::vector<std::int32_t> stamp(n, -1);
  if (options.max_operands_and_outputs > 0) {
    // An op that alone reads more distinct tensors than the limit allows (an AddN of 100
    // gradients) stays unfused: as in XLA, nothing may join it. Done up front so that the
    // splitting below does not peel its producers off one round at a time.
    for (std::size_t v = 0; v < n; ++v) {
      if (fusion[v] == 0) continue;
      std::int32_t operands = 0;
      const auto id = static_cast<NodeId>(v);
      for (auto s = graph.in_begin(id); s < graph.in_end(id); ++s) {
        const auto src = static_cast<std::size_t>(graph.in_source(s));
        if (graph.edge_bytes(graph.in_edge(s)) == 0 || stamp[src] == id) continue;
        stamp[src] = id;
        ++operands;
      }
      if (operands + 1 > options.max_operands_and_outputs) fusion[v] = 0;
    }
  }
  simulator::FusionWorkspace workspace;
  simulator::FusionGroups groups;
  for (;;) {
    workspace.form_groups(graph, placement, fusion.data(), groups);
    std::fill(stamp.begin(), stamp.end(), -1);
    bool split = false;
    for (std::int32_t g = 0; g < groups.num_groups(); ++g) {
      const std::int32_t size = groups.group_size(g);
      if (size < 2) continue;
      const bool too_many_ops = options.max_ops > 0 && size > options.max_ops;
      const std::int32_t io =
          options.max_operands_and_outputs > 0 ? operands_and_outputs(graph, groups, g, stamp) : 0;
      const std::int32_t excess = io - options.max_operands_and_outputs;
      if (!too_many_ops && excess <= 0) continue;
      // Take members out of fusion from the middle of the group onwards, never its last
      // (usually the consumer the others fuse into): one to split an oversized group, as
      // many as the excess of operands and outputs otherwise. A removed member lowers the
      // count by at most one and on the suite's graphs by about a third on average (it
      // becomes an operand itself), so this rarely overshoots and wide groups need a few
      // rounds, not one per member.
      const std::int32_t middle = (size - 1) / 2;
      const std::int32_t remove = std::clamp(excess, 1, size - 1 - middle);
      const auto first = groups.member_offset[static_cast<std::size_t>(g)] + middle;
      for (std::int32_t i = 0; i < remove; ++i) {
        fusion[static_cast<std::size_t>(groups.members[static_cast<std::size_t>(first + i)])] = 0;
      }
      split = true;
    }
    if (!split) return fusion;
  }
}

void register_tf_default(AgentRegistry& registry) {
  using T = TfDefaultOptions;
  const auto fields =
      OptionFields<T>()
          .choice("placement", &T::single_device,
                  "human_expert (the human_expert agent's placement: the device scopes a user "
                  "writes by hand) or single_device (every op on device 0)",
                  std::vector<std::pair<std::string, bool>>{{"human_expert", false},
                                                            {"single_device", true}})
          .flag("fusion", &T::fusion,
                "XLA-style rule-based fusion; false = TensorFlow without XLA (no fusion)")
          .integer(
              "max_fusion_operands", [](T & o) -> auto& { return o.xla.max_operands_and_outputs; },
              "most operands + outputs of one fused kernel, 0 = no limit (XLA GPU's "
              "kMaxOperandsAndOutputsPerFusion)",
              0, 1e6)
          .integer(
              "max_fused_ops", [](T & o) -> auto& { return o.xla.max_ops; },
              "most ops in one fused kernel, 0 = no limit", 0, 1e6);
  registry.add(describe_agent(
      "tf_default",
      "TensorFlow's default pipeline (GO paper Table 3): expert (or single-device) placement, "
      "FIFO scheduling, XLA-style rule-based fusion of elementwise, reduction and "
      "data-movement ops",
      false, fields, TfDefaultOptions(),
      [](const TfDefaultOptions& o) { return std::make_unique<TfDefaultAgent>(o); }));
}

}  // namespace gopt::agents
