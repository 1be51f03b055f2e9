// The GO checkpoint's versions (agents/go/go_checkpoint.h): a version-1 file written by gopt
// before the version bump still loads, one from before the multi-task and unit-decision
// fields migrates to what its policy was, and the current version requires every field.
//
// tests/data/go/checkpoint_v1.ckpt was written by `gopt run` at version 1 (go_pretrain,
// 2 updates on mlp_tiny for p100x2_pcie, options hidden 8, kind_embedding 4, sage_layers
// 1, attention_layers 1, heads 1, segment_length 4, max_devices 2).
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>

#include "agents/go/go_checkpoint.h"
#include "agents/go/go_inspect.h"
#include "agents/go/go_ppo.h"
#include "agents/registry.h"
#include "core/errors.h"
#include "tests/agents/agents_test_util.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"

namespace gopt::agents::go {
namespace {

const std::string kVersion1 = std::string(GOPT_TEST_DATA_DIR) + "/go/checkpoint_v1.ckpt";

// The policy options text of the fixture without the fields a version-1 file may lack.
std::string text_without_later_fields(const GoPolicyOptions& options, bool features) {
  const std::string all = policy_options_text(options);
  std::string text;
  for (const char* key :
       {"hidden=", "kind_embedding=", "sage_layers=", "attention_layers=", "heads=",
        "segment_length=", "max_devices=", "refine_passes=", "modulation=", "features="}) {
    if (std::string(key) == "features=" && !features) continue;
    const auto at = all.find(key);
    text += (text.empty() ? "" : ";") + all.substr(at, all.find(';', at) - at);
  }
  return text;
}

class GoCheckpointVersionTest : public ::testing::Test {
 protected:
  // A checkpoint of `policy` tagged with `version` and recording `options_text`, as a
  // writer of that version did.
  std::string write(const std::string& name, std::int64_t version, const std::string& options_text,
                    const GoPolicy& policy) const {
    const std::string path = dir_ + "/" + name;
    torch::serialize::OutputArchive archive;
    archive.write("format", c10::IValue(std::string(kCheckpointFormat)));
    archive.write("version", c10::IValue(version));
    archive.write("options", c10::IValue(options_text));
    archive.write("steps", c10::IValue(std::int64_t{7}));
    torch::serialize::OutputArchive policy_archive;
    policy->save(policy_archive);
    archive.write("policy", policy_archive);
    torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(1e-3));
    torch::serialize::OutputArchive optimizer_archive;
    adam.save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    archive.save_to(path);
    return path;
  }

  const std::string dir_ =
      gopt::testing::make_temp_dir(std::string("gopt_go_version_") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
};

TEST_F(GoCheckpointVersionTest, AVersion1FileWrittenBeforeTheBumpLoads) {
  const TrainedPolicy trained = load_checkpoint(kVersion1, 1e-3);
  EXPECT_EQ(trained.updates, 2);
  const auto& o = trained.policy->options;
  EXPECT_EQ(o.hidden, 8);
  EXPECT_EQ(o.segment_length, 4);
  EXPECT_EQ(o.max_devices, 2);
  EXPECT_TRUE(o.place);
  EXPECT_FALSE(o.unit_decisions);
  for (const auto& group : trained.optimizer->param_groups()) {
    EXPECT_EQ(static_cast<const torch::optim::AdamOptions&>(group.options()).lr(), 1e-3);
  }

  // Through the agent that reads it: go_zero_shot places a graph on two devices with it.
  testing::ProblemFixture f(testing::parallel_chains(2, 3), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  const auto decision = r.create("go_zero_shot", {{"checkpoint", kVersion1}})->propose(f.problem);
  ASSERT_TRUE(decision.placement.has_value());
  EXPECT_EQ(static_cast<std::int64_t>(decision.placement->size()), f.compiled.num_nodes());
  GoPolicy policy = trained.policy;
  EXPECT_EQ(decision.placement,
            greedy_decision(policy, make_graph_tensors(f.compiled), f.problem).placement);
  EXPECT_EQ(placement_spread(kVersion1, f.compiled, 2).updates, 2);
}

TEST_F(GoCheckpointVersionTest, AVersion1FileWithoutTheLaterFieldsMigrates) {
  GoPolicy fixture = load_checkpoint(kVersion1, 1e-3).policy;
  const std::string older =
      write("older.ckpt", 1, text_without_later_fields(fixture->options, true), fixture);
  GoPolicy migrated = load_checkpoint(older, 1e-3).policy;
  EXPECT_EQ(policy_options_text(migrated->options), policy_options_text(fixture->options));
  testing::ProblemFixture f(testing::parallel_chains(2, 3), "p100x2_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  EXPECT_EQ(greedy_decision(migrated, tensors, f.problem).placement,
            greedy_decision(fixture, tensors, f.problem).placement);

  // Older still: no feature count, a policy of 20 features per op.
  const std::string oldest =
      write("oldest.ckpt", 1, text_without_later_fields(fixture->options, false), fixture);
  const auto message = gopt::testing::error_of([&] { (void)load_checkpoint(oldest, 1e-3); });
  EXPECT_TRUE(gopt::testing::contains(message, "reads 20 features")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "pretrain it again")) << message;
}

TEST_F(GoCheckpointVersionTest, Version2RequiresEveryFieldAndLaterVersionsAreRefused) {
  GoPolicy fixture = load_checkpoint(kVersion1, 1e-3).policy;
  const std::string missing =
      write("missing.ckpt", 2, text_without_later_fields(fixture->options, true), fixture);
  auto message = gopt::testing::error_of([&] { (void)load_checkpoint(missing, 1e-3); });
  EXPECT_TRUE(gopt::testing::contains(message, missing)) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "does not record 'fuse'")) << message;

