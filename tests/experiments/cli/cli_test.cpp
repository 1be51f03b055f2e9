// The gopt executable end to end: exit codes and messages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/run_command.h"

namespace gopt::experiments {
namespace {

using gopt::testing::run_command;

const std::string kGopt = GOPT_BINARY;
const std::string kExample = std::string(GOPT_SOURCE_DIR) + "/datasets/graphs/mlp_tiny.json";
const std::string kData = GOPT_TEST_DATA_DIR;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(CliTest, HelpAndVersionExitZero) {
  auto help = run_command(kGopt + " --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.out, "graph")) << help.out;
  auto version = run_command(kGopt + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(contains(version.out, "gopt 0.")) << version.out;
  auto sub_help = run_command(kGopt + " graph info --help");
  EXPECT_EQ(sub_help.exit_code, 0);
  EXPECT_TRUE(contains(sub_help.out, "Usage: gopt graph info")) << sub_help.out;
}

TEST(CliTest, UsageErrorsExitTwoWithUsage) {
  for (const char* args : {"", " frobnicate", " graph", " graph info", " --no-such-flag",
                           " graph info a.json --bogus"}) {
    auto r = run_command(kGopt + args);
    EXPECT_EQ(r.exit_code, 2) << "args: '" << args << "' err: " << r.err;
    EXPECT_TRUE(contains(r.err, "Usage") || contains(r.err, "usage")) << r.err;
  }
}

TEST(CliTest, AgentsListsAndInspectNamesABadFile) {
  auto list = run_command(kGopt + " agents");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(contains(list.out, "go_zero_shot")) << list.out;
  // The policy inspection reads GO checkpoints; anything else is an input error naming it.
  auto bad = run_command(kGopt + " agents inspect " + kExample + " --graph " + kExample);
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_TRUE(contains(bad.err, kExample)) << bad.err;
  EXPECT_TRUE(contains(bad.err, "corrupt GO checkpoint or snapshot")) << bad.err;
  auto missing = run_command(kGopt + " agents inspect --graph " + kExample);
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
}

TEST(CliTest, InfoPrintsTheFigures) {
  auto r = run_command(kGopt + " graph info " + kExample);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "nodes:          24")) << r.out;
  EXPECT_TRUE(contains(r.out, "edges:          32")) << r.out;
  EXPECT_TRUE(contains(r.out, "total FLOPs:")) << r.out;
  EXPECT_TRUE(contains(r.out, "parameters:     795 KiB")) << r.out;  // (784*256+256+256*10+10)*4 B
  EXPECT_TRUE(contains(r.out, "longest path:")) << r.out;
  EXPECT_TRUE(contains(r.out, "MatMul")) << r.out;
}

TEST(CliTest, InfoJson) {
  auto r = run_command(kGopt + " graph info --json " + kExample);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\"nodes\": 24")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"param_bytes\": 814120")) << r.out;
}

TEST(CliTest, ValidateAcceptsAGoodFile) {
  auto r = run_command(kGopt + " graph validate " + kExample);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "ok (24 nodes, 32 edges)")) << r.out;
}

TEST(CliTest, ValidateRejectsACycleNamingIt) {
  auto r = run_command(kGopt + " graph validate " + kData + "/graphs/cycle.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "cycle.json")) << r.err;
  EXPECT_TRUE(contains(r.err, "'encode' -> 'decode' -> 'feedback' -> 'encode'")) << r.err;
}

TEST(CliTest, TruncatedAndMissingFilesExitOne) {
  auto truncated = run_command(kGopt + " graph info " + kData + "/graphs/truncated.json");
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_TRUE(contains(truncated.err, "truncated.json")) << truncated.err;
  EXPECT_TRUE(contains(truncated.err, "invalid JSON")) << truncated.err;
  auto missing = run_command(kGopt + " graph validate /no/such/file.json");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "/no/such/file.json: no such file")) << missing.err;
}

TEST(CliTest, AgentsListsEveryBaselineWithItsOptions) {
  auto r = run_command(kGopt + " agents");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"single_device", "round_robin", "random", "human_expert", "metis",
                           "heft", "m_etf", "hdp"}) {
    EXPECT_TRUE(contains(r.out, name)) << name;
  }
  // Each numeric option with its range (checked when a config loads) and its default.
  EXPECT_TRUE(contains(r.out, "learning_rate (float in [0, 10], default 0.01)")) << r.out;
}

