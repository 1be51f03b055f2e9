// A problem fixture for agent tests: a graph on a shipped hardware profile with the
// roofline cost model, owning everything a Problem borrows.
#pragma once

#include <memory>
#include <string>

#include "agents/environment.h"
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

}  // namespace gopt::agents::testing
