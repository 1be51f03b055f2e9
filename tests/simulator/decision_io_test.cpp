// Decision files: arrays or maps by op name, device names, validation errors.
#include "simulator/decision_io.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/graph_io.h"
#include "hardware/profile.h"

namespace gopt::simulator {
namespace {

const std::string kDecisions = std::string(GOPT_TEST_DATA_DIR) + "/decisions/";

struct Fixture {
  core::CompiledGraph graph = core::CompiledGraph::compile(
      core::read_graph_file(std::string(GOPT_SOURCE_DIR) + "/datasets/graphs/mlp_tiny.json"));
  hardware::Cluster cluster = hardware::load_profile("p100x2_pcie");
};

std::string error_of(const std::string& file) {
  Fixture f;
  try {
    (void)read_decision_file(kDecisions + file, f.graph, f.cluster);
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DecisionIoTest, ReadsMapsByNameWithDeviceNames) {
  Fixture f;
  auto d = read_decision_file(kDecisions + "mlp_tiny_by_name.json", f.graph, f.cluster);
  ASSERT_TRUE(d.placement && d.priority && d.fusion);
  const auto& names = f.graph.node_names();
  auto id = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  EXPECT_EQ((*d.placement)[id("dense1/MatMul")], 1);
  EXPECT_EQ((*d.placement)[id("loss/xent")], 1);
  EXPECT_EQ((*d.placement)[id("dense0/MatMul")], 0);
  EXPECT_EQ((*d.priority)[id("grad/dense1/MatMul_input")], 10);
  EXPECT_EQ((*d.fusion)[id("dense0/Relu")], 2);
}

TEST(DecisionIoTest, RoundTripsArraysAndNames) {
  Fixture f;
  core::Decision d;
  d.placement = round_robin_placement(f.graph, 2);
  d.fusion = std::vector<std::int32_t>(static_cast<std::size_t>(f.graph.num_nodes()), 3);
  for (bool by_name : {false, true}) {
    auto back =
        parse_decision_json(to_decision_json(d, f.graph, by_name), "mem", f.graph, f.cluster);
    EXPECT_EQ(back.placement, d.placement);
    EXPECT_EQ(back.fusion, d.fusion);
    EXPECT_FALSE(back.priority.has_value());
  }
}

TEST(DecisionIoTest, BadFilesAreClearErrors) {
  auto wrong_length = error_of("mlp_tiny_wrong_length.json");
  EXPECT_NE(wrong_length.find("mlp_tiny_wrong_length.json: placement"), std::string::npos)
      << wrong_length;
  EXPECT_NE(wrong_length.find("(24), found 23"), std::string::npos) << wrong_length;
  auto bad_device = error_of("mlp_tiny_bad_device.json");
  EXPECT_NE(bad_device.find("placement[4]"), std::string::npos) << bad_device;
  EXPECT_NE(
      bad_device.find("op 4 ('dense0/MatMul') is placed on device 7, expected a device in [0, 2)"),
      std::string::npos)
      << bad_device;
  auto unknown = error_of("mlp_tiny_unknown_op.json");
  EXPECT_NE(unknown.find("no op named 'no/such/op'"), std::string::npos) << unknown;
  Fixture f;
  EXPECT_THROW((void)parse_decision_json("{\"placement\": [\"gpu9\"]}", "x", f.graph, f.cluster),
               core::InputError);
  EXPECT_THROW((void)parse_decision_json("{\"placment\": []}", "x", f.graph, f.cluster),
               core::InputError);
  EXPECT_THROW((void)parse_decision_json("{", "x", f.graph, f.cluster), core::InputError);
}

}  // namespace
}  // namespace gopt::simulator
