// Every baseline on every suite graph (issue: valid decisions on 2, 4 and 8 devices), and
// the human expert's rule checked on rnnlm_4.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "agents/registry.h"
#include "core/decision.h"
#include "datasets/workload_registry.h"
#include "tests/agents/agents_test_util.h"

namespace gopt::agents {
namespace {

const datasets::WorkloadRegistry& workloads() {
  static const datasets::WorkloadRegistry registry = [] {
    datasets::WorkloadRegistry r;
    datasets::register_builtin_workloads(r);
    return r;
  }();
  return registry;
}

class SuiteBaselinesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SuiteBaselinesTest, EveryBaselineIsValidOn2And4And8Devices) {
  AgentRegistry agents;
  register_builtin_agents(agents);
  core::Graph graph = workloads().generate(GetParam());
  for (const char* profile : {"p100x2_pcie", "p100x4_pcie", "p100x8_pcie"}) {
    testing::ProblemFixture f(graph, profile);
    for (const auto& info : agents.agents()) {
      // These two need a pretrained checkpoint (tests/agents/go/go_transfer_test.cpp covers them);
      // go_pretrain's untrained policy is the same network.
      if (info.name == "go_finetune" || info.name == "go_zero_shot") continue;
      // Learners propose their untrained (greedy) decision here; training is tested elsewhere.
      auto d = agents.create(info.name)->propose(f.problem);
      ASSERT_TRUE(d.placement.has_value()) << info.name;
      EXPECT_NO_THROW(core::validate_decision(d, f.problem.num_nodes(), f.problem.num_devices(),
                                              info.name, &f.compiled.node_names()))
          << info.name << " on " << GetParam() << " / " << profile;
      // Colocated ops (a variable and its update) share a device.
      const auto& coloc = f.compiled.colocation();
      std::vector<DeviceId> group_device(f.compiled.colocation_groups().size(), -1);
      for (NodeId v = 0; v < f.problem.num_nodes(); ++v) {
        auto g = coloc[static_cast<std::size_t>(v)];
        if (g < 0) continue;
        auto& gd = group_device[static_cast<std::size_t>(g)];
        if (gd < 0) gd = d.device_of(v);
        ASSERT_EQ(gd, d.device_of(v))
            << info.name << " splits colocation group "
            << f.compiled.colocation_groups()[static_cast<std::size_t>(g)];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Suite, SuiteBaselinesTest, ::testing::ValuesIn(workloads().names()),
                         [](const auto& param_info) { return param_info.param; });

TEST(HumanExpertTest, Rnnlm4PutsLstmLayerKOnDeviceK) {
  testing::ProblemFixture f(workloads().generate("rnnlm_4"), "p100x4_pcie");
  AgentRegistry agents;
  register_builtin_agents(agents);
  auto d = agents.create("human_expert")->propose(f.problem);
  std::map<std::int32_t, std::set<DeviceId>> devices_of_layer;
  for (NodeId v = 0; v < f.problem.num_nodes(); ++v) {
    auto layer = f.compiled.layer()[static_cast<std::size_t>(v)];
    if (layer >= 0) devices_of_layer[layer].insert(d.device_of(v));
  }
  ASSERT_EQ(devices_of_layer.size(), 4u);
  for (const auto& [layer, devices] : devices_of_layer) {
    EXPECT_EQ(devices, std::set<DeviceId>{layer}) << "layer " << layer;
  }
  // The softmax follows the last layer.
  for (NodeId v = 0; v < f.problem.num_nodes(); ++v) {
    const auto& name = f.compiled.node_names()[static_cast<std::size_t>(v)];
    if (name.rfind("softmax/", 0) == 0) {
      EXPECT_EQ(d.device_of(v), 3) << name;
    }
  }
}

}  // namespace
}  // namespace gopt::agents
