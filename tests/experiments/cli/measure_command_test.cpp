// `gopt measure` end to end on the CPU backend: a tiny experiment run on a quick measured
// profile of this machine (two workers, graphs of a few dozen ops), its decisions executed,
// the measured fields in the file and the measured tables in `gopt table`; resuming after an
// interruption; refusals of hardware that is not a measured profile of this machine. Never
// asserts a time beyond its being positive.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "core/graph.h"
#include "experiments/results/results_file.h"
#include "experiments/run/measure.h"
#include "experiments/run/measured_reward.h"
#include "hardware/backend/backend.h"
#include "hardware/profile.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

namespace gopt::experiments {
namespace {

using gopt::testing::contains;
using gopt::testing::run_command;

const std::string kGopt = GOPT_BINARY;
const std::string kTiny = std::string(GOPT_SOURCE_DIR) + "/datasets/graphs/mlp_tiny.json";

class MeasureCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = gopt::testing::make_temp_dir("gopt_measure");
    profile_ = dir_ + "/cpu2.yaml";
    calibrate_ =
        run_command(kGopt + " calibrate --backend cpu --devices 2 --quick --out " + profile_);
  }

  // A config of two tiny workloads, three baselines and a short HDP run, two seeds, on
  // `hardware`; run into `name`.h5, whose path it returns.
  static std::string run_tiny(const std::string& name, const std::string& hardware,
                              const std::string& extra = "", int expected_exit = 0) {
    const std::string config = dir_ + "/" + name + ".yaml";
    std::ofstream(config)
        << "name: " << name << "\ntable: placement\nhardware: " << hardware
        << "\nseeds: [1, 2]\nworkloads:\n"
           "  - {name: mlp_tiny, graph: "
        << kTiny
        << "}\n"
           "  - {name: rnnlm, graph: rnnlm_2, set: {hidden: 16, vocab: 50, "
           "batch: 2, seq_len: 2}}\n"
           "agents:\n  - single_device\n  - round_robin\n  - metis\n"
           "  - {name: hdp, options: {samples_per_step: 4}, budget: {steps: 3}}\n";
    const std::string out = dir_ + "/" + name + ".h5";
    last_run_ = run_command(kGopt + " run " + config + " --out " + out + " " + extra);
    EXPECT_EQ(last_run_.exit_code, expected_exit) << last_run_.err;
    return out;
  }

  static std::string measure(const std::string& file, const std::string& extra = "") {
    return kGopt + " measure " + file + " --rounds 2 --warmup 0 --steps 1 " + extra;
  }

  static inline std::string dir_;
  static inline std::string profile_;
  static inline gopt::testing::CommandResult calibrate_;
  static inline gopt::testing::CommandResult last_run_;
};

// Fusion executed: tf_default's rule-based fusion runs as fused groups on the backend, the
// measurement says how many and how, and the simulated time beside it is of the decision
// with its fusion (the result's own).
TEST_F(MeasureCommandTest, FusedDecisionsRunFusedAndSayHow) {
  ASSERT_EQ(calibrate_.exit_code, 0) << calibrate_.err;
  const std::string config = dir_ + "/fused.yaml";
  std::ofstream(config) << "name: fused\ntable: multitask\nhardware: " << profile_
                        << "\nseeds: [1]\nworkloads:\n"
                           "  - {name: rnnlm, graph: rnnlm_2, set: {hidden: 16, vocab: 50, "
                           "batch: 2, seq_len: 2}}\n"
                           "agents:\n  - single_device\n  - tf_default\n";
  const std::string file = dir_ + "/fused.h5";
  const auto run = run_command(kGopt + " run " + config + " --out " + file + " --measure");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const ResultsFile f = read_results_file(file);
  ASSERT_EQ(f.measurements.size(), 2u);
  for (const auto& result : f.results) {
    const Measurement* m = f.measurement(result.key);
    ASSERT_NE(m, nullptr) << result.key.text();
    EXPECT_FALSE(m->fusion_dropped);
    EXPECT_DOUBLE_EQ(m->simulated_step_time_s, result.best_step_time_s) << result.key.text();
    if (result.key.agent == "tf_default") {
      EXPECT_GT(m->fused_groups, 0);
      EXPECT_GE(m->fused_ops, 2 * m->fused_groups);
      EXPECT_GT(m->fused_loop_ops, 0);
      EXPECT_LE(m->fused_loop_ops, m->fused_ops);
    } else {
      EXPECT_EQ(m->fused_groups, 0);
      EXPECT_EQ(m->fused_ops, 0);
    }
  }
}

