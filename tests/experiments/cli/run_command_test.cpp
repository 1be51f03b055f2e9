// `gopt run` and `gopt table` end to end: results files, --jobs giving the
// same numbers, a run killed with SIGKILL and resumed giving the same results as an
// uninterrupted one, Ctrl-C, and the tables of a fixture file.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include "agents/baselines/list_scheduling.h"
#include "core/compiled_graph.h"
#include "core/errors.h"
#include "datasets/workload_registry.h"
#include "experiments/config/config.h"
#include "experiments/results/hdf5_sink.h"
#include "experiments/results/version.h"
#include "experiments/tables/bound_refresh.h"
#include "experiments/tables/reschedule.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/simulator.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

extern char** environ;

namespace gopt::experiments {
namespace {

namespace fs = std::filesystem;
using gopt::testing::read_text;
using gopt::testing::run_command;

const std::string kGopt = GOPT_BINARY;
const std::string kData = GOPT_TEST_DATA_DIR;
const std::string kSource = GOPT_SOURCE_DIR;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

fs::path temp_dir() {
  return gopt::testing::make_temp_dir(
      std::string("gopt_run_test_") +
      ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

// A small experiment: two graphs, baselines (METIS among them) and a short HDP run.
fs::path write_config(const fs::path& dir, int hdp_steps, const std::string& seeds) {
  auto path = dir / "small.yaml";
  std::ofstream(path) << "name: small\n"
                         "hardware: p100x2_pcie\n"
                         "seeds: "
                      << seeds
                      << "\n"
                         "workloads:\n"
                         "  - graph: "
                      << kSource
                      << "/datasets/graphs/mlp_tiny.json\n"
                         "  - transformer_xl_2\n"
                         "agents:\n"
                         "  - single_device\n"
                         "  - random\n"
                         "  - metis\n"
                         "  - name: hdp\n"
                         "    options: {samples_per_step: 2, groups: 8}\n"
                         "    budget: {steps: "
                      << hdp_steps << "}\n";
  return path;
}

// Step times, OOM flags and decisions must match exactly (wall times may differ).
void expect_same_results(const ResultsFile& a, const ResultsFile& b) {
  ASSERT_EQ(a.results.size(), b.results.size());
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    const auto& x = a.results[i];
    const auto& y = b.results[i];
    SCOPED_TRACE(x.key.text());
    EXPECT_EQ(x.key, y.key);
    EXPECT_EQ(x.problem_seed, y.problem_seed);
    EXPECT_EQ(x.best_step_time_s, y.best_step_time_s);
    EXPECT_EQ(x.oom, y.oom);
    EXPECT_EQ(x.decision.placement, y.decision.placement);
    EXPECT_EQ(x.samples, y.samples);
    ASSERT_EQ(x.learning_curve.size(), y.learning_curve.size());
    for (std::size_t k = 0; k < x.learning_curve.size(); ++k) {
      EXPECT_EQ(x.learning_curve[k].best_step_time_s, y.learning_curve[k].best_step_time_s);
      EXPECT_EQ(x.learning_curve[k].mean_step_time_s, y.learning_curve[k].mean_step_time_s);
    }
  }
}

// Starts `gopt args...` with stdout and stderr to files; returns the pid.
pid_t spawn_gopt(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all{kGopt};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, kGopt.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Polls the results file until it holds at least `n` results (or `timeout_s` passes).
std::size_t wait_for_results(const fs::path& file, std::size_t n, double timeout_s, pid_t pid) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         timeout_s) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return 0;  // exited before we killed it
    try {
      auto r = read_results_file(file);
      if (r.results.size() >= n) return r.results.size();
    } catch (const core::InputError&) {
      // not created yet, or caught mid-write: poll again
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

TEST(RunCommandTest, RunsAndJobsDoNotChangeResults) {
  auto dir = temp_dir();
  auto config = write_config(dir, 3, "[1, 2]");
  auto one = run_command(kGopt + " run " + config.string() + " --out " + (dir / "one.h5").string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_TRUE(contains(one.err, "[16/16]")) << one.err;  // plain progress lines
  EXPECT_TRUE(contains(one.out, "small: 16 new results written to")) << one.out;

  auto two = run_command(kGopt + " run " + config.string() + " --jobs 3 --out " +
                         (dir / "two.h5").string());
  ASSERT_EQ(two.exit_code, 0) << two.err;
  auto a = read_results_file(dir / "one.h5");
  auto b = read_results_file(dir / "two.h5");
  ASSERT_EQ(a.results.size(), 16u);
  expect_same_results(a, b);
  EXPECT_EQ(a.metadata.experiment, "small");
  EXPECT_TRUE(contains(a.metadata.config_yaml, "samples_per_step")) << a.metadata.config_yaml;
  EXPECT_FALSE(a.metadata.provenance.git_revision.empty());
  for (const auto& r : a.results) {
    EXPECT_EQ(r.learner, r.key.agent == "hdp");
    if (r.learner) {
      EXPECT_EQ(r.learning_curve.size(), 3u);
      // Every option is recorded with the value it ran with, defaults included.
      EXPECT_EQ(r.resolved_options.count("learning_rate"), 1u);
      EXPECT_GT(r.resolved_options.size(), r.options.size());
    }
    for (const auto& [key, value] : r.options) EXPECT_EQ(r.resolved_options.at(key), value);
    EXPECT_GT(r.best_step_time_s, 0);
  }

  // Refuses to overwrite; --resume on a complete file has nothing to do.
  auto again =
      run_command(kGopt + " run " + config.string() + " --out " + (dir / "one.h5").string());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_TRUE(contains(again.err, "the results file exists; continue it with --resume"))
      << again.err;
  auto resumed = run_command(kGopt + " run " + config.string() + " --resume --out " +
                             (dir / "one.h5").string());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.out, "0 new results")) << resumed.out;
}

// Issue #29: a resume with another budget keeps the file's first-run metadata, adds itself
// to the history, stamps its rows with its own config hash and budget, and `gopt table`
// warns that hdp's rows mix budgets (stderr; markdown too, CSV stays plain).
TEST(RunCommandTest, AResumeIsRecordedAndTableWarnsWhenBudgetsMix) {
  auto dir = temp_dir();
  const auto out = (dir / "r.h5").string();
  auto first =
      run_command(kGopt + " run " + write_config(dir, 3, "[1]").string() + " --out " + out);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto before = read_results_file(out);
  const auto config = write_config(dir, 2, "[1, 2]").string();
  auto resumed = run_command(kGopt + " run " + config + " --resume --out " + out);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "the file keeps its first config")) << resumed.err;