TEST(CliTest, SimulateWithAnAgent) {
  auto metis = run_command(kGopt +
                           " simulate --graph transformer_xl_2 --hardware p100x2_pcie"
                           " --agent metis --option imbalance=0.1 --json");
  ASSERT_EQ(metis.exit_code, 0) << metis.err;
  EXPECT_TRUE(contains(metis.out, "\"step_time_s\"")) << metis.out;
  EXPECT_TRUE(contains(metis.out, "\"placement\": \"agent:metis\"")) << metis.out;
  auto hdp = run_command(kGopt + " simulate --graph " + kExample +
                         " --hardware p100x2_pcie --agent hdp"
                         " --steps 3");
  ASSERT_EQ(hdp.exit_code, 0) << hdp.err;
  EXPECT_TRUE(contains(hdp.err, "hdp: step 3/3")) << hdp.err;
  auto unknown = run_command(kGopt + " simulate --graph " + kExample +
                             " --hardware p100x2_pcie --agent metsi");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(contains(unknown.err, "did you mean 'metis'")) << unknown.err;
  auto bad_option = run_command(kGopt + " simulate --graph " + kExample +
                                " --hardware p100x2_pcie --agent hdp --option groups=many");
  EXPECT_EQ(bad_option.exit_code, 1);
  EXPECT_TRUE(contains(bad_option.err, "agents.hdp.groups")) << bad_option.err;
  auto both = run_command(kGopt + " simulate --graph " + kExample +
                          " --hardware p100x2_pcie --agent metis --placement single");
  EXPECT_EQ(both.exit_code, 2);
}

// --schedule critical_path: the expert's transformer_xl_2 stages in critical-path order
// wait on each other less than in the executor's order; the output says which order ran.
TEST(CliTest, SimulateInCriticalPathOrder) {
  const std::string expert = kGopt +
                             " simulate --graph transformer_xl_2 --hardware p100x2_pcie"
                             " --agent human_expert";
  auto recorded = run_command(expert + " --json");
  auto reordered = run_command(expert + " --schedule critical_path --json");
  ASSERT_EQ(recorded.exit_code, 0) << recorded.err;
  ASSERT_EQ(reordered.exit_code, 0) << reordered.err;
  const auto step_time = [](const std::string& json) {
    return nlohmann::json::parse(json).at("step_time_s").get<double>();
  };
  EXPECT_LT(step_time(reordered.out), step_time(recorded.out));
  EXPECT_TRUE(contains(reordered.out, "\"schedule\": \"critical_path\"")) << reordered.out;
  auto text = run_command(expert + " --schedule critical_path");
  EXPECT_TRUE(contains(text.out, "schedule:     critical path")) << text.out;
  auto bad = run_command(expert + " --schedule fastest");
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(CliTest, CompareTable) {
  auto r = run_command(kGopt + " compare --hardware p100x2_pcie --graph transformer_xl_2 --graph " +
                       kExample + " --agent single_device --agent heft");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Padded like `gopt table`: the header's columns as wide as the widest cell.
  EXPECT_TRUE(contains(
      r.out, "| graph            | nodes | lower bound (ms) | single_device (ms) | heft (ms) |"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "| transformer_xl_2 |   374 |")) << r.out;
  EXPECT_TRUE(contains(r.out, "| mlp_tiny         |    24 |")) << r.out;
  // Progress lines say which time is simulated and which is wall time.
  EXPECT_TRUE(contains(r.err, "heft: step time ")) << r.err;
  EXPECT_TRUE(contains(r.err, " ms (simulated), ")) << r.err;
  EXPECT_TRUE(contains(r.err, " s wall")) << r.err;
}

// With no --agent, compare runs every agent that needs neither training nor a checkpoint
// (go_zero_shot needs one and used to fail the whole command).
TEST(CliTest, CompareRunsWithItsDefaults) {
  auto r =
      run_command(kGopt + " compare --hardware p100x2_pcie --graph " + kExample + " --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "single_device (ms)")) << r.out;
  EXPECT_TRUE(contains(r.out, "human_expert (ms)")) << r.out;
  EXPECT_FALSE(contains(r.out, "go_zero_shot")) << r.out;
  EXPECT_FALSE(contains(r.out, "go_one")) << r.out;
}

// Typos get the closest valid word and one usage line, not the whole help.
TEST(CliTest, TyposGetASuggestionAndOneUsageLine) {
  struct Case {
    std::string args, said;
    int exit_code;
  };
  for (const Case& c : {
           Case{" simulat", "unknown command 'simulat' (did you mean 'simulate'?)", 2},
           Case{" graph validat a.json", "unknown command 'validat' (did you mean 'validate'?)", 2},
           Case{" simulate --grpah x --hardware p100x2_pcie",
                "unknown option '--grpah' (did you mean '--graph'?)", 2},
           Case{" compare --steps 0", "--steps: expected a number > 0, found 0", 2},
           Case{" simulate --graph rnnlm2 --hardware p100x2_pcie", "(did you mean 'rnnlm_2'?)", 1},
           Case{" simulate --graph rnnlm_2 --hardware p100x2_pcei", "(did you mean 'p100x2_pcie'?)",
                1},
       }) {
    SCOPED_TRACE(c.args);
    auto r = run_command(kGopt + c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_TRUE(contains(r.err, c.said)) << r.err;
    EXPECT_FALSE(contains(r.err, "Options:")) << r.err;  // no whole help
    if (c.exit_code == 2) {
      EXPECT_TRUE(contains(r.err, "--help'")) << r.err;
    }
  }
}

}  // namespace
}  // namespace gopt::experiments