TEST_F(MeasureCommandTest, WritesMeasuredBesideSimulatedAndTablesShowThem) {
  ASSERT_EQ(calibrate_.exit_code, 0) << calibrate_.err;
  const std::string file = run_tiny("measured", profile_);
  const auto r = run_command(measure(file));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "16 results measured")) << r.err;
  // The baselines decide the same for both seeds: those run once.
  EXPECT_TRUE(contains(r.err, "identical")) << r.err;

  const ResultsFile f = read_results_file(file);
  ASSERT_EQ(f.measurements.size(), f.results.size());
  for (const auto& result : f.results) {
    const Measurement* m = f.measurement(result.key);
    ASSERT_NE(m, nullptr) << result.key.text();
    EXPECT_GT(m->measured_step_time_s, 0);
    EXPECT_GT(m->simulated_step_time_s, 0);
    EXPECT_GE(m->measured_spread, 0);
    EXPECT_EQ(m->repeats, 2);  // rounds x steps
    EXPECT_EQ(m->rounds, 2);
    ASSERT_EQ(m->step_times_s.size(), 2u);
    for (double t : m->step_times_s) EXPECT_GT(t, 0);
    EXPECT_GT(m->cpu_share, 0);
    EXPECT_FALSE(m->fusion_dropped);
    EXPECT_EQ(m->fused_groups, 0);
    EXPECT_TRUE(contains(m->measured_backend, "cpu: 2 worker")) << m->measured_backend;
    EXPECT_FALSE(m->provenance.host.empty());
    EXPECT_TRUE(contains(m->provenance.command, "gopt measure")) << m->provenance.command;
    EXPECT_EQ(m->format_minor_version, kResultsFormatMinorVersion);
    // No fusion in these decisions: the simulated time of what ran is the result's.
    EXPECT_DOUBLE_EQ(m->simulated_step_time_s, result.best_step_time_s) << result.key.text();
  }

  const auto table = run_command(kGopt + " table " + file);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "Measured on hardware: step time")) << table.out;
  EXPECT_TRUE(contains(table.out, "simulator error")) << table.out;
  EXPECT_TRUE(contains(table.out, "MAPE")) << table.out;
  EXPECT_TRUE(contains(table.out, "the simulated winner against the measured one")) << table.out;
  EXPECT_TRUE(contains(table.out, "of 2 workloads")) << table.out;
  const auto csv = run_command(kGopt + " table " + file + " --table measured_winners --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_TRUE(contains(csv.out, "workload,simulated winner,measured winner,same,Kendall tau"))
      << csv.out;

  // Measured results are kept: a second call measures nothing, --remeasure all again.
  const auto again = run_command(measure(file));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(contains(again.err, "0 results measured")) << again.err;
  EXPECT_TRUE(contains(again.err, "16 measured earlier kept")) << again.err;
  const auto redo = run_command(measure(file, "--remeasure --unpinned"));
  ASSERT_EQ(redo.exit_code, 0) << redo.err;
  EXPECT_TRUE(contains(redo.err, "16 results measured")) << redo.err;
  const ResultsFile remeasured = read_results_file(file);
  ASSERT_EQ(remeasured.measurements.size(), 16u);
  // Pinned by default (where the process may use two CPUs), not with --unpinned.
  for (const auto& m : remeasured.measurements) {
    EXPECT_FALSE(contains(m.measured_backend, "pinned")) << m.measured_backend;
  }
  if (hardware::backend::usable_cpus().size() >= 2) {
    EXPECT_TRUE(contains(f.measurements.front().measured_backend, "pinned to CPUs"))
        << f.measurements.front().measured_backend;
  }
}