  const auto file = read_results_file(out);
  EXPECT_EQ(file.format_version, kResultsFormatVersion);
  EXPECT_EQ(file.metadata.config_yaml, before.metadata.config_yaml);
  EXPECT_EQ(file.metadata.start_time, before.metadata.start_time);
  EXPECT_EQ(file.metadata.provenance, before.metadata.provenance);
  ASSERT_EQ(file.metadata.history.size(), 2u);
  EXPECT_EQ(file.metadata.history[0].provenance, before.metadata.provenance);
  const auto& second = file.metadata.history[1];
  EXPECT_EQ(second.provenance.command, "gopt run " + config + " --resume --out " + out);
  EXPECT_TRUE(contains(second.config_yaml, "steps: 2")) << second.config_yaml;
  EXPECT_NE(second.provenance.config_hash, before.metadata.provenance.config_hash);
  EXPECT_TRUE(contains(second.provenance.libraries, "LibTorch ")) << second.provenance.libraries;
  EXPECT_TRUE(contains(second.provenance.libraries, "; HDF5 1.")) << second.provenance.libraries;
  ASSERT_EQ(file.results.size(), 16u);
  for (const auto& r : file.results) {
    SCOPED_TRACE(r.key.text());
    const auto& run = r.key.seed == 1 ? file.metadata.history[0] : second;
    EXPECT_EQ(r.provenance, run.provenance);
    EXPECT_EQ(r.budget.has_value(), r.key.agent == "hdp");
    if (r.budget) {
      EXPECT_EQ(r.budget->max_steps, r.key.seed == 1 ? 3 : 2);
    }
  }

