// The plan of a run (experiments/run/plan.h): jobs from the registry's declarations, the
// artifacts they pass, the three errors a plan can have, and `gopt run --dry-run`.
#include "experiments/run/plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "agents/registry.h"
#include "core/errors.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

namespace gopt::experiments {
namespace {

namespace fs = std::filesystem;

const std::string kGopt = GOPT_BINARY;

WorkloadConfig workload(const std::string& name, bool held_out = false) {
  WorkloadConfig w;
  w.name = w.graph = name;
  w.held_out = held_out;
  return w;
}

AgentConfig agent(const std::string& name, std::map<std::string, std::string> options = {}) {
  AgentConfig a;
  a.name = a.type = name;
  a.options = std::move(options);
  return a;
}

ExperimentConfig config_of(std::vector<WorkloadConfig> workloads, std::vector<AgentConfig> agents,
                           std::vector<std::uint64_t> seeds = {1}) {
  ExperimentConfig c;
  c.name = "t";
  c.source = "t.yaml";
  c.hardware = "p100x2_pcie";
  c.output = "results/t.h5";
  c.seeds = std::move(seeds);
  c.workloads = std::move(workloads);
  c.agents = std::move(agents);
  return c;
}

agents::AgentRegistry builtin() {
  agents::AgentRegistry r;
  agents::register_builtin_agents(r);
  return r;
}

// `what` happens inside `f`: an InputError whose message contains every part of `parts`.
template <typename F>
void expect_input_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const core::InputError& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(PlanTest, TransferAgentsBecomeAProducerAndItsConsumers) {
  const auto registry = builtin();
  const auto c =
      config_of({workload("mlp_tiny"), workload("transformer_xl_2"), workload("wavenet_2", true)},
                {agent("single_device"), agent("go_pretrain"), agent("go_zero_shot")}, {1, 2});
  const Plan plan = build_plan(c, registry);
  // Two pretraining jobs (one per seed, two rows each) first, then config order.
  ASSERT_EQ(plan.jobs.size(), 2u + 6u + 2u);
  EXPECT_EQ(plan.total_rows, 4 + 6 + 2);
  EXPECT_TRUE(plan.jobs[0].training_set);
  EXPECT_EQ(plan.jobs[0].label(), "go_pretrain (seed 1)");
  EXPECT_EQ(plan.jobs[0].rows.size(), 2u);
  EXPECT_EQ(plan.jobs[0].options.at("checkpoint"), "results/t.go_pretrain.seed1.ckpt");
  ASSERT_EQ(plan.artifacts.size(), 2u);
  EXPECT_EQ(plan.artifacts[0].kind, "pretrained_policy");
  EXPECT_EQ(plan.artifacts[0].producer, 0);
  // Zero-shot runs on the held-out graph only and reads its seed's policy.
  const auto& zero_shot = plan.jobs.back();
  EXPECT_EQ(zero_shot.label(), "wavenet_2 / go_zero_shot / seed 2");
  EXPECT_EQ(zero_shot.waits_for, 1);
  EXPECT_EQ(zero_shot.options.at("checkpoint"), "results/t.go_pretrain.seed2.ckpt");
  EXPECT_TRUE(zero_shot.transfers);
  EXPECT_EQ(plan.jobs[2].waits_for, -1);
}

TEST(PlanTest, AResumedPlanReadsTheArtifactsOfFinishedProducers) {
  const auto registry = builtin();
  const auto c = config_of({workload("transformer_xl_2"), workload("wavenet_2", true)},
                           {agent("go_pretrain"), agent("go_finetune")});
  const Plan plan =
      without_done(build_plan(c, registry), {ResultKey{"transformer_xl_2", "go_pretrain", 1}});
  ASSERT_EQ(plan.jobs.size(), 1u);
  EXPECT_EQ(plan.done_rows, 1);
  EXPECT_EQ(plan.jobs[0].waits_for, -1);
  EXPECT_EQ(plan.artifacts[0].producer, -1);
  EXPECT_EQ(plan.jobs[0].options.at("checkpoint"), "results/t.go_pretrain.seed1.ckpt");
}

TEST(PlanTest, AConsumerWithoutAProducerIsAnError) {
  const auto registry = builtin();
  const auto c = config_of({workload("transformer_xl_2"), workload("wavenet_2", true)},
                           {agent("single_device"), agent("go_zero_shot")});
  expect_input_error([&] { (void)build_plan(c, registry); },
                     {"t.yaml", "agents.go_zero_shot", "reads a pretrained_policy",
                      "no agent of this config produces one", "go_pretrain", "'checkpoint'"});
  // A consumer naming an existing file needs no producer.
  const auto named = config_of({workload("wavenet_2", true)},
                               {agent("go_zero_shot", {{"checkpoint", "given.ckpt"}})});
  const Plan plan = build_plan(named, registry);
  ASSERT_EQ(plan.artifacts.size(), 1u);
  EXPECT_EQ(plan.artifacts[0].producer, -1);
}

TEST(PlanTest, TwoProducersOfOneArtifactAreAnError) {
  const auto registry = builtin();
  // One file named for two seeds: each seed's pretraining would overwrite the other's.
  const auto c = config_of({workload("transformer_xl_2"), workload("wavenet_2", true)},
                           {agent("go_pretrain", {{"checkpoint", "one.ckpt"}})}, {1, 2});
  expect_input_error([&] { (void)build_plan(c, registry); },
                     {"t.yaml", "agents.go_pretrain.options.checkpoint", "two jobs write",
                      "'one.ckpt'", "go_pretrain (seed 1) and go_pretrain (seed 2)"});
}

// Two agents that each read what the other writes: no order runs them.
TEST(PlanTest, ACycleOfArtifactsIsAnError) {
  agents::AgentRegistry registry;
  const std::vector<agents::OptionSpec> files = {
      {"in", agents::OptionType::kString, "", "read"},
      {"out", agents::OptionType::kString, "", "written"}};
  for (const std::string name : {"a", "b"}) {
    registry.add({name, "test", false, files,
                  [](const agents::AgentOptions&) { return std::unique_ptr<agents::Agent>(); }});
  }
  registry.declare_artifacts(
      "a", agents::AgentArtifacts().consume({"x", "in", ".x"}).produce({"y", "out", ".y"}));
  registry.declare_artifacts(
      "b", agents::AgentArtifacts().consume({"y", "in", ".y"}).produce({"x", "out", ".x"}));
  const auto c = config_of({workload("w")}, {agent("a"), agent("b")});
  expect_input_error([&] { (void)build_plan(c, registry); },
                     {"t.yaml", "jobs wait for each other's artifacts",
                      "w / a / seed 1 -> w / b / seed 1 -> w / a / seed 1"});
}

TEST(PlanTest, AnArtifactOptionMustBeAStringOptionOfTheAgent) {
  agents::AgentRegistry registry;
  registry.add({"a", "test", false, {}, [](const agents::AgentOptions&) {
                  return std::unique_ptr<agents::Agent>();
                }});
  EXPECT_THROW(registry.declare_artifacts("a", agents::AgentArtifacts().produce({"x", "out", ""})),
               std::logic_error);
  EXPECT_THROW(registry.declare_artifacts("missing", {}), std::logic_error);
}

TEST(PlanTest, PrintingListsTheJobsAndWhatTheyPass) {
  const auto registry = builtin();
  const auto c = config_of({workload("transformer_xl_2"), workload("wavenet_2", true)},
                           {agent("go_pretrain"), agent("go_zero_shot")});
  std::ostringstream out;
  print_plan(build_plan(c, registry), {{"transformer_xl_2", 1000}, {"wavenet_2", 2000}}, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("2 jobs, 2 result rows, 1 artifact;"), std::string::npos) << text;
  EXPECT_NE(text.find("  1. go_pretrain (seed 1): trains on transformer_xl_2; 1 row; budget 100 "
                      "updates; about "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("writes pretrained_policy results/t.go_pretrain.seed1.ckpt"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  2. wavenet_2 / go_zero_shot / seed 1; about "), std::string::npos) << text;
  EXPECT_NE(text.find("reads pretrained_policy results/t.go_pretrain.seed1.ckpt (after job 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("estimated time: "), std::string::npos) << text;
}

// `gopt run --dry-run` prints the plan, writes no results file and exits 0; a plan that
// does not hold fails before anything runs.
TEST(PlanTest, DryRunPrintsThePlanAndWritesNothing) {
  const fs::path dir = gopt::testing::make_temp_dir("gopt_plan_dry_run");
  const auto config = dir / "dry.yaml";
  std::ofstream(config) << "name: dry\nhardware: p100x2_pcie\nseeds: [1]\nworkloads:\n"
                           "  - transformer_xl_2\n"
                           "  - {graph: wavenet_2, held_out: true}\n"
                           "agents:\n"
                           "  - single_device\n"
                           "  - {name: go_pretrain, budget: {steps: 3}}\n"
                           "  - go_zero_shot\n";
  const auto out = dir / "dry.h5";
  auto r = gopt::testing::run_command(kGopt + " run " + config.string() + " --dry-run --out " +
                                      out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("plan of dry ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  1. go_pretrain (seed 1): trains on transformer_xl_2"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  2. transformer_xl_2 / single_device / seed 1"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  4. wavenet_2 / go_zero_shot / seed 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dry run: nothing was run and no file was written"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir / "dry.snapshots"));
  EXPECT_FALSE(fs::exists(dir / "dry.go_pretrain.seed1.ckpt"));

  std::ofstream(config, std::ios::app) << "  - {name: other, agent: go_pretrain, options: "
                                          "{checkpoint: "
                                       << (dir / "dry.go_pretrain.seed1.ckpt").string() << "}}\n";
  r = gopt::testing::run_command(kGopt + " run " + config.string() + " --dry-run --out " +
                                 out.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("two jobs write the pretrained_policy"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace gopt::experiments