// Sets a stop flag as soon as the progress it receives names `word`: an interruption at a
// known point, as Ctrl-C between two executions.
class StopAtWord : public std::stringbuf {
 public:
  StopAtWord(std::atomic<bool>& stop, std::string word) : stop_(stop), word_(std::move(word)) {}

 protected:
  int sync() override {
    if (str().find(word_) != std::string::npos) stop_.store(true);
    return 0;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto written = std::stringbuf::xsputn(s, n);
    sync();
    return written;
  }

 private:
  std::atomic<bool>& stop_;
  std::string word_;
};

// `gopt run --measure`: the run, then `gopt measure` of its file; refused before the run on
// hardware that cannot be measured.
TEST_F(MeasureCommandTest, RunWithMeasureMeasuresWhenTheRunEnds) {
  ASSERT_EQ(calibrate_.exit_code, 0) << calibrate_.err;
  const std::string file = run_tiny("run_measure", profile_, "--measure");
  EXPECT_TRUE(contains(last_run_.err, "16 results measured")) << last_run_.err;
  EXPECT_TRUE(contains(last_run_.out, "--table measured")) << last_run_.out;
  const ResultsFile f = read_results_file(file);
  EXPECT_EQ(f.measurements.size(), f.results.size());
  EXPECT_EQ(f.results.size(), 16u);

  const std::string refused = run_tiny("run_measure_p100", "p100x2_pcie", "--measure", 1);
  EXPECT_TRUE(contains(last_run_.err, "hardware")) << last_run_.err;
  EXPECT_TRUE(contains(last_run_.err, "not one measured on this machine")) << last_run_.err;
  EXPECT_FALSE(std::filesystem::exists(refused));  // nothing ran
  const auto console = run_command(kGopt + " run " + dir_ + "/run_measure.yaml --out - --measure");
  EXPECT_EQ(console.exit_code, 2);
  EXPECT_TRUE(contains(console.err, "--measure needs a results file")) << console.err;
}

// `gopt table --resimulate`: the simulated times beside the measurements come from this
// gopt, on the file's hardware (the recorded ones again) or on another profile of as many
// devices (other ones), without measuring again.
TEST_F(MeasureCommandTest, TablesResimulateTheMeasuredDecisions) {
  ASSERT_EQ(calibrate_.exit_code, 0) << calibrate_.err;
  const std::string file = run_tiny("resimulated", profile_);
  ASSERT_EQ(run_command(measure(file)).exit_code, 0);
  const std::string table = kGopt + " table " + file + " --table measured --format csv";
  const auto recorded = run_command(table);
  ASSERT_EQ(recorded.exit_code, 0) << recorded.err;
  const auto same = run_command(table + " --resimulate");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, recorded.out);
  EXPECT_TRUE(contains(same.err, "re-simulated by gopt")) << same.err;
  EXPECT_TRUE(contains(same.err, "for 16 measurements on 2 workloads")) << same.err;
  const auto other = run_command(table + " --resimulate --hardware p100x2_pcie");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out, recorded.out);  // a P100 is not a CPU worker
  EXPECT_TRUE(contains(other.err, "p100x2_pcie")) << other.err;
  // Refused: another device count, --hardware alone, a file without measurements.
  auto bad = run_command(table + " --resimulate --hardware p100x4_pcie");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, "has 4 devices")) << bad.err;
  bad = run_command(table + " --hardware p100x2_pcie");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, "applies only with --resimulate")) << bad.err;
  const std::string unmeasured = run_tiny("unmeasured", profile_);
  bad = run_command(kGopt + " table " + unmeasured + " --resimulate");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, "no measurements")) << bad.err;
}

