#include "tests/support/random_dag.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/rng.h"

namespace gopt::testing {

core::Graph random_dag(const RandomDagOptions& options) {
  core::Rng rng(options.seed);
  core::GraphBuilder b("random_dag_" + std::to_string(options.nodes));
  b.family("random");
  static constexpr const char* kOps[] = {"MatMul", "Add", "Relu",     "Conv2D",
                                         "Mul",    "Sum", "ConcatV2", "Tanh"};
  for (core::NodeId v = 0; v < options.nodes; ++v) {
    const char* op = kOps[rng.uniform_int(0, 7)];
    std::int64_t batch = 32;
    std::int64_t width = 64 << rng.uniform_int(0, 4);
    auto node = b.add("n" + std::to_string(v), op).output({batch, width});
    double flops = 2.0 * static_cast<double>(batch * width);
    if (std::string(op) == "MatMul" || std::string(op) == "Conv2D") {
      flops *= static_cast<double>(width);
      node.param_bytes(width * width * 4);
    }
    node.flops(flops);
    if (v == 0) continue;
    int fan_in = 1;
    while (fan_in < options.max_fan_in && rng.uniform() < (options.mean_fan_in - 1.0) / fan_in) {
      ++fan_in;
    }
    std::vector<core::NodeId> inputs;
    core::NodeId lo = std::max<core::NodeId>(0, v - options.window);
    for (int k = 0; k < fan_in; ++k) {
      auto u = static_cast<core::NodeId>(rng.uniform_int(lo, v - 1));
      if (std::find(inputs.begin(), inputs.end(), u) == inputs.end()) inputs.push_back(u);
    }
    for (auto u : inputs) b.connect(u, v);
  }
  return std::move(b).build();
}

}  // namespace gopt::testing
