#include "simulator/simulator_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/compiled_graph.h"
#include "core/rng.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "tests/support/random_dag.h"

namespace gopt::simulator {
namespace {

TEST(SimulatorPoolTest, ABatchGivesTheResultsOfOneSimulatorOneByOne) {
  const auto graph = core::CompiledGraph::compile(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(500).with_seed(3)));
  const auto cluster = hardware::load_profile("p100x4_pcie");
  const hardware::RooflineCostModel cost(cluster);
  core::Rng rng(11);
  std::vector<core::Decision> decisions(30);
  for (auto& d : decisions) {
    std::vector<core::DeviceId> placement(static_cast<std::size_t>(graph.num_nodes()));
    for (auto& p : placement) p = static_cast<core::DeviceId>(rng.uniform_int(0, 3));
    d.placement = std::move(placement);
    if (rng.uniform() < 0.5) {
      std::vector<std::int32_t> priority(static_cast<std::size_t>(graph.num_nodes()));
      for (auto& p : priority) p = static_cast<std::int32_t>(rng.uniform_int(0, 5));
      d.priority = std::move(priority);
    }
  }
  Simulator reference(graph, cluster, cost);
  std::vector<SimulationResult> expected;
  for (const auto& d : decisions) expected.push_back(reference.simulate(d));
  SimulatorPool pool(graph, cluster, cost);
  for (int threads : {1, 2, 3, 1}) {  // shrinking again keeps it working
    pool.set_threads(threads);
    ASSERT_EQ(pool.threads(), threads);
    std::vector<SimulationResult> got(decisions.size());
    std::vector<int> calls(decisions.size(), 0);
    pool.simulate_each(decisions, [&](std::size_t i, const SimulationResult& r) {
      got[i] = r;
      ++calls[i];
    });
    for (std::size_t i = 0; i < decisions.size(); ++i) {
      EXPECT_EQ(calls[i], 1);
      EXPECT_EQ(got[i].step_time_s, expected[i].step_time_s) << i;
      EXPECT_EQ(got[i].bytes_moved, expected[i].bytes_moved);
      ASSERT_EQ(got[i].devices.size(), expected[i].devices.size());
      for (std::size_t d = 0; d < got[i].devices.size(); ++d) {
        EXPECT_EQ(got[i].devices[d].peak_memory_bytes, expected[i].devices[d].peak_memory_bytes);
        EXPECT_EQ(got[i].devices[d].busy_s, expected[i].devices[d].busy_s);
      }
    }
  }
}

}  // namespace
}  // namespace gopt::simulator