// A backend whose step time is a function of the decision's placement: each device's op
// count times 1 ms, the busiest device's. The first execution of a decision listed in
// `lucky` reads 10x faster, as a noisy short measurement may.
class FakeBackend final : public hardware::backend::Backend {
 public:
  std::vector<core::Decision> lucky;
  int executions = 0;
  [[nodiscard]] hardware::backend::BackendKind kind() const override {
    return hardware::backend::BackendKind::kCpu;
  }
  [[nodiscard]] core::DeviceId num_devices() const override { return 2; }
  [[nodiscard]] std::string describe() const override { return "fake"; }
  [[nodiscard]] std::vector<int> worker_cpus() const override { return {}; }
  [[nodiscard]] hardware::backend::ExecutionResult execute(
      const core::Graph& graph, const core::Decision& decision,
      const hardware::backend::ExecutionOptions& options) override {
    ++executions;
    std::vector<int> ops(2, 0);
    for (core::NodeId v = 0; v < graph.num_nodes(); ++v) {
      ++ops[static_cast<std::size_t>(decision.device_of(v))];
    }
    double t = 1e-3 * std::max(ops[0], ops[1]);
    for (auto it = lucky.begin(); it != lucky.end(); ++it) {
      if (it->placement != decision.placement) continue;
      t /= 10;
      lucky.erase(it);
      break;
    }
    hardware::backend::ExecutionResult r;
    r.step_times_s.assign(static_cast<std::size_t>(options.timed_steps), t);
    r.step_time_s = t;
    return r;
  }
};

// The decision a job on measured rewards proposes: the fastest of the agent's own and the
// decisions with the fastest sample times, measured again, so that a decision whose one
// short measurement was lucky does not win.
TEST(MeasuredRewardTest, SelectsTheFastestCandidateMeasuredAgain) {
  core::GraphBuilder b("four");
  for (int i = 0; i < 4; ++i) b.add("op" + std::to_string(i), "Relu").output({16});
  const core::Graph graph = std::move(b).build();
  auto placed = [](std::vector<core::DeviceId> p) {
    core::Decision d;
    d.placement = std::move(p);
    return d;
  };
  const core::Decision one = placed({0, 0, 0, 0});     // 4 ms
  const core::Decision split = placed({0, 0, 1, 1});   // 2 ms
  const core::Decision skewed = placed({0, 0, 0, 1});  // 3 ms, 0.3 ms when lucky
  FakeBackend backend;
  backend.lucky = {skewed};
  MeasuredReward reward(backend, graph, MeasuredRewardOptions().with_final_candidates(2));
  EXPECT_DOUBLE_EQ(reward.step_time_s(one), 4e-3);
  EXPECT_DOUBLE_EQ(reward.step_time_s(split), 2e-3);
  EXPECT_DOUBLE_EQ(reward.step_time_s(skewed), 0.3e-3);  // the fastest sample, by luck
  EXPECT_DOUBLE_EQ(reward.step_time_s(skewed), 0.3e-3);  // from the cache
  EXPECT_EQ(backend.executions, 3);
  // Proposed: the luckiest. Candidates: it and the fastest other sample (split).
  Selection s = reward.select(skewed);
  EXPECT_EQ(s.candidates, 2u);
  EXPECT_TRUE(s.changed);
  EXPECT_EQ(s.decision.placement, split.placement);
  EXPECT_DOUBLE_EQ(s.step_time_s, 2e-3);
  EXPECT_EQ(backend.executions, 3 + 2 * MeasuredRewardOptions().final_rounds);
  // Proposing the fastest keeps it; with more candidates allowed all three are measured.
  MeasuredReward wide(backend, graph);
  (void)wide.step_time_s(one);
  (void)wide.step_time_s(skewed);
  s = wide.select(split);
  EXPECT_EQ(s.candidates, 3u);
  EXPECT_FALSE(s.changed);
  EXPECT_EQ(s.decision.placement, split.placement);
}