  const std::string later =
      write("later.ckpt", kCheckpointVersion + 1, policy_options_text(fixture->options), fixture);
  message = gopt::testing::error_of([&] { (void)load_checkpoint(later, 1e-3); });
  EXPECT_TRUE(gopt::testing::contains(message, later)) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "version " + std::to_string(kCheckpointVersion + 1) +
                                                   " is not one this build reads"))
      << message;
}

TEST_F(GoCheckpointVersionTest, CheckpointsAreWrittenAtTheCurrentVersion) {
  TrainedPolicy trained = load_checkpoint(kVersion1, 1e-3);
  const std::string path = dir_ + "/current.ckpt";
  save_checkpoint(path, trained);
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  c10::IValue version;
  archive.read("version", version);
  EXPECT_EQ(version.toInt(), kCheckpointVersion);
  const TrainedPolicy again = load_checkpoint(path, 1e-3);
  EXPECT_EQ(again.updates, 2);
  EXPECT_EQ(policy_options_text(again.policy->options),
            policy_options_text(trained.policy->options));
}

// A snapshot archive of `version` for one graph of 7 ops, with the model selection's state
// when `selection` (version 1 may lack it); policy and optimizer are stand-ins (read_snapshot
// does not apply them).
std::string write_snapshot_file(const std::string& path, std::int64_t version, bool selection,
                                const torch::Tensor& improvements = {}) {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string(kSnapshotFormat)));
  archive.write("version", c10::IValue(version));
  archive.write("identity", c10::IValue(std::string("job")));
  archive.write("options", c10::IValue(std::string("hidden=8")));
  archive.write("steps", c10::IValue(std::int64_t{3}));
  archive.write("trained_steps", c10::IValue(std::int64_t{5}));
  if (selection) {
    archive.write("best_validation", c10::IValue(0.5));
    archive.write("best_validation_steps", c10::IValue(std::int64_t{2}));
  }
  archive.write("rng", c10::IValue(std::string("1 2 3")));
  archive.write("generator", torch::zeros({4}, torch::kByte));
  for (const char* part : {"policy", "optimizer"}) {
    torch::serialize::OutputArchive stand_in;
    stand_in.write("x", torch::zeros({1}));
    archive.write(part, stand_in);
  }
  archive.write("tasks", c10::IValue(std::int64_t{1}));
  archive.write("task0.nodes", c10::IValue(std::int64_t{7}));
  archive.write("task0.samples", c10::IValue(std::int64_t{12}));
  archive.write("task0.best_s", c10::IValue(1.5));
  archive.write("task0.reference_s", c10::IValue(2.0));
  if (improvements.defined()) archive.write("task0.improvements", improvements);
  archive.write("curve", torch::tensor({1.0, 5.0, 1.5, 1.75, 0.25}, torch::kDouble).view({1, 5}));
  archive.save_to(path);
  return path;
}