  const std::string warning =
      "agent hdp trained under 2 budgets, so its results are not comparable with each other: "
      "steps 3 (2 results); steps 2 (2 results)";
  auto md = run_command(kGopt + " table " + out);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_TRUE(contains(md.err, "gopt: warning: " + out + ": " + warning)) << md.err;
  EXPECT_EQ(md.out.rfind("> **Warning:** " + warning + "\n\n## ", 0), 0u) << md.out;
  auto csv = run_command(kGopt + " table " + out + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_TRUE(contains(csv.err, warning)) << csv.err;
  EXPECT_FALSE(contains(csv.out, "Warning")) << csv.out;
}

// --redo: a resume runs the named agent again (here with another budget) and replaces its
// rows; the other agents' rows stay as they were; an unknown name is an error naming it.
TEST(RunCommandTest, RedoRunsTheNamedAgentAgainAndReplacesOnlyItsRows) {
  auto dir = temp_dir();
  const auto out = (dir / "r.h5").string();
  auto first =
      run_command(kGopt + " run " + write_config(dir, 3, "[1]").string() + " --out " + out);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto before = read_results_file(out);
  const auto config = write_config(dir, 2, "[1]").string();

  auto typo = run_command(kGopt + " run " + config + " --resume --redo hpd --out " + out);
  EXPECT_EQ(typo.exit_code, 1) << typo.err;
  EXPECT_TRUE(contains(typo.err, "--redo hpd: the config has no agent named 'hpd'")) << typo.err;
  EXPECT_TRUE(contains(typo.err, config)) << typo.err;
  auto alone = run_command(kGopt + " run " + config + " --redo hdp --out " + out);
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_TRUE(contains(alone.err, "--resume")) << alone.err;

  auto plan = run_command(kGopt + " run " + config + " --resume --redo hdp --dry-run --out " + out);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_TRUE(contains(plan.out, "/ hdp / seed 1")) << plan.out;
  EXPECT_FALSE(contains(plan.out, "/ metis / seed 1")) << plan.out;

  auto redone = run_command(kGopt + " run " + config + " --resume --redo hdp --out " + out);
  ASSERT_EQ(redone.exit_code, 0) << redone.err;
  EXPECT_TRUE(contains(redone.out, "2 new results")) << redone.out;
  const auto after = read_results_file(out);
  ASSERT_EQ(after.results.size(), before.results.size());
  for (const auto& r : after.results) {
    SCOPED_TRACE(r.key.text());
    const auto was = std::find_if(before.results.begin(), before.results.end(),
                                  [&](const auto& b) { return b.key == r.key; });
    ASSERT_NE(was, before.results.end());
    if (r.key.agent == "hdp") {
      ASSERT_TRUE(r.budget.has_value());
      EXPECT_EQ(r.budget->max_steps, 2);
      EXPECT_NE(r.provenance.command, was->provenance.command);
    } else {
      EXPECT_EQ(r.provenance, was->provenance);
      EXPECT_EQ(r.best_step_time_s, was->best_step_time_s);
    }
  }

  // The same redo again (a redo that stopped, continued with its own command) keeps what
  // this build redid under this config. A build from a modified tree cannot tell its
  // versions apart, so it redoes everything it is told to.
  auto again = run_command(kGopt + " run " + config + " --resume --redo hdp --out " + out);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::string revision(git_revision());
  const bool clean = revision != "unknown" && revision.find("-dirty") == std::string::npos;
  EXPECT_TRUE(contains(again.out, clean ? "0 new results" : "2 new results")) << revision << "\n"
                                                                              << again.out;
}

// `--redo WORKLOAD:AGENT` runs that agent again on that workload only.
TEST(RunCommandTest, RedoOfOneWorkloadRunsOnlyItsRows) {
  auto dir = temp_dir();
  const auto out = (dir / "r.h5").string();
  auto first =
      run_command(kGopt + " run " + write_config(dir, 3, "[1, 2]").string() + " --out " + out);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto before = read_results_file(out);
  const auto config = write_config(dir, 2, "[1, 2]").string();

  auto typo = run_command(kGopt + " run " + config + " --resume --redo resnet:hdp --out " + out);
  EXPECT_EQ(typo.exit_code, 1) << typo.err;
  EXPECT_TRUE(contains(typo.err,
                       "--redo resnet:hdp: the config has no workload named 'resnet' "
                       "(mlp_tiny, transformer_xl_2)"))
      << typo.err;

  auto redone =
      run_command(kGopt + " run " + config + " --resume --redo transformer_xl_2:hdp --out " + out);
  ASSERT_EQ(redone.exit_code, 0) << redone.err;
  EXPECT_TRUE(contains(redone.out, "2 new results")) << redone.out;
  const auto after = read_results_file(out);
  ASSERT_EQ(after.results.size(), before.results.size());
  for (const auto& r : after.results) {
    SCOPED_TRACE(r.key.text());
    if (r.key.agent != "hdp") continue;
    ASSERT_TRUE(r.budget.has_value());
    EXPECT_EQ(r.budget->max_steps, r.key.workload == "transformer_xl_2" ? 2 : 3);
  }
}

// Rows from two binaries: `gopt table` names both revisions and how many rows each wrote.
TEST(TableCommandTest, WarnsWhenTheRowsMixRevisions) {
  auto dir = temp_dir();
  const auto out = dir / "mixed.h5";
  {
    Hdf5Sink sink(out);
    RunMetadata m;
    m.experiment = "mixed";
    m.provenance.git_revision = "aaaa111";
    sink.begin(m);
    for (std::uint64_t seed : {1, 2, 3}) {
      RunResult r;
      r.key = {"w", "metis", seed};
      r.agent_type = "metis";
      r.best_step_time_s = 0.01;
      r.provenance.git_revision = seed == 3 ? "bbbb222" : "aaaa111";
      sink.write(r);
    }
  }
  auto table = run_command(kGopt + " table " + out.string());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const std::string warning =
      "the results come from 2 git revisions, which may simulate or train differently: "
      "aaaa111 (2 results); bbbb222 (1 result)";
  EXPECT_TRUE(contains(table.err, warning)) << table.err;
  EXPECT_TRUE(contains(table.out, "> **Warning:** " + warning)) << table.out;
}

// --recompute-bounds: this build's bounds from the file's own config, where they are
// tighter than the stored ones, with a note that says so.
TEST(TableCommandTest, RecomputedBoundsRaiseWeakerStoredOnesAndSaySo) {
  auto dir = temp_dir();
  const auto config = dir / "bounds.yaml";
  std::ofstream(config) << "name: bounds\nhardware: p100x2_pcie\nseeds: [1]\n"
                           "workloads:\n  - graph: "
                        << kSource
                        << "/datasets/graphs/mlp_tiny.json\n  - transformer_xl_2\n"
                           "agents: [single_device]\n";
  const auto out = dir / "bounds.h5";
  auto run = run_command(kGopt + " run " + config.string() + " --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;

  ResultsFile file = read_results_file(out);
  ASSERT_EQ(file.results.size(), 2u);
  std::vector<double> stored;
  for (auto& r : file.results) {
    EXPECT_GT(r.lower_bound_s, 0);
    stored.push_back(r.lower_bound_s);
    r.lower_bound_s = 1e-9;  // as if an older gopt had proved much less
  }
  const BoundRefresh refresh = recompute_lower_bounds(file);
  EXPECT_EQ(refresh.workloads, 2u);
  EXPECT_EQ(refresh.graphs, 2u);
  EXPECT_EQ(refresh.raised, 2u);
  for (std::size_t i = 0; i < stored.size(); ++i) {
    EXPECT_DOUBLE_EQ(file.results[i].lower_bound_s, stored[i]);  // the same build's bound
  }
  // A stored bound above this build's is kept: the larger valid bound wins.
  file.results[0].lower_bound_s = stored[0] * 2;
  EXPECT_EQ(recompute_lower_bounds(file).raised, 0u);
  EXPECT_DOUBLE_EQ(file.results[0].lower_bound_s, stored[0] * 2);
  // Without a config there is nothing to rebuild the graphs from.
  file.metadata.config_yaml.clear();
  EXPECT_THROW((void)recompute_lower_bounds(file), core::InputError);

  auto table = run_command(kGopt + " table " + out.string() + " --recompute-bounds");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "> **Note:** Lower bounds recomputed from the file's config"))
      << table.out;
  EXPECT_TRUE(contains(table.out, "for 2 workloads, above the stored bound on 0")) << table.out;
  auto page = run_command(kGopt + " report " + out.string() + " --recompute-bounds");
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_TRUE(contains(page.out, "--recompute-bounds` from the results file")) << page.out;
  EXPECT_TRUE(contains(page.out, "> **Note:** Lower bounds recomputed")) << page.out;
}

// A file resumed with another config holds results of two graphs under one workload label:
// each result's bound and re-simulation come from the config it ran under, not the file's
// first one.
TEST(TableCommandTest, ResultsOfAResumeWithAnotherConfigAreRebuiltFromTheirOwn) {
  auto dir = temp_dir();
  const auto config = dir / "resumed.yaml";
  const auto write = [&](const std::string& seeds, int seq_len) {
    std::ofstream(config) << "name: resumed\nhardware: p100x2_pcie\nseeds: " << seeds
                          << "\nworkloads:\n  - {graph: rnnlm_2, name: lm, set: {seq_len: "
                          << seq_len << "}}\nagents: [human_expert]\n";
  };
  const auto out = dir / "resumed.h5";
  write("[1]", 10);
  auto run = run_command(kGopt + " run " + config.string() + " --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  write("[1, 2]", 40);
  run = run_command(kGopt + " run " + config.string() + " --resume --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const ResultsFile recorded = read_results_file(out);
  ASSERT_EQ(recorded.results.size(), 2u);
  ASSERT_NE(recorded.results[0].provenance.config_hash, recorded.results[1].provenance.config_hash);
  ASSERT_GT(recorded.results[1].lower_bound_s, recorded.results[0].lower_bound_s * 2);
  ResultsFile file = read_results_file(out);
  for (auto& r : file.results) r.lower_bound_s = 1e-9;
  const BoundRefresh refresh = recompute_lower_bounds(file);
  EXPECT_EQ(refresh.workloads, 1u);
  EXPECT_EQ(refresh.graphs, 2u);  // one graph per config
  EXPECT_TRUE(contains(bound_refresh_note(refresh), "for 1 workloads (2 graphs, one per config"))
      << bound_refresh_note(refresh);
  for (std::size_t i = 0; i < file.results.size(); ++i) {
    EXPECT_DOUBLE_EQ(file.results[i].lower_bound_s, recorded.results[i].lower_bound_s) << i;
    EXPECT_EQ(config_yaml_of(file, file.results[i]),
              i == 0 ? file.metadata.config_yaml : file.metadata.history.back().config_yaml);
  }
  // The expert's decision re-simulated on its own graph: the longer one takes longer.
  const Reschedule done = reschedule_critical_path(file);
  EXPECT_EQ(done.results, 2u);
  EXPECT_EQ(done.workloads, 1u);  // one label, though two configs and graphs
  EXPECT_GT(file.results[1].best_step_time_s, file.results[0].best_step_time_s * 2);
  // A result whose config the file does not record is named, and nothing is changed.
  file.results[1].provenance.config_hash = "0123456789abcdef";
  const std::string error = gopt::testing::error_of([&] { (void)recompute_lower_bounds(file); });
  EXPECT_TRUE(
      contains(error, "ran under a config (hash 0123456789abcdef) the file does not record"))
      << error;
}

// --schedule critical_path: every result's decision re-simulated from the file's config in
// critical-path order, placement and fusion as recorded; the convergence table left out.
TEST(TableCommandTest, CriticalPathScheduleReSimulatesEveryDecisionAndSaysSo) {
  auto dir = temp_dir();
  const auto config = dir / "order.yaml";
  std::ofstream(config) << "name: order\nhardware: p100x2_pcie\nseeds: [1]\n"
                           "workloads: [transformer_xl_2]\nagents: [human_expert, tf_default,"
                           " {name: hdp, budget: {steps: 2}}]\n";
  const auto out = dir / "order.h5";
  auto run = run_command(kGopt + " run " + config.string() + " --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const ResultsFile recorded = read_results_file(out);
  ResultsFile file = read_results_file(out);
  const Reschedule done = reschedule_critical_path(file);
  EXPECT_EQ(done.workloads, 1u);
  EXPECT_EQ(done.results, 3u);
  ASSERT_EQ(file.results.size(), 3u);
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  const auto graph =
      core::CompiledGraph::compile(datasets::load_graph("transformer_xl_2", workloads));
  const auto cluster = hardware::load_profile("p100x2_pcie");
  const auto cost_model = hardware::make_cost_model(cluster);
  const hardware::CostModel& cost = *cost_model;
  simulator::Simulator sim(graph, cluster, cost);
  for (std::size_t i = 0; i < file.results.size(); ++i) {
    const auto& r = file.results[i];
    core::Decision d = recorded.results[i].decision;  // tf_default's fusion kept
    d.priority =
        agents::critical_path_priorities(agents::Problem{graph, cluster, cost, 0}, *d.placement);
    EXPECT_DOUBLE_EQ(r.best_step_time_s, sim.simulate(d).step_time_s) << r.key.text();
    // The expert's stages wait on each other less in critical-path order.
    if (r.key.agent == "human_expert") {
      EXPECT_LT(r.best_step_time_s, recorded.results[i].best_step_time_s);
    }
    EXPECT_EQ(r.device_busy_s.size(), 2u);
  }

  auto as_recorded = run_command(kGopt + " table " + out.string());
  EXPECT_TRUE(contains(as_recorded.out, "## Convergence")) << as_recorded.out;  // hdp's curve
  auto table = run_command(kGopt + " table " + out.string() + " --schedule critical_path");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "> **Note:** Step times re-simulated by gopt")) << table.out;
  EXPECT_TRUE(contains(table.out, "for 3 results on 1 workloads")) << table.out;
  EXPECT_FALSE(contains(table.out, "## Convergence")) << table.out;
  auto convergence = run_command(kGopt + " table " + out.string() +
                                 " --schedule critical_path --table convergence");
  EXPECT_EQ(convergence.exit_code, 1);
  EXPECT_TRUE(contains(convergence.err, "recorded learning curves")) << convergence.err;
  auto page = run_command(kGopt + " report " + out.string() + " --schedule critical_path");
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_TRUE(contains(page.out, "--schedule critical_path` from the results file")) << page.out;
  EXPECT_TRUE(contains(page.out, "> **Note:** Step times re-simulated by gopt")) << page.out;
  EXPECT_FALSE(contains(page.out, "## Convergence")) << page.out;
  auto bad = run_command(kGopt + " table " + out.string() + " --schedule fifo");
  EXPECT_NE(bad.exit_code, 0);
  // A result measured on hardware (gopt validate) ran in its own order.
  file.results[0].measured_step_time_s = 0.05;
  EXPECT_THROW((void)reschedule_critical_path(file), core::InputError);
  file.results[0].measured_step_time_s = -1;
  // Without a config there is nothing to rebuild the graphs from.
  file.metadata.config_yaml.clear();
  EXPECT_THROW((void)reschedule_critical_path(file), core::InputError);
}

TEST(RunCommandTest, KilledRunLeavesAReadableFileAndResumeCompletesIt) {
  auto dir = temp_dir();
  auto config = write_config(dir, 12, "[1, 2]");
  auto full = dir / "full.h5";
  auto uninterrupted = run_command(kGopt + " run " + config.string() + " --out " + full.string());
  ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.err;

  auto killed = dir / "killed.h5";
  pid_t pid = spawn_gopt({"run", config.string(), "--out", killed.string()}, dir / "out.txt",
                         dir / "err.txt");
  ASSERT_GT(pid, 0);
  std::size_t seen = wait_for_results(killed, 1, 60, pid);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_GE(seen, 1u) << read_text(dir / "err.txt");
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";

  auto partial = read_results_file(killed);  // readable after SIGKILL
  EXPECT_GE(partial.results.size(), 1u);
  EXPECT_LT(partial.results.size(), 16u);

  auto resumed =
      run_command(kGopt + " run " + config.string() + " --resume --out " + killed.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "resuming:")) << resumed.err;
  auto a = read_results_file(full);
  auto b = read_results_file(killed);
  EXPECT_EQ(b.incomplete, 0);
  expect_same_results(a, b);
}

// A job killed in the middle of training continues from its last snapshot
// (<results>.snapshots/) and ends exactly as the uninterrupted job; the snapshots go away
// with the finished job.
TEST(RunCommandTest, KilledMidJobResumesFromItsTrainingSnapshot) {
  auto dir = temp_dir();
  auto config = dir / "snap.yaml";
  std::ofstream(config) << "name: snap\nhardware: p100x2_pcie\nseeds: [1]\nworkloads:\n"
                           "  - graph: "
                        << kSource
                        << "/datasets/graphs/mlp_tiny.json\n"
                           "agents:\n"
                           "  - name: go_one\n"
                           "    options: {hidden: 16, segment_length: 8, samples_per_step: 4}\n"
                           "    budget: {steps: 300}\n";
  auto full = dir / "full.h5";
  auto uninterrupted = run_command(kGopt + " run " + config.string() + " --out " + full.string());
  ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.err;
  EXPECT_FALSE(fs::exists(dir / "full.snapshots"));

  auto killed = dir / "killed.h5";
  const auto snapshots = dir / "killed.snapshots";
  pid_t pid =
      spawn_gopt({"run", config.string(), "--out", killed.string(), "--snapshot-every", "0.01"},
                 dir / "out.txt", dir / "err.txt");
  ASSERT_GT(pid, 0);
  const auto start = std::chrono::steady_clock::now();
  auto has_snapshot = [&] {
    std::error_code ec;
    for (fs::directory_iterator it(snapshots, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".pt") return true;
    }
    return false;
  };
  while (!has_snapshot() && std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";
  ASSERT_TRUE(has_snapshot()) << read_text(dir / "err.txt");
  EXPECT_TRUE(read_results_file(killed).results.empty());

  auto resumed =
      run_command(kGopt + " run " + config.string() + " --resume --out " + killed.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "1 unfinished job(s) continue from their training snapshots"))
      << resumed.err;
  expect_same_results(read_results_file(full), read_results_file(killed));
  EXPECT_FALSE(fs::exists(snapshots));
}

// Pretraining jobs (one per agent and seed) run in parallel threads too, and give the same
// results, checkpoints included (the zero-shot rows read them), as one at a time.
TEST(RunCommandTest, ParallelPretrainingGivesTheSameResults) {
  auto dir = temp_dir();
  auto config = dir / "transfer.yaml";
  std::ofstream(config) << "name: transfer\nhardware: p100x2_pcie\nseeds: [1, 2]\nworkloads:\n"
                           "  - graph: "
                        << kSource
                        << "/datasets/graphs/mlp_tiny.json\n"
                           "  - transformer_xl_2\n"
                           "  - {graph: wavenet_2, held_out: true}\n"
                           "agents:\n"
                           "  - name: go_pretrain\n"
                           "    options: {hidden: 16, segment_length: 8, samples_per_step: 4}\n"
                           "    budget: {steps: 6}\n"
                           "  - go_zero_shot\n";
  auto one = run_command(kGopt + " run " + config.string() + " --out " + (dir / "one.h5").string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto two = run_command(kGopt + " run " + config.string() + " --jobs 2 --out " +
                         (dir / "two.h5").string());
  ASSERT_EQ(two.exit_code, 0) << two.err;
  auto a = read_results_file(dir / "one.h5");
  auto b = read_results_file(dir / "two.h5");
  ASSERT_EQ(a.results.size(), 6u);  // 2 training graphs x 2 seeds, 1 held-out x 2 seeds
  // The rows of one pretraining job share its wall time (the projection counts it once).
  for (const auto& r : a.results) {
    for (const auto& s : a.results) {
      if (r.key.agent == "go_pretrain" && s.key.agent == "go_pretrain" &&
          r.key.seed == s.key.seed) {
        EXPECT_EQ(r.wall_s, s.wall_s) << r.key.text() << " and " << s.key.text();
      }
    }
  }
  // Rows come in finishing order; compare them by key.
  auto by_key = [](ResultsFile f) {
    std::sort(f.results.begin(), f.results.end(),
              [](const RunResult& x, const RunResult& y) { return x.key < y.key; });
    return f;
  };
  expect_same_results(by_key(a), by_key(b));
}

// With --jobs 2 the other jobs run beside pretraining instead of after it: a baseline's
// row is written while the policy still trains. Only the zero-shot job waits for its
// checkpoint.
TEST(RunCommandTest, BaselinesRunBesidePretraining) {
  auto dir = temp_dir();
  auto config = dir / "beside.yaml";
  std::ofstream(config) << "name: beside\nhardware: p100x2_pcie\nseeds: [1]\nworkloads:\n"
                           "  - transformer_xl_2\n"
                           "  - {graph: wavenet_2, held_out: true}\n"
                           "agents:\n"
                           "  - name: go_pretrain\n"
                           "    options: {hidden: 16, segment_length: 8, samples_per_step: 4}\n"
                           "    budget: {steps: 40}\n"
                           "  - go_zero_shot\n"
                           "  - single_device\n";
  auto r = run_command(kGopt + " run " + config.string() + " --jobs 2 --out " +
                       (dir / "beside.h5").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto baseline = r.err.find("wavenet_2 / single_device / seed 1: ");
  const auto pretrained = r.err.find("transformer_xl_2 / go_pretrain / seed 1: ");
  const auto zero_shot = r.err.find("wavenet_2 / go_zero_shot / seed 1: ");
  ASSERT_NE(baseline, std::string::npos) << r.err;
  ASSERT_NE(pretrained, std::string::npos) << r.err;
  ASSERT_NE(zero_shot, std::string::npos) << r.err;
  EXPECT_LT(baseline, pretrained) << r.err;
  EXPECT_LT(pretrained, zero_shot) << r.err;
  EXPECT_TRUE(contains(r.err, "[4/4] ")) << r.err;  // rows counted, pretraining's included
}

// Before any job has finished (a run that starts with pretraining), the heartbeat still
// says how far the running learners are and gives an ETA (the cost model's, then the
// running learners' own pace).
TEST(RunCommandTest, TheHeartbeatProjectsRunningLearnersBeforeAnyJobFinished) {
  auto dir = temp_dir();
  auto config = dir / "heartbeat.yaml";
  std::ofstream(config) << "name: heartbeat\nhardware: p100x2_pcie\nseeds: [1]\nworkloads:\n"
                           "  - transformer_xl_2\n"
                           "  - {graph: wavenet_2, held_out: true}\n"
                           "agents:\n"
                           "  - name: go_pretrain\n"
                           "    options: {hidden: 16, segment_length: 8, samples_per_step: 4}\n"
                           "    budget: {steps: 120}\n"
                           "  - go_zero_shot\n";
  auto r = run_command(kGopt + " run " + config.string() + " --heartbeat 0.2 --out " +
                       (dir / "heartbeat.h5").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "[0/2] running  pretraining go_pretrain (seed 1) (step ")) << r.err;
  EXPECT_TRUE(contains(r.err, "/120)  (elapsed ")) << r.err;
  EXPECT_TRUE(contains(r.err, "/120)  (elapsed ")) << r.err;
  EXPECT_TRUE(contains(r.err, ", ETA ")) << r.err;
  // Result lines say which time is simulated and which is wall time.
  EXPECT_TRUE(contains(r.err, ": step time ")) << r.err;
  EXPECT_TRUE(contains(r.err, " (simulated), ")) << r.err;
  EXPECT_TRUE(contains(r.err, " wall  (elapsed ")) << r.err;
}

// A consumer that names the checkpoint file itself waits for the pretraining that writes
// that file, as one that reads the default does.
TEST(RunCommandTest, AConsumerNamingTheCheckpointWaitsForItsPretraining) {
  auto dir = temp_dir();
  const auto checkpoint = (dir / "mine.ckpt").string();
  auto config = dir / "named.yaml";
  std::ofstream(config) << "name: named\nhardware: p100x2_pcie\nseeds: [1]\nworkloads:\n"
                           "  - transformer_xl_2\n"
                           "  - {graph: wavenet_2, held_out: true}\n"
                           "agents:\n"
                           "  - name: go_pretrain\n"
                           "    options: {hidden: 16, segment_length: 8, samples_per_step: 4, "
                           "checkpoint: "
                        << checkpoint
                        << "}\n"
                           "    budget: {steps: 20}\n"
                           "  - name: go_zero_shot\n"
                           "    options: {checkpoint: "
                        << checkpoint << "}\n";
  auto r = run_command(kGopt + " run " + config.string() + " --jobs 2 --out " +
                       (dir / "named.h5").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto pretrained = r.err.find("transformer_xl_2 / go_pretrain / seed 1: ");
  const auto zero_shot = r.err.find("wavenet_2 / go_zero_shot / seed 1: ");
  ASSERT_NE(pretrained, std::string::npos) << r.err;
  ASSERT_NE(zero_shot, std::string::npos) << r.err;
  EXPECT_LT(pretrained, zero_shot) << r.err;
}

// A pretraining that fails fails its rows, and the jobs that would read its checkpoint say
// why they did not run; the other jobs' rows are written.
TEST(RunCommandTest, ConsumersOfAFailedPretrainingSayWhyTheyDidNotRun) {
  auto dir = temp_dir();
  std::ofstream(dir / "a_file") << "not a folder\n";
  auto config = dir / "failed.yaml";
  std::ofstream(config) << "name: failed\nhardware: p100x2_pcie\nseeds: [1]\nworkloads:\n"
                           "  - transformer_xl_2\n"
                           "  - {graph: wavenet_2, held_out: true}\n"
                           "agents:\n"
                           "  - name: go_pretrain\n"
                           "    options: {hidden: 16, segment_length: 8, samples_per_step: 4,\n"
                           "              checkpoint: "
                        << (dir / "a_file" / "p.ckpt").string()
                        << "}\n"
                           "    budget: {steps: 2}\n"
                           "  - go_zero_shot\n"
                           "  - single_device\n";
  auto out = dir / "failed.h5";
  auto r = run_command(kGopt + " run " + config.string() + " --jobs 2 --out " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "transformer_xl_2 / go_pretrain / seed 1: FAILED: ")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "wavenet_2 / go_zero_shot / seed 1: FAILED: not run: its pretraining, "
                       "go_pretrain (seed 1), failed"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "gopt: error: 2 jobs failed:")) << r.err;
  EXPECT_EQ(read_results_file(out).results.size(), 2u);  // single_device on both graphs
}

TEST(RunCommandTest, SigintStopsCleanly) {
  auto dir = temp_dir();
  auto config = write_config(dir, 200, "[1]");
  auto file = dir / "r.h5";
  pid_t pid = spawn_gopt({"run", config.string(), "--out", file.string()}, dir / "out.txt",
                         dir / "err.txt");
  ASSERT_GT(pid, 0);
  ASSERT_GE(wait_for_results(file, 1, 60, pid), 1u) << read_text(dir / "err.txt");
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  auto err = read_text(dir / "err.txt");
  EXPECT_TRUE(contains(err, "interrupted; finished results are in")) << err;
  EXPECT_TRUE(contains(err, "--resume")) << err;
  auto r = read_results_file(file);
  EXPECT_GE(r.results.size(), 1u);
  EXPECT_EQ(r.incomplete, 0);
}

// A learner's curve reaches the results file while it trains (--curve-every), where
// `gopt table` shows it as running; Ctrl-C leaves it marked stopped, and the resumed job's
// finished curve starts with the points seen live.
TEST(RunCommandTest, LearningCurvesAreReadableWhileAJobTrains) {
  auto dir = temp_dir();
  auto config = dir / "live.yaml";
  std::ofstream(config) << "name: live\nhardware: p100x2_pcie\nseeds: [1]\nworkloads:\n"
                           "  - graph: "
                        << kSource
                        << "/datasets/graphs/mlp_tiny.json\n"
                           "agents:\n"
                           "  - single_device\n"
                           "  - name: go_one\n"
                           "    options: {hidden: 16, segment_length: 8, samples_per_step: 4}\n"
                           "    budget: {steps: 400}\n";
  auto file = dir / "live.h5";
  pid_t pid = spawn_gopt({"run", config.string(), "--out", file.string(), "--curve-every", "0.02"},
                         dir / "out.txt", dir / "err.txt");
  ASSERT_GT(pid, 0);
  std::vector<agents::LearningCurvePoint> seen;
  const auto start = std::chrono::steady_clock::now();
  while (seen.size() < 3 && std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    try {
      auto r = read_results_file(file);
      if (!r.running.empty()) seen = r.running.front().learning_curve;
    } catch (const core::InputError&) {
      // not created yet: poll again
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(seen.size(), 3u) << read_text(dir / "err.txt");
  auto table = run_command(kGopt + " table " + file.string() + " --table running");
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "| mlp_tiny | go_one |")) << table.out;
  EXPECT_TRUE(contains(table.out, " running ")) << table.out;
  EXPECT_TRUE(contains(table.out, " of 400 ")) << table.out;

  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 130) << "the job finished before it could be stopped";
  auto stopped = read_results_file(file);
  ASSERT_EQ(stopped.running.size(), 1u);
  EXPECT_EQ(stopped.running[0].state, "stopped");
  EXPECT_GE(stopped.running[0].learning_curve.size(), seen.size());
  table = run_command(kGopt + " table " + file.string() + " --table running");
  EXPECT_TRUE(contains(table.out, "stopped (--resume continues it)")) << table.out;

