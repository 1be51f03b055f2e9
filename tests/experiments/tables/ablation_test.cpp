// `gopt ablation`: an agent with a change against one without it, over the seeds both
// results files have, with the options that differ and a summary that could be wrong.
#include "experiments/tables/ablation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "agents/registry.h"
#include "experiments/results/hdf5_sink.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

namespace gopt::experiments {
namespace {

const std::string kGopt = GOPT_BINARY;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Row {
  const char* workload;
  std::uint64_t seed;
  double step_s;
  bool oom;
};

// A results file with `agent`'s rows, run with `samples_per_step`.
void write_file(const std::filesystem::path& path, const std::string& agent,
                const std::string& samples_per_step, const std::vector<Row>& rows) {
  Hdf5Sink sink(path);
  RunMetadata m;
  m.experiment = "ablation_fixture";
  m.provenance.git_revision = "abc1234";
  sink.begin(m);
  for (const auto& row : rows) {
    RunResult r;
    r.key = {row.workload, agent, row.seed};
    r.agent_type = "go_one";
    r.best_step_time_s = row.step_s;
    r.oom = row.oom;
    r.samples = samples_per_step == "64" ? 13001 : 3401;
    r.resolved_options = {{"samples_per_step", samples_per_step}, {"unit_phase", "100"}};
    if (samples_per_step == "64") {  // newer options: one set, one at its default
      r.resolved_options["granularity"] = "best";
      r.resolved_options["device_balance"] = "0";
    }
    r.provenance.git_revision = "abc1234";
    sink.write(r);
  }
}

TEST(AblationTest, ComparesCommonSeedsPerWorkloadAndSaysWhatDiffers) {
  const std::filesystem::path dir = gopt::testing::make_temp_dir("gopt_ablation");
  const auto with = dir / "with.h5";
  const auto without = dir / "without.h5";
  // Seed 1 only in `with`, seed 3 only in `without` for a: only seed 2 counts there;
  // e has seeds 2 and 3 on both sides.
  write_file(with, "go", "64",
             {{"a", 1, 9.0, false},
              {"a", 2, 0.080, false},
              {"b", 2, 0.300, false},
              {"c", 2, 0.100, false},
              {"d", 2, 0.050, true},
              {"e", 2, 0.090, false},
              {"e", 3, 0.120, false},
              {"only_with", 2, 1.0, false}});
  write_file(without, "go16", "16",
             {{"a", 2, 0.100, false},
              {"a", 3, 7.0, false},
              {"b", 2, 0.200, false},
              {"c", 2, 0.1002, false},
              {"d", 2, 0.060, false},
              {"e", 2, 0.100, false},
              {"e", 3, 0.100, false}});
  const ResultsFile a = read_results_file(with);
  const ResultsFile b = read_results_file(without);

  const auto rows = ablation_rows({&a, "go"}, {&b, "go16"});
  ASSERT_EQ(rows.size(), 5u);  // a to e in `with`'s order; only_with has no partner
  EXPECT_EQ(rows[0].workload, "a");
  EXPECT_EQ(rows[0].seeds, std::vector<std::uint64_t>{2});
  EXPECT_DOUBLE_EQ(rows[0].with_s, 0.080);
  EXPECT_DOUBLE_EQ(rows[0].without_s, 0.100);
  EXPECT_DOUBLE_EQ(rows[0].with_samples, 13001);
  EXPECT_TRUE(rows[3].oom);

  const std::string page = render_ablation({&a, "go"}, {&b, "go16"}, "gopt ablation x y");
  EXPECT_TRUE(contains(page, "| a | 2 | 100.0 | 80.0 | -20.0% | -20.0% | 3401 | 13001 |")) << page;
  // The mean is 5% slower, seed 2 10% faster and seed 3 20% slower.
  EXPECT_EQ(rows[4].with_by_seed_s, (std::vector<double>{0.090, 0.120}));
  EXPECT_TRUE(contains(page, "| e | 2, 3 | 100.0 | 105.0 | +5.0% | -10.0%, +20.0% |")) << page;
  EXPECT_TRUE(contains(page, "| b | 2 | 200.0 | 300.0 | +50.0% |")) << page;
  EXPECT_TRUE(contains(page, "| d | 2 | 60.0 | 50.0 | OOM | OOM |")) << page;
  EXPECT_TRUE(contains(page,
                       "| options that differ | device_balance: 0, granularity: best, "
                       "samples_per_step: 64 | device_balance: (not recorded), granularity: (not "
                       "recorded), samples_per_step: 16 |"))
      << page;
  // With the registry, an option one side records at its default and the other does not
  // record is not a difference; it gets a row of its own. One without a default of the
  // agent's (go_one has no granularity) still differs.
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
  const std::string known = render_ablation({&a, "go"}, {&b, "go16"}, "x", &registry);
  EXPECT_TRUE(contains(known,
                       "| options that differ | granularity: best, samples_per_step: 64 | "
                       "granularity: (not recorded), samples_per_step: 16 |"))
      << known;
  EXPECT_TRUE(contains(known,
                       "| options only one side records (they came after the other's run), at "
                       "their defaults | device_balance: 0 | device_balance: (not recorded) |"))
      << known;
  EXPECT_FALSE(contains(page, "at their defaults")) << page;  // without the registry
  // Geometric mean of 0.8, 1.5, 0.998 and 1.05 (d ran out of memory): 1.0590, +5.9%.
  EXPECT_TRUE(contains(page,
                       "+5.9% in the geometric mean of the step time over 4 workloads; "
                       "faster on 1, level (within 0.5%) on 1, slower on 2."))
      << page;

  // The command writes the page; an agent a file lacks is an error naming the file.
  const auto out = (dir / "page.md").string();
  auto cli =
      gopt::testing::run_command(kGopt + " ablation " + with.string() + " " + without.string() +
                                 " --agent go --without-agent go16 " + "--out " + out);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  std::ifstream f(out);
  const std::string written((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(written, "-20.0%")) << written;
  EXPECT_TRUE(contains(written,
                       "Made with `gopt ablation with.h5 without.h5 --agent go "
                       "--without-agent go16 --out page.md`"))
      << written;
  auto missing = gopt::testing::run_command(kGopt + " ablation " + with.string() + " " +
                                            without.string() + " --agent go");
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_TRUE(contains(missing.err, without.string())) << missing.err;
  EXPECT_TRUE(contains(missing.err, "no result of agent 'go'")) << missing.err;
  gopt::testing::remove_tree(dir.string());
}

// A transfer-learning file: go_pretrain (pretraining with `unit_gate`) then go_finetune,
// which reads its policy unless `checkpoint` names a file of its own.
// A transfer experiment's config whose pretraining picks its checkpoint on a GNMT of
// `validation_layers` layers.
std::string transfer_config(int validation_layers) {
  const std::string layers = std::to_string(validation_layers);
  return "name: transfer_fixture\ntable: generalization\nhardware: p100x4_pcie\nseeds: [1]\n"
         "workloads:\n  - gnmt_4\n  - {graph: gnmt_8, name: gnmt_" +
         layers + ", set: {layers: " + layers +
         "}, pretrain_validation: true}\n"
         "  - {graph: gnmt_8, held_out: true}\nagents: [go_pretrain, go_finetune]\n";
}

void write_transfer_file(const std::filesystem::path& path, const std::string& unit_gate,
                         const std::string& checkpoint = "",
                         const std::string& second_training_graph = "",
                         const std::string& config_yaml = "") {
  Hdf5Sink sink(path);
  RunMetadata m;
  m.experiment = "transfer_fixture";
  m.config_yaml = config_yaml;
  sink.begin(m);
  RunResult pretrain;
  pretrain.key = {"gnmt_4", "go_pretrain", 1};
  pretrain.agent_type = "go_pretrain";
  pretrain.order = 0;
  pretrain.best_step_time_s = 0.5;
  pretrain.resolved_options = {{"unit_gate", unit_gate}, {"hidden", "64"}};
  sink.write(pretrain);
  if (!second_training_graph.empty()) {
    pretrain.key.workload = second_training_graph;
    sink.write(pretrain);
  }
  RunResult finetune;
  finetune.key = {"gnmt_8", "go_finetune", 1};
  finetune.agent_type = "go_finetune";
  finetune.order = 1;
  finetune.best_step_time_s = unit_gate == "true" ? 0.8 : 0.9;
  finetune.resolved_options = {{"samples_per_step", "64"}, {"checkpoint", path.string() + ".ckpt"}};
  if (!checkpoint.empty()) {
    finetune.options = {{"checkpoint", checkpoint}};
    finetune.resolved_options["checkpoint"] = checkpoint;
  }
  sink.write(finetune);
}

TEST(AblationTest, ComparesTheOptionsOfThePretrainingAFineTuningReads) {
  const std::filesystem::path dir = gopt::testing::make_temp_dir("gopt_ablation_upstream");
  write_transfer_file(dir / "gate.h5", "true");
  write_transfer_file(dir / "plain.h5", "false");
  write_transfer_file(dir / "own.h5", "false", (dir / "t2.ckpt").string());
  const ResultsFile gate = read_results_file(dir / "gate.h5");
  const ResultsFile plain = read_results_file(dir / "plain.h5");
  const ResultsFile own = read_results_file(dir / "own.h5");
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);

  const Upstream upstream = upstream_of(gate, "go_finetune", registry);
  EXPECT_EQ(upstream.agents, std::vector<std::string>{"go_pretrain"});
  EXPECT_EQ(upstream.options, std::vector<std::string>{"checkpoint"});
  EXPECT_TRUE(upstream_of(gate, "go_pretrain", registry).agents.empty());  // it reads nothing
  EXPECT_TRUE(upstream_of(own, "go_finetune", registry).agents.empty());   // its own checkpoint
  EXPECT_TRUE(upstream_of(gate, "absent", registry).agents.empty());

  const std::string page = render_ablation({&gate, "go_finetune", upstream},
                                           {&plain, "go_finetune", upstream}, "gopt ablation");
  // The checkpoint paths differ with the files' places, and are left out.
  EXPECT_TRUE(contains(page, "| options that differ | none | none |")) << page;
  EXPECT_TRUE(contains(page,
                       "| options of go_pretrain (whose output it reads) that differ | "
                       "unit_gate: true | unit_gate: false |"))
      << page;
  const std::string one_sided =
      render_ablation({&gate, "go_finetune", upstream}, {&own, "go_finetune"}, "x");
  EXPECT_TRUE(contains(one_sided, "| it reads go_pretrain | yes | no |")) << one_sided;
  // An absolute path is reduced to its file name.
  EXPECT_TRUE(contains(one_sided,
                       "| options that differ | checkpoint: gate.h5.ckpt | checkpoint: t2.ckpt |"))
      << one_sided;

  EXPECT_FALSE(contains(page, "only one side has")) << page;  // the same training graphs
  // A pretraining with one more training graph, and the same options: the page names it.
  write_transfer_file(dir / "more.h5", "false", "", "gnmt_6");
  const ResultsFile more = read_results_file(dir / "more.h5");
  const std::string graphs =
      render_ablation({&more, "go_finetune", upstream}, {&plain, "go_finetune", upstream}, "x");
  EXPECT_TRUE(contains(graphs,
                       "| options of go_pretrain (whose output it reads) that differ | none | "
                       "none |"))
      << graphs;
  EXPECT_TRUE(contains(graphs, "| workloads of go_pretrain only one side has | gnmt_6 | none |"))
      << graphs;
  // And one that picked its checkpoint on another validation graph.
  write_transfer_file(dir / "v6.h5", "false", "", "", transfer_config(6));
  write_transfer_file(dir / "v7.h5", "false", "", "", transfer_config(7));
  const ResultsFile v6 = read_results_file(dir / "v6.h5");
  const ResultsFile v7 = read_results_file(dir / "v7.h5");
  const std::string validation =
      render_ablation({&v7, "go_finetune", upstream}, {&v6, "go_finetune", upstream}, "x");
  EXPECT_TRUE(contains(validation,
                       "| validation graphs of go_pretrain only one side has | "
                       "gnmt_7 (gnmt_8, layers=7) | gnmt_6 (gnmt_8, layers=6) |"))
      << validation;
  EXPECT_FALSE(
      contains(render_ablation({&v6, "go_finetune", upstream}, {&v6, "go_finetune", upstream}, "x"),
               "validation graphs"));

  // The command finds the pretraining agent itself.
  auto cli = gopt::testing::run_command(kGopt + " ablation " + (dir / "gate.h5").string() + " " +
                                        (dir / "plain.h5").string() + " --agent go_finetune");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_TRUE(contains(cli.out, "unit_gate: true | unit_gate: false")) << cli.out;
  EXPECT_TRUE(contains(cli.out, "| gnmt_8 | 1 | 900.0 | 800.0 | -11.1% |")) << cli.out;
  gopt::testing::remove_tree(dir.string());
}

}  // namespace
}  // namespace gopt::experiments