// `reward: measured`: a learner whose samples run on the backend, beside its twin on the
// simulator; one job at a time; the result says where its rewards came from, and after
// `gopt measure` the table of measured rewards pairs the two. Refused on hardware that is
// not a measured profile, and for an agent that does not learn.
TEST_F(MeasureCommandTest, TrainsOnMeasuredRewardsBesideItsTwinOnTheSimulator) {
  ASSERT_EQ(calibrate_.exit_code, 0) << calibrate_.err;
  auto write = [&](const std::string& name, const std::string& hardware,
                   const std::string& agents) {
    const std::string config = dir_ + "/" + name + ".yaml";
    std::ofstream(config) << "name: " << name << "\ntable: placement\nhardware: " << hardware
                          << "\nseeds: [1]\nworkloads:\n"
                             "  - {name: rnnlm, graph: rnnlm_2, set: {hidden: 16, vocab: 50, "
                             "batch: 2, seq_len: 2}}\nagents:\n"
                          << agents;
    return config;
  };
  const std::string hdp_pair =
      "  - {name: hdp, options: {samples_per_step: 4}, budget: {steps: 3}}\n"
      "  - {name: hdp_measured, agent: hdp, options: {samples_per_step: 4}, budget: {steps: 3}, "
      "reward: measured}\n";
  const std::string file = dir_ + "/rewards.h5";
  const auto run = run_command(kGopt + " run " + write("rewards", profile_, hdp_pair) + " --out " +
                               file + " --jobs 2 --measure");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(contains(run.err, "one job at a time")) << run.err;
  EXPECT_TRUE(contains(run.err, "measured decisions")) << run.err;
  const ResultsFile f = read_results_file(file);
  ASSERT_EQ(f.results.size(), 2u);
  for (const auto& r : f.results) {
    if (r.key.agent == "hdp_measured") {
      EXPECT_EQ(r.reward, "measured");
      EXPECT_GT(r.reward_executions, 0);
      EXPECT_LE(r.reward_executions, r.samples);
      EXPECT_GT(r.best_step_time_s, 0);
      ASSERT_FALSE(r.learning_curve.empty());
      EXPECT_GT(r.learning_curve.back().best_step_time_s, 0);
    } else {
      EXPECT_EQ(r.reward, "simulated");
      EXPECT_EQ(r.reward_executions, 0);
    }
  }
  const auto table = run_command(kGopt + " table " + file + " --table measured_rewards");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "Trained on measured rewards")) << table.out;
  const auto csv = run_command(kGopt + " table " + file + " --table measured_rewards --format csv");
  EXPECT_TRUE(contains(csv.out, "rnnlm,hdp_measured,hdp,")) << csv.out;
  // The best reward hdp_measured saw in training (9th column) is a time, not "-".
  EXPECT_TRUE(contains(csv.out, "best in training (ms)")) << csv.out;
  const auto row = csv.out.find("rnnlm,hdp_measured,hdp,");
  ASSERT_NE(row, std::string::npos) << csv.out;
  std::vector<std::string> cells;
  std::istringstream line(csv.out.substr(row, csv.out.find('\n', row) - row));
  for (std::string cell; std::getline(line, cell, ',');) cells.push_back(cell);
  ASSERT_EQ(cells.size(), 11u) << csv.out;
  EXPECT_GT(std::stod(cells[8]), 0) << csv.out;

  // Refused before anything runs: simulated hardware, a shared run's absent, a non-learner.
  const std::string refused = dir_ + "/rewards_p100.h5";
  auto r = run_command(kGopt + " run " + write("rewards_p100", "p100x2_pcie", hdp_pair) +
                       " --out " + refused);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "agents.hdp_measured.reward")) << r.err;
  EXPECT_TRUE(contains(r.err, "not one measured on this machine")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(refused));  // nothing ran
  r = run_command(kGopt + " run " +
                  write("rewards_baseline", profile_, "  - {name: metis, reward: measured}\n") +
                  " --out " + dir_ + "/rewards_baseline.h5");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "agents[0].reward")) << r.err;
  EXPECT_TRUE(contains(r.err, "does not learn")) << r.err;
  r = run_command(kGopt + " run " +
                  write("rewards_typo", profile_, "  - {name: hdp, reward: real}\n") + " --out " +
                  dir_ + "/rewards_typo.h5");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "expected 'simulated'")) << r.err;
}