  auto resumed = run_command(kGopt + " run " + config.string() +
                             " --resume --curve-every 0 --out " + file.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto done = read_results_file(file);
  EXPECT_TRUE(done.running.empty());
  ASSERT_EQ(done.results.size(), 2u);
  const auto& curve = done.results[1].learning_curve;
  ASSERT_GE(curve.size(), seen.size());
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_EQ(curve[k].step, seen[k].step);
    EXPECT_EQ(curve[k].best_step_time_s, seen[k].best_step_time_s);
    EXPECT_EQ(curve[k].mean_step_time_s, seen[k].mean_step_time_s);
  }
}

TEST(RunCommandTest, ConfigErrorsExitOneWithEveryProblem) {
  auto dir = temp_dir();
  auto config = dir / "bad.yaml";
  std::ofstream(config) << "name: bad\nhardware: p100x4_pcie\nworkloads: [transformer_xl_2]\n"
                           "agents:\n  - metis\n  - hpd\nseeds: [1]\nouptut: x.h5\n";
  auto r = run_command(kGopt + " run " + config.string() + " --set agents.0.budget.steps=3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "gopt: error: " + config.string() + ": 3 problems in the config:"))
      << r.err;
  EXPECT_TRUE(contains(r.err, config.string() + ":6:5: agents[1].name: unknown agent 'hpd' (did "
                                                "you mean 'hdp'?)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, config.string() + ":8:1: ouptut: unknown key 'ouptut' (did you "
                                                "mean 'output'?)"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "--set agents.0.budget.steps=3: agents[0].budget: agent 'metis' "
                       "does not learn"))
      << r.err;
  auto usage = run_command(kGopt + " run " + config.string() + " --jobs 0");
  EXPECT_EQ(usage.exit_code, 2) << usage.err;
}

TEST(RunCommandTest, AWorkloadThatFailsToLoadLeavesNoFile) {
  auto dir = temp_dir();
  auto config = dir / "cycle.yaml";
  std::ofstream(config) << "name: cycle\nhardware: p100x2_pcie\nagents: [single_device]\n"
                           "workloads: ["
                        << kData << "/graphs/cycle.json]\n";
  auto out = dir / "cycle.h5";
  auto r = run_command(kGopt + " run " + config.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "cycle.json: graph 'cycle': contains a cycle")) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

// The results file names the CPU code paths its learners ran on; a bad GOPT_CPU_KERNEL is an
// input error naming the variable, and leaves an existing file as it was.
// gopt runs OpenBLAS's kernels for the widest path the CPU has, also where OpenBLAS 0.3.21
// does not know the CPU and falls back to its SSE3 (Prescott) kernels; OPENBLAS_CORETYPE
// still forces a set.
TEST(RunCommandTest, OpenBlasRunsKernelsAsWideAsTheCpu) {
  auto dir = temp_dir();
  auto config = write_config(dir, 1, "[1]");
  auto out = dir / "small.h5";
  auto r = run_command("env -u OPENBLAS_CORETYPE " + kGopt + " run " + config.string() + " --out " +
                       out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string said = read_results_file(out).metadata.provenance.cpu_numerics;
  if (contains(said, "OpenBLAS unknown")) GTEST_SKIP() << "the loaded BLAS is not OpenBLAS";
  if (contains(said, "gopt kernels avx512") || contains(said, "gopt kernels avx2")) {
    EXPECT_FALSE(contains(said, "OpenBLAS Prescott")) << said;
  }
  r = run_command("OPENBLAS_CORETYPE=Prescott " + kGopt + " run " + config.string() +
                  " --overwrite --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      contains(read_results_file(out).metadata.provenance.cpu_numerics, "OpenBLAS Prescott"));
}

// GOPT_CPU_HIDE makes this machine run what one without AVX-512 (or AVX2) runs: gopt's
// kernels, OpenBLAS's and ATen's all below what is hidden, and the results file says so;
// a bad value names the variable and leaves an existing file alone.
TEST(RunCommandTest, HiddenCpuPathsAreHiddenFromEveryLibrary) {
  auto dir = temp_dir();
  auto config = write_config(dir, 1, "[1]");
  auto out = dir / "small.h5";
  const std::string clean = "env -u OPENBLAS_CORETYPE -u ATEN_CPU_CAPABILITY -u GOPT_CPU_KERNEL ";
  auto r = run_command(clean + "GOPT_CPU_HIDE=avx2 " + kGopt + " run " + config.string() +
                       " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string said = read_results_file(out).metadata.provenance.cpu_numerics;
  EXPECT_EQ(said.rfind("gopt kernels baseline (native); ATen NO AVX; ", 0), 0u) << said;
  if (!contains(said, "OpenBLAS unknown")) {
    EXPECT_TRUE(contains(said, "OpenBLAS Prescott")) << said;
  }

  r = run_command(clean + "GOPT_CPU_HIDE=avx512 " + kGopt + " run " + config.string() +
                  " --overwrite --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  said = read_results_file(out).metadata.provenance.cpu_numerics;
  EXPECT_FALSE(contains(said, "gopt kernels avx512")) << said;
  EXPECT_FALSE(contains(said, "ATen AVX512")) << said;
  for (const char* wide : {"SkylakeX", "Cooperlake", "SapphireRapids", "Prescott"}) {
    if (contains(said, "gopt kernels avx2")) {
      EXPECT_FALSE(contains(said, "OpenBLAS " + std::string(wide))) << said;
    }
  }

  const std::string before = read_text(out);
  auto bad = run_command(clean + "GOPT_CPU_HIDE=sse " + kGopt + " run " + config.string() +
                         " --overwrite --out " + out.string());
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_TRUE(contains(bad.err, "GOPT_CPU_HIDE: expected avx512, avx2 or none, found 'sse'"))
      << bad.err;
  EXPECT_EQ(read_text(out), before);
}

TEST(RunCommandTest, ResultsRecordTheCpuPathAndABadPathLeavesTheFileAlone) {
  auto dir = temp_dir();
  auto config = write_config(dir, 2, "[1]");
  auto out = dir / "small.h5";
  auto r = run_command("GOPT_CPU_KERNEL=baseline " + kGopt + " run " + config.string() + " --out " +
                       out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string said = read_results_file(out).metadata.provenance.cpu_numerics;
  EXPECT_TRUE(contains(said, "gopt kernels baseline")) << said;
  const std::string before = read_text(out);
  auto bad = run_command("GOPT_CPU_KERNEL=avx3 " + kGopt + " run " + config.string() +
                         " --overwrite --out " + out.string());
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_TRUE(contains(bad.err,
                       "GOPT_CPU_KERNEL: expected baseline, avx2, avx512 or native, "
                       "found 'avx3'"))
      << bad.err;
  EXPECT_EQ(read_text(out), before);
}

TEST(ShippedConfigsTest, EveryConfigLoads) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(kSource + "/experiments/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW((void)load_config(entry.path()));
    ++n;
  }
  EXPECT_GE(n, 9);
}

// The small variants' runs and tables: ResultsUnchangedTest (results_unchanged_test.cpp),
// which pins their results too.

TEST(TableCommandTest, PrintsTheFixtureTables) {
  const std::string fixture = kData + "/results/fixture.h5";
  auto md = run_command(kGopt + " table " + fixture);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out, read_text(kData + "/results/fixture_table.md"));
  auto csv = run_command(kGopt + " table " + fixture + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out, read_text(kData + "/results/fixture_table.csv"));
  auto one = run_command(kGopt + " table " + fixture + " --table generalization");
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_TRUE(contains(one.err, "no 'generalization' table in this file; it has: placement"))
      << one.err;
}

TEST(TableCommandTest, NonGoptAndTruncatedFilesAreClearErrors) {
  const std::string not_gopt = kData + "/results/not_gopt.h5";
  auto r = run_command(kGopt + " table " + not_gopt);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "gopt: error: " + not_gopt + ": not a gopt results file")) << r.err;
  const std::string truncated = kData + "/results/truncated.h5";
  auto t = run_command(kGopt + " table " + truncated);
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_TRUE(contains(t.err, "gopt: error: " + truncated + ": ")) << t.err;
  EXPECT_TRUE(contains(t.err, "truncated")) << t.err;
  auto missing = run_command(kGopt + " table " + kData + "/results/none.h5");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "none.h5: no such file")) << missing.err;
}

}  // namespace
}  // namespace gopt::experiments