TEST_F(GoCheckpointVersionTest, Version1SnapshotsWithoutModelSelectionMigrate) {
  const auto read = [](const std::string& path) {
    return read_snapshot(path, "job", "hidden=8", {7});
  };
  const auto v1 = read(write_snapshot_file(dir_ + "/v1.pt", 1, false));
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(v1->snapshot.steps, 3);
  EXPECT_EQ(v1->snapshot.updates, 5);
  EXPECT_EQ(v1->snapshot.best_validation, std::numeric_limits<double>::infinity());
  EXPECT_EQ(v1->snapshot.best_validation_steps, 0);
  ASSERT_EQ(v1->snapshot.tasks.size(), 1u);
  EXPECT_EQ(v1->snapshot.tasks[0].samples, 12);
  // Written before improvements were kept: the best counts as found at the last sample.
  EXPECT_EQ(v1->snapshot.tasks[0].improvements, (std::vector<BestImprovement>{{12, 1.5}}));
  ASSERT_EQ(v1->snapshot.curve.size(), 1u);
  EXPECT_EQ(v1->snapshot.curve[0].mean_step_time_s, 1.75);

  const auto v1_checked = read(write_snapshot_file(dir_ + "/v1_checked.pt", 1, true));
  ASSERT_TRUE(v1_checked.has_value());
  EXPECT_EQ(v1_checked->snapshot.best_validation, 0.5);
  EXPECT_EQ(v1_checked->snapshot.best_validation_steps, 2);
  EXPECT_TRUE(read(write_snapshot_file(dir_ + "/v2.pt", 2, true)).has_value());
  // Version 2 requires the model selection's state: without it the file is not used.
  EXPECT_FALSE(read(write_snapshot_file(dir_ + "/v2_missing.pt", 2, false)).has_value());

  // The samples that improved the best, as written since 2026-11-29; a table of another
  // shape does not read as a snapshot.
  const auto kept =
      read(write_snapshot_file(dir_ + "/kept.pt", 2, true,
                               torch::tensor({3.0, 2.5, 12.0, 1.5}, torch::kDouble).view({2, 2})));
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->snapshot.tasks[0].improvements,
            (std::vector<BestImprovement>{{3, 2.5}, {12, 1.5}}));
  EXPECT_FALSE(read(write_snapshot_file(dir_ + "/bad.pt", 2, true,
                                        torch::tensor({3.0, 12.0}, torch::kDouble).view({2, 1})))
                   .has_value());
  EXPECT_FALSE(read(write_snapshot_file(dir_ + "/v3.pt", kSnapshotVersion + 1, true)).has_value());
  // Another job's, or other graphs': not used either.
  EXPECT_FALSE(read_snapshot(dir_ + "/v2.pt", "other job", "hidden=8", {7}).has_value());
  EXPECT_FALSE(read_snapshot(dir_ + "/v2.pt", "job", "hidden=8", {8}).has_value());
}

TEST(GoCheckpointMigrationTest, Version1FieldsFillOnlyWhatIsMissing) {
  std::map<std::string, std::int64_t> fields = {{"hidden", 8}, {"schedule", 1}};
  migrate_policy_fields(fields);
  EXPECT_EQ(fields["hidden"], 8);
  EXPECT_EQ(fields["schedule"], 1);  // recorded: kept
  EXPECT_EQ(fields["place"], 1);
  EXPECT_EQ(fields["fuse"], 0);
  EXPECT_EQ(fields["unit_decisions"], 0);
  EXPECT_EQ(fields["features"], 20);
}

// A recorded option that is not a whole number is an error naming the file and the option,
// never read as its leading digits.
TEST(GoCheckpointMigrationTest, UnreadableOptionsAreErrorsNamingTheFile) {
  const std::string good = policy_options_text(GoPolicyOptions());
  EXPECT_EQ(policy_options_text(parse_policy_options(good, kCheckpointVersion, "a.ckpt")), good);
  for (const std::string bad :
       {"hidden=64x", "hidden=", "hidden=6.5", "hidden=99999999999999999999"}) {
    std::string text = good;
    const auto at = text.find("hidden=");
    text.replace(at, text.find(';', at) - at, bad);
    const auto message = gopt::testing::error_of(
        [&] { (void)parse_policy_options(text, kCheckpointVersion, "a.ckpt"); });
    EXPECT_TRUE(gopt::testing::contains(message, "a.ckpt")) << message;
    EXPECT_TRUE(gopt::testing::contains(message, "'" + bad + "'")) << message;
  }
}

}  // namespace
}  // namespace gopt::agents::go