TEST_F(MeasureCommandTest, AnInterruptedMeasureKeepsFinishedWorkloadsAndContinues) {
  ASSERT_EQ(calibrate_.exit_code, 0) << calibrate_.err;
  const std::string file = run_tiny("interrupted", profile_);
  std::atomic<bool> stop{false};
  StopAtWord buffer(stop, "gopt measure: rnnlm");
  std::ostream progress(&buffer);
  const auto options = MeasureOptions()
                           .with_rounds(2)
                           .with_warmup_steps(0)
                           .with_timed_steps(1)
                           .with_progress(&progress)
                           .with_stop(&stop);
  const MeasureSummary first = measure_results(file, options);
  EXPECT_TRUE(first.interrupted);
  EXPECT_EQ(first.measured, 8u);  // mlp_tiny: 4 agents x 2 seeds; rnnlm abandoned
  ResultsFile f = read_results_file(file);
  ASSERT_EQ(f.measurements.size(), 8u);
  for (const auto& m : f.measurements) EXPECT_EQ(m.key.workload, "mlp_tiny");

  stop.store(false);
  std::ostringstream quiet;
  const MeasureSummary second =
      measure_results(file, MeasureOptions(options).with_progress(&quiet).with_stop(nullptr));
  EXPECT_FALSE(second.interrupted);
  EXPECT_EQ(second.measured, 8u);
  EXPECT_EQ(second.kept, 8u);
  f = read_results_file(file);
  EXPECT_EQ(f.measurements.size(), 16u);
}

TEST_F(MeasureCommandTest, RefusesHardwareThatIsNotAMeasuredProfileOfThisMachine) {
  ASSERT_EQ(calibrate_.exit_code, 0) << calibrate_.err;
  // A simulated cluster.
  const std::string simulated = run_tiny("simulated", "p100x2_pcie");
  auto r = run_command(measure(simulated));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, simulated)) << r.err;
  EXPECT_TRUE(contains(r.err, "not one measured on this machine")) << r.err;
  EXPECT_TRUE(read_results_file(simulated).measurements.empty());

  // A measured profile of another machine.
  auto spec = hardware::load_profile(profile_).spec();
  spec.provenance.machine = "elsewhere: Imaginary CPU 9000 (128 logical CPUs)";
  const std::string other = dir_ + "/other_machine.yaml";
  std::ofstream(other) << hardware::profile_yaml(spec);
  const std::string elsewhere = run_tiny("elsewhere", other);
  r = run_command(measure(elsewhere));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "measured on another machine")) << r.err;
  EXPECT_TRUE(contains(r.err, "Imaginary CPU 9000")) << r.err;

  // --profile that is not the file's hardware.
  const std::string file = run_tiny("other_profile", profile_);
  r = run_command(measure(file, "--profile " + other));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "is not the profile its results were simulated on")) << r.err;
  EXPECT_TRUE(read_results_file(file).measurements.empty());
  // The file's own profile given explicitly is accepted.
  r = run_command(measure(file, "--profile " + profile_ + " --backend cpu"));
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // Not a results file; a missing one; a bad number.
  const std::string junk = dir_ + "/junk.h5";
  std::ofstream(junk) << "not hdf5";
  r = run_command(measure(junk));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "not an HDF5 file")) << r.err;
  r = run_command(measure(dir_ + "/missing.h5"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "no such file")) << r.err;
  r = run_command(kGopt + " measure " + file + " --rounds 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "--rounds")) << r.err;
}

}  // namespace
}  // namespace gopt::experiments