namespace gopt::experiments {
namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A copy of the fixture with garbage over its superblock (after the 8-byte signature).
std::string damaged_fixture(const std::string& name) {
  auto dir = gopt::testing::make_temp_dir("gopt_damaged_" + name);
  const std::string path = (std::filesystem::path(dir) / (name + ".h5")).string();
  std::filesystem::copy_file(kData + "/results/fixture.h5", path,
                             std::filesystem::copy_options::overwrite_existing);
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(8);
  f.write("\xa5\xa5\xa5\xa5\xa5\xa5\xa5\xa5", 8);
  return path;
}

// Issue #32: `gopt table` printed "No results" and exited 0 on a damaged superblock, and
// `gopt run --resume` changed a damaged file before failing.
TEST(TableCommandTest, ADamagedFileExitsOneNamingTheProblem) {
  const auto path = damaged_fixture("table");
  auto r = run_command(kGopt + " table " + path);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(contains(r.err, "gopt: error: " + path + ": ")) << r.err;
  EXPECT_TRUE(contains(r.err, "damaged")) << r.err;
  EXPECT_FALSE(contains(r.out, "No results")) << r.out;
}

TEST(RunCommandTest, ResumeRefusesADamagedFileUntouchedAndSaysHowToRecover) {
  const auto path = damaged_fixture("resume");
  const std::string before = bytes_of(path);
  auto r =
      run_command(kGopt + " run " + kData + "/results/fixture.yaml --out " + path + " --resume");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, path + ": ")) << r.err;
  EXPECT_TRUE(contains(r.err, "damaged")) << r.err;
  EXPECT_TRUE(contains(r.err, "--overwrite")) << r.err;
  EXPECT_TRUE(contains(r.err, "new file")) << r.err;
  EXPECT_EQ(bytes_of(path), before) << "the damaged file was modified";
}

}  // namespace
}  // namespace gopt::experiments
