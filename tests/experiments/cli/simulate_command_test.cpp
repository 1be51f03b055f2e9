// `gopt simulate` end to end: text and JSON output, trace file, decision files, errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/graph_io.h"
#include "tests/support/run_command.h"

namespace gopt::simulator {
namespace {

using gopt::testing::run_command;

const std::string kGopt = GOPT_BINARY;
const std::string kGraph = std::string(GOPT_SOURCE_DIR) + "/datasets/graphs/mlp_tiny.json";
const std::string kDecisions = std::string(GOPT_TEST_DATA_DIR) + "/decisions/";

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string simulate(const std::string& args) {
  return kGopt + " simulate --graph " + kGraph + " " + args;
}

TEST(SimulateCliTest, TextOutput) {
  auto r = run_command(simulate("--hardware p100x2_pcie --placement round_robin"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* field : {"step time:", "lower bounds: critical path", "OOM:          no",
                            "bytes moved:", "gpu0", "gpu1", "peak memory"}) {
    EXPECT_TRUE(contains(r.out, field)) << field << "\n" << r.out;
  }
}

TEST(SimulateCliTest, JsonOutputAndTrace) {
  auto trace = std::filesystem::temp_directory_path() / "gopt_simulate_cli_trace.json";
  auto r = run_command(
      simulate("--hardware p100x2_pcie --placement round_robin --json --trace " + trace.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"step_time_s", "oom", "lower_bound_critical_path_s", "lower_bound_work_s",
                          "bytes_moved", "devices"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_TRUE(j["devices"][0].contains("busy_s"));
  EXPECT_TRUE(j["devices"][0].contains("peak_memory_bytes"));
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_GE(j["step_time_s"].get<double>(), j["lower_bound_critical_path_s"].get<double>());
  EXPECT_GT(j["bytes_moved"].get<long long>(), 0);
  EXPECT_FALSE(j["oom"].get<bool>());

  auto events = nlohmann::json::parse(core::read_text_file(trace));
  EXPECT_GT(events["traceEvents"].size(), 24u);
  std::filesystem::remove(trace);

  auto single = nlohmann::json::parse(run_command(simulate("--hardware p100x2_pcie --json")).out);
  EXPECT_EQ(single["bytes_moved"], 0);
  EXPECT_EQ(single["devices"][1]["busy_s"], 0.0);
}

TEST(SimulateCliTest, DecisionFile) {
  auto r = run_command(simulate("--hardware p100x2_pcie --json --placement " + kDecisions +
                                "mlp_tiny_by_name.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_LT(j["num_kernels"].get<int>(), 24);  // the fused dense0 ops
  EXPECT_GT(j["devices"][1]["busy_s"].get<double>(), 0);
}

TEST(SimulateCliTest, BadInputsExitOneNamingTheFile) {
  auto wrong = run_command(
      simulate("--hardware p100x2_pcie --placement " + kDecisions + "mlp_tiny_wrong_length.json"));
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_TRUE(contains(wrong.err, "mlp_tiny_wrong_length.json")) << wrong.err;
  EXPECT_TRUE(contains(wrong.err, "expected one entry per op")) << wrong.err;

  auto device = run_command(
      simulate("--hardware p100x2_pcie --placement " + kDecisions + "mlp_tiny_bad_device.json"));
  EXPECT_EQ(device.exit_code, 1);
  EXPECT_TRUE(contains(device.err, "mlp_tiny_bad_device.json")) << device.err;
  EXPECT_TRUE(contains(device.err, "device 7")) << device.err;

  auto profile = run_command(simulate("--hardware p100x5_pcie"));
  EXPECT_EQ(profile.exit_code, 1);
  EXPECT_TRUE(contains(profile.err, "unknown hardware profile 'p100x5_pcie'")) << profile.err;

  auto missing = run_command(kGopt + " simulate --graph " + kGraph);
  EXPECT_EQ(missing.exit_code, 2);
}

}  // namespace
// --result: the decision a `gopt run` result holds, simulated again to the same step time;
// a missing result or a malformed spec is an error naming it.
TEST(SimulateCliTest, ADecisionFromAResultsFile) {
  const std::string fixture = std::string(GOPT_TEST_DATA_DIR) + "/results/fixture.h5";
  auto r = run_command(
      simulate("--hardware p100x2_pcie --json --result " + fixture + ":mlp_tiny:hdp:1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["step_time_s"].get<double>(), 0.00012502385083201128);  // as stored
  auto missing =
      run_command(simulate("--hardware p100x2_pcie --result " + fixture + ":mlp_tiny:hdp:7"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "no complete result 'mlp_tiny / hdp / seed 7'")) << missing.err;
  auto malformed = run_command(simulate("--hardware p100x2_pcie --result " + fixture));
  EXPECT_EQ(malformed.exit_code, 1);
  EXPECT_TRUE(contains(malformed.err, "expected RESULTS.h5:WORKLOAD:AGENT:SEED")) << malformed.err;
  auto both = run_command(simulate("--hardware p100x2_pcie --placement round_robin --result " +
                                   fixture + ":mlp_tiny:hdp:1"));
  EXPECT_NE(both.exit_code, 0);
}

}  // namespace gopt::simulator
