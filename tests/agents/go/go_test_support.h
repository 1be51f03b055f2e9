// What several of GO's test files share: small graphs with known optima, a small policy, a
// graph of named units, and a short GO-one run.
#pragma once

#include <map>

#include "agents/go/go_agent.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"
#include "agents/registry.h"
#include "tests/agents/agents_test_util.h"

namespace gopt::agents::go {

// Chains joined by a small sum (agents_test_util.h): one chain per device is optimal.
inline core::Graph parallel_chains(int chains, int length) {
  return testing::parallel_chains(chains, length, /*join=*/true);
}

// The hand-made optimum of parallel_chains: chain c on device c, the rest on device 0.
inline core::Decision chains_optimum(const core::CompiledGraph& g) {
  std::vector<core::DeviceId> placement(static_cast<std::size_t>(g.num_nodes()), 0);
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
    const auto& name = g.node_names()[static_cast<std::size_t>(v)];
    if (name.size() > 1 && name[0] == 'c') placement[static_cast<std::size_t>(v)] = name[1] - '0';
  }
  core::Decision d;
  d.placement = placement;
  return d;
}

inline GoPolicy small_policy(std::uint64_t seed, std::int64_t segment = 4) {
  GoPolicy policy(
      GoPolicyOptions().with_hidden(16).with_heads(2).with_segment_length(segment).with_max_devices(
          4));
  core::Rng rng(seed);
  initialise(*policy, rng);
  return policy;
}

// A graph of named units: two heavy layer chains ("enc/..." layer 0 and "dec/..." layer 0,
// each with gradients under "gradients/"), a decoder attention scope, an embedding scope
// without a layer, and a few flat-named ops. One unit per device (enc on one device, dec on
// the other) is optimal.
inline core::Graph unit_graph(int length = 24) {
  core::GraphBuilder b("units");
  auto prev = b.add("emb/lookup/in", "Placeholder").output({256, 1024}).id();
  auto chain = [&](const std::string& prefix, int count, std::int32_t layer, const char* type,
                   core::NodeId from) {
    core::NodeId last = from;
    for (int i = 0; i < count; ++i) {
      auto n = b.add(prefix + std::to_string(i), type)
                   .output({256, 1024})
                   .flops(2.0 * 256 * 1024 * 1024 * 8)
                   .layer(layer)
                   .id();
      b.connect(last, n);
      last = n;
    }
    return last;
  };
  prev = chain("emb/lookup/op", 20, -1, "Gather", prev);
  const auto enc = chain("enc/cell/op", length, 0, "MatMul", prev);
  const auto dec = chain("dec/cell/op", length, 0, "Conv2D", prev);
  const auto enc_grad = chain("gradients/enc/cell/grad", 4, 0, "MatMul", enc);
  const auto att = chain("dec/attention/op", 20, 0, "BatchMatMul", dec);
  auto sum = b.add("sum", "AddN").output({256, 1024}).id();
  b.connect(enc_grad, sum);
  b.connect(att, sum);
  chain("flat", 6, -1, "Relu", sum);
  return std::move(b).build();
}

// Ops of `placement` (by node) on another device than their unit's first op.
inline int ops_off_their_unit(const GraphTensors& tensors,
                              const std::vector<core::DeviceId>& placement) {
  std::map<std::int64_t, core::DeviceId> device_of_unit;
  int off = 0;
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    const auto v = static_cast<std::size_t>(tensors.order[p].item<std::int64_t>());
    const auto u = tensors.unit[p].item<std::int64_t>();
    off += device_of_unit.emplace(u, placement[v]).first->second != placement[v] ? 1 : 0;
  }
  return off;
}

// The learning curve of a small go_one (seed 3, 8 samples per update) trained `steps`
// updates on `problem`, with `extra` options: the coarse-to-fine tests' runs.
inline std::vector<LearningCurvePoint> small_go_one_curve(
    const Problem& problem, const std::map<std::string, std::string>& extra, std::int64_t steps) {
  AgentRegistry r;
  register_builtin_agents(r);
  std::map<std::string, std::string> options = {
      {"hidden", "16"}, {"segment_length", "8"}, {"samples_per_step", "8"}, {"seed", "3"}};
  options.insert(extra.begin(), extra.end());
  auto agent = r.create("go_one", options);
  Environment env(problem);
  testing::Curve curve;
  agent->train(env, TrainBudget().with_max_steps(steps), &curve);
  return curve.points;
}

}  // namespace gopt::agents::go
