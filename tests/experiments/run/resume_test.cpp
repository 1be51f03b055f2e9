// What `gopt run --resume --redo` keeps and runs again (experiments/run/resume.h): entries
// naming an agent or one agent on one workload, typos refused by name, results this build
// made under this config kept, stale snapshots removed.
#include "experiments/run/resume.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/results/version.h"
#include "tests/support/expect_error.h"

namespace gopt::experiments {
namespace {

ExperimentConfig two_by_two() {
  ExperimentConfig config;
  config.workloads.resize(2);
  config.workloads[0].name = "rnnlm_2";
  config.workloads[1].name = "gnmt_2";
  config.agents.resize(2);
  config.agents[0].name = "hdp";
  config.agents[1].name = "go_one";
  config.resolved_yaml = "seeds: [1]\n";
  return config;
}

ResultKey key(const std::string& workload, const std::string& agent) {
  return ResultKey{workload, agent, 1};
}

TEST(RedoTest, NamesAnAgentOrOneAgentOnOneWorkload) {
  const Redo redo{{"hdp", "gnmt_2:go_one"}};
  EXPECT_TRUE(redo.names(key("rnnlm_2", "hdp")));
  EXPECT_TRUE(redo.names(key("gnmt_2", "hdp")));
  EXPECT_TRUE(redo.names(key("gnmt_2", "go_one")));
  EXPECT_FALSE(redo.names(key("rnnlm_2", "go_one")));
  EXPECT_FALSE(Redo{}.names(key("rnnlm_2", "hdp")));
}

TEST(RedoTest, KeepsEverythingButWhatItNamesUnlessThisBuildMadeIt) {
  const Redo redo{{"go_one"}};
  const std::vector<ResultKey> existing = {key("rnnlm_2", "hdp"), key("rnnlm_2", "go_one"),
                                           key("gnmt_2", "go_one")};
  EXPECT_EQ(redo.kept(existing, {}), std::vector<ResultKey>{key("rnnlm_2", "hdp")});
  const std::vector<ResultKey> continued = {key("rnnlm_2", "hdp"), key("gnmt_2", "go_one")};
  EXPECT_EQ(redo.kept(existing, {key("gnmt_2", "go_one")}), continued);
  EXPECT_EQ(Redo{}.kept(existing, {}), existing);
}

TEST(RedoTest, ATypoIsAnInputErrorNamingTheConfigAndWhatItHas) {
  const auto config = two_by_two();
  Redo{{"hdp", "gnmt_2:go_one"}}.check(config, "exp.yaml");  // no throw
  auto message = gopt::testing::error_of([&] { Redo{{"hpd"}}.check(config, "exp.yaml"); });
  EXPECT_TRUE(gopt::testing::contains(message, "exp.yaml")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "no agent named 'hpd' (hdp, go_one)")) << message;
  message = gopt::testing::error_of([&] { Redo{{"gnmt_9:hdp"}}.check(config, "exp.yaml"); });
  EXPECT_TRUE(gopt::testing::contains(message, "no workload named 'gnmt_9'")) << message;
}

// A result counts as already redone only when this build, at a clean revision, made it
// under this very config.
TEST(RedoTest, DoneAlreadyNeedsThisRevisionAndThisConfig) {
  const auto config = two_by_two();
  RunResult mine;
  mine.key = key("rnnlm_2", "go_one");
  mine.provenance.git_revision = std::string(git_revision());
  mine.provenance.config_hash = config_hash(config.resolved_yaml);
  RunResult other_config = mine;
  other_config.key = key("gnmt_2", "go_one");
  other_config.provenance.config_hash = config_hash("seeds: [2]\n");
  RunResult other_build = mine;
  other_build.key = key("gnmt_2", "hdp");
  other_build.provenance.git_revision = "000000000000";
  const Redo redo{{"go_one", "hdp"}};
  const auto done = redo.done_already(config, {mine, other_config, other_build});
  const std::string revision(git_revision());
  if (revision == "unknown" || revision.find("-dirty") != std::string::npos) {
    EXPECT_TRUE(done.empty());  // a build of uncommitted code never counts as done
  } else {
    EXPECT_EQ(done, std::set<ResultKey>{mine.key});
  }
  EXPECT_TRUE(Redo{}.done_already(config, {mine}).empty());
}

TEST(RedoTest, RemoveSnapshotsRemovesTheFolderAndIsQuietWhenItIsMissing) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gopt_resume_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "job_1.snapshot") << "x";
  std::ofstream(dir / "job_2.snapshot") << "y";
  remove_snapshots(dir.string());
  EXPECT_FALSE(std::filesystem::exists(dir));
  remove_snapshots(dir.string());  // again: nothing to do, no error
}

}  // namespace
}  // namespace gopt::experiments
