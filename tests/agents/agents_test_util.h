// A problem fixture for agent tests: a graph on a shipped hardware profile with the
// roofline cost model, owning everything a Problem borrows.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/environment.h"
#include "core/graph.h"
#include "hardware/profile.h"

namespace gopt::agents::testing {

struct ProblemFixture {
  ProblemFixture(core::Graph graph, const std::string& profile, std::uint64_t seed = 1)
      : compiled(core::CompiledGraph::compile(graph)),
        cluster(hardware::load_profile(profile)),
        cost(cluster),
        problem{compiled, cluster, cost, seed} {}

  core::CompiledGraph compiled;
  hardware::Cluster cluster;
  hardware::RooflineCostModel cost;
  Problem problem;
};

/// Records a learner's learning curve.
class Curve final : public TrainingObserver {
 public:
  void on_training_step(const LearningCurvePoint& p) override { points.push_back(p); }
  std::vector<LearningCurvePoint> points;
};

/// Independent heavy chains ("c<chain>_<i>"), each of its own op type so that a grouper
/// or a permutation-equivariant policy can tell them apart (identical chains would be
/// automorphic); with `join`, a small sum consumes every chain's end. One chain per
/// device is optimal.
inline core::Graph parallel_chains(int chains, int length, bool join = false) {
  const char* types[] = {"MatMul", "Conv2D", "BatchMatMul", "DepthwiseConv2dNative"};
  core::GraphBuilder b("chains");
  auto in = b.add("in", "Placeholder").output({256, 1024});
  std::vector<core::NodeId> ends;
  for (int c = 0; c < chains; ++c) {
    core::NodeId prev = in;
    for (int i = 0; i < length; ++i) {
      auto n = b.add("c" + std::to_string(c) + "_" + std::to_string(i), types[c % 4])
                   .output({256, 1024})
                   .flops(2.0 * 256 * 1024 * 1024 * 8);
      b.connect(prev, n);
      prev = n;
    }
    ends.push_back(prev);
  }
  if (join) {
    auto sum = b.add("sum", "AddN").output({256, 1024});
    for (auto e : ends) b.connect(e, sum);
  }
  return std::move(b).build();
}

}  // namespace gopt::agents::testing
