#include "agents/baselines/human_expert.h"

#include <algorithm>
#include <string>

#include "agents/placement_utils.h"

namespace gopt::agents {
namespace {

// Rules, by graph family:
// - rnnlm, gnmt: one LSTM layer per device (Wu et al. 2016 for GNMT; Mirhoseini et al.
//   2017/2018 use the same expert placement for RNNLM and NMT), attention and softmax with
//   the last layer. With more layers than devices, contiguous layers share a device:
//   layer l of L goes to device floor(l * D / L).
// - transformer_xl: layers split into D contiguous, equal stages (the same formula).
// - wavenet: the dilated layers (all stacks, in order) split into D contiguous stages, so
//   whole stacks go together when the stack count is a multiple of D.
// - inception, amoebanet: the parallel branches of each cell spread across devices,
//   branch b on device b mod D (the model-parallel split of Krizhevsky 2014 and the
//   "branches across GPUs" expert placements in the HDP and GO papers).
// - any other graph: by layer when ops carry layers, otherwise the topological order cut
//   into D contiguous chunks of equal op time on device 0 (a pipeline split).
// Ops the rule does not place (layer and branch -1: embeddings, softmax, loss, stems,
// gradients of those) take the device of their first placed input, in topological order;
// ops with no input take the device of their first consumer. Colocation groups then follow
// their first op.
class HumanExpertAgent final : public Agent {
 public:
  std::string name() const override { return "human_expert"; }

  core::Decision propose(const Problem& p) override {
    const auto& g = p.graph;
    const auto n = static_cast<std::size_t>(g.num_nodes());
    const DeviceId k = p.num_devices();
    std::vector<DeviceId> device(n, -1);
    const std::string& family = g.family();
    std::int32_t layers = 0;
    bool has_branches = false;
    for (std::size_t v = 0; v < n; ++v) {
      layers = std::max(layers, g.layer()[v] + 1);
      has_branches = has_branches || g.branch()[v] >= 0;
    }
    auto by_layer = [&](std::int32_t layer) {
      return static_cast<DeviceId>(static_cast<std::int64_t>(layer) * k / std::max(layers, 1));
    };
    const bool branchy = family == "inception" || family == "amoebanet";
    if (branchy && has_branches) {
      for (std::size_t v = 0; v < n; ++v) {
        if (g.branch()[v] >= 0) device[v] = g.branch()[v] % k;
      }
    } else if (layers > 0) {
      for (std::size_t v = 0; v < n; ++v) {
        if (g.layer()[v] >= 0) device[v] = by_layer(g.layer()[v]);
      }
      if (family == "gnmt") {
        // Attention (the encoder memory layer and every decoder attention op, forward and
        // backward) goes with the last layer.
        for (std::size_t v = 0; v < n; ++v) {
          if (g.node_names()[v].find("attention") != std::string::npos) device[v] = k - 1;
        }
      }
    } else {
      pipeline_split(p, device);
    }
    fill_unplaced(g, device);
    apply_colocation(g, device);
    core::Decision d;
    d.placement = std::move(device);
    return d;
  }

 private:
  static void pipeline_split(const Problem& p, std::vector<DeviceId>& device) {
    const auto& g = p.graph;
    double total = 0;
    std::vector<double> time(static_cast<std::size_t>(g.num_nodes()));
    for (NodeId v = 0; v < g.num_nodes(); ++v) {
      time[static_cast<std::size_t>(v)] = p.cost_model.op_time(g, v, 0);
      total += time[static_cast<std::size_t>(v)];
    }
    double done = 0;
    for (NodeId v : g.topological_order()) {
      auto chunk = total > 0 ? static_cast<DeviceId>(done / total * p.num_devices()) : 0;
      device[static_cast<std::size_t>(v)] = std::min(chunk, p.num_devices() - 1);
      done += time[static_cast<std::size_t>(v)];
    }
  }

  static void fill_unplaced(const core::CompiledGraph& g, std::vector<DeviceId>& device) {
    const auto& order = g.topological_order();
    for (NodeId v : order) {
      auto& d = device[static_cast<std::size_t>(v)];
      for (auto s = g.in_begin(v); s < g.in_end(v) && d < 0; ++s) {
        d = device[static_cast<std::size_t>(g.in_source(s))];
      }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      auto& d = device[static_cast<std::size_t>(*it)];
      for (auto e = g.out_begin(*it); e < g.out_end(*it) && d < 0; ++e) {
        d = device[static_cast<std::size_t>(g.out_target(e))];
      }
    }
    // A second forward pass reaches ops whose only placed neighbours were found by the
    // backward pass; anything left (an isolated op) goes to device 0.
    for (NodeId v : order) {
      auto& d = device[static_cast<std::size_t>(v)];
      for (auto s = g.in_begin(v); s < g.in_end(v) && d < 0; ++s) {
        d = device[static_cast<std::size_t>(g.in_source(s))];
      }
      if (d < 0) d = 0;
    }
  }
};

}  // namespace

std::unique_ptr<Agent> make_human_expert_agent() { return std::make_unique<HumanExpertAgent>(); }

void register_human_expert(AgentRegistry& registry) {
  registry.add({"human_expert",
                "per-family expert rules: one LSTM layer per device (RNNLM, GNMT; attention and "
                "softmax with the last layer), contiguous stages (Transformer-XL, WaveNet), "
                "branches across devices (Inception, AmoebaNet)",
                false,
                {},
                [](const AgentOptions&) { return make_human_expert_agent(); }});
}

}  // namespace gopt::agents
