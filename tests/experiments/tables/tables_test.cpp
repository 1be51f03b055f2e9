// `gopt table`'s Table 3 (multitask) on a small in-memory results fixture: references found
// by agent type, every variant against both, multi-task GO against the best single task and
// the best two-task variant, OOM and missing cells, and the average row.
#include "experiments/tables/tables.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "agents/cpu_numerics.h"
#include "experiments/results/provenance.h"

namespace gopt::experiments {
namespace {

struct Row {
  std::string workload;
  std::string agent;
  std::string type;
  double step_ms;  // < 0: OOM
};

ResultsFile fixture(const std::vector<Row>& rows) {
  ResultsFile file;
  file.metadata.table = "multitask";
  std::int64_t order = 0;
  for (const auto& r : rows) {
    RunResult result;
    result.key = {r.workload, r.agent, 1};
    result.order = order++;
    result.agent_type = r.type;
    result.learner = r.type.rfind("go_", 0) == 0;
    result.oom = r.step_ms < 0;
    result.best_step_time_s = r.step_ms < 0 ? 0 : r.step_ms * 1e-3;
    file.results.push_back(result);
  }
  return file;
}

const Table& multitask(const std::vector<Table>& tables) {
  for (const auto& t : tables) {
    if (t.id == "multitask") return t;
  }
  ADD_FAILURE() << "no multitask table";
  static const Table kNone;
  return kNone;
}

TEST(MultitaskTableTest, EveryVariantAgainstTfDefaultSingleGpuAndTheBestSingleTask) {
  auto tables = build_tables(fixture({
      {"w1", "single_device", "single_device", 100},
      {"w1", "tf_default", "tf_default", 80},
      {"w1", "go_placement", "go_placement", 60},
      {"w1", "go_fusion", "go_fusion", 68},
      {"w1", "go_multitask", "go_multitask", 48},
      {"w2", "single_device", "single_device", 200},
      {"w2", "tf_default", "tf_default", 100},
      {"w2", "go_placement", "go_placement", -1},  // OOM: not a candidate for best single task
      {"w2", "go_fusion", "go_fusion", 80},
      {"w2", "go_multitask", "go_multitask", 60},
  }));
  const Table& t = multitask(tables);
  const std::vector<std::string> header{"workload",
                                        "TF default (ms)",
                                        "single GPU (ms)",
                                        "go_placement vs TF default",
                                        "go_placement vs single GPU",
                                        "go_fusion vs TF default",
                                        "go_fusion vs single GPU",
                                        "go_multitask vs TF default",
                                        "go_multitask vs single GPU",
                                        "go_multitask vs best single task",
                                        "best baseline",
                                        "best baseline (ms)",
                                        "go_placement vs best baseline",
                                        "go_fusion vs best baseline",
                                        "go_multitask vs best baseline"};
  EXPECT_EQ(t.header, header);
  ASSERT_EQ(t.rows.size(), 3U);
  EXPECT_EQ(t.rows[0],
            (std::vector<std::string>{"w1", "80.000", "100.000", "+25.0%", "+40.0%", "+15.0%",
                                      "+32.0%", "+40.0%", "+52.0%", "+20.0%", "tf_default",
                                      "80.000", "+25.0%", "+15.0%", "+40.0%"}));
  EXPECT_EQ(t.rows[1],
            (std::vector<std::string>{"w2", "100.000", "200.000", "OOM", "OOM", "+20.0%", "+60.0%",
                                      "+40.0%", "+70.0%", "+25.0%", "tf_default", "100.000", "OOM",
                                      "+20.0%", "+40.0%"}));
  // Averages over the workloads where both have a time (go_placement: w1 only).
  EXPECT_EQ(t.rows[2], (std::vector<std::string>{"average", "", "", "+25.0%", "+40.0%", "+17.5%",
                                                 "+46.0%", "+40.0%", "+61.0%", "+22.5%", "", "",
                                                 "+25.0%", "+17.5%", "+40.0%"}));
  // The summary under the table says both averages of multi-task GO.
  bool summary = false;
  for (const auto& n : t.notes) {
    summary = summary || n.find(
                             "Summary: go_multitask is +40.0% vs TF default on average (the "
                             "paper's comparison) and +40.0% vs the best baseline of each "
                             "workload, ahead of it on 2 of 2 workloads.") != std::string::npos;
  }
  EXPECT_TRUE(summary);
  const std::string md = render_tables(tables, TableFormat::kMarkdown);
  EXPECT_NE(md.find("| go_multitask vs best single task |"), std::string::npos) << md;
}

TEST(MultitaskTableTest, MultitaskAgainstTheBestTwoTaskVariant) {
  auto tables = build_tables(fixture({
      {"w1", "single_device", "single_device", 100},
      {"w1", "tf_default", "tf_default", 80},
      {"w1", "ps", "go_placement_scheduling", 50},
      {"w1", "pf", "go_placement_fusion", 40},
      {"w1", "joint", "go_multitask", 44},
      {"w2", "single_device", "single_device", 100},
      {"w2", "tf_default", "tf_default", 80},
      {"w2", "ps", "go_placement_scheduling", 60},
      {"w2", "pf", "go_placement_fusion", -1},  // OOM: not a candidate for the best pair
      {"w2", "joint", "go_multitask", 48},
  }));
  const Table& t = multitask(tables);
  const auto column = static_cast<std::size_t>(
      std::find(t.header.begin(), t.header.end(), "joint vs best two tasks") - t.header.begin());
  ASSERT_LT(column, t.header.size());
  EXPECT_EQ(t.header[column - 1], "joint vs single GPU");  // no single-task agents
  ASSERT_EQ(t.rows.size(), 3U);
  EXPECT_EQ(t.rows[0][column], "-10.0%");  // 44 against pf's 40
  EXPECT_EQ(t.rows[1][column], "+20.0%");  // 48 against ps's 60
  EXPECT_EQ(t.rows[2][column], "+5.0%");
  bool noted = false;
  for (const auto& n : t.notes) noted = noted || n.find("vs best two tasks") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(MultitaskTableTest, BaselinesOnlyAndAnOlderFileWithALabelledTfDefault) {
  // tf_default as a label on another agent (older configs), a missing result, one workload.
  auto tables = build_tables(fixture({
      {"w1", "tf_default", "human_expert", 50},
      {"w1", "gpu", "single_device", 40},
      {"w1", "heft", "heft", 45},
      {"w1", "m_etf", "m_etf", 55},
  }));
  const Table& t = multitask(tables);
  EXPECT_EQ(t.header, (std::vector<std::string>{"workload", "TF default (ms)", "single GPU (ms)",
                                                "heft vs TF default", "heft vs single GPU",
                                                "m_etf vs TF default", "m_etf vs single GPU"}));
  ASSERT_EQ(t.rows.size(), 1U);  // no average row for one workload
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"w1", "50.000", "40.000", "+10.0%", "-12.5%",
                                                 "-10.0%", "-37.5%"}));
}

TEST(MultitaskTableTest, MissingReferencesAreNamedInANote) {
  auto tables = build_tables(fixture({{"w1", "heft", "heft", 45}, {"w2", "heft", "heft", 40}}));
  const Table& t = multitask(tables);
  EXPECT_EQ(t.header, (std::vector<std::string>{"workload"}));
  ASSERT_FALSE(t.notes.empty());
  EXPECT_NE(t.notes[0].find("add a tf_default agent"), std::string::npos) << t.notes[0];
  // A missing cell is "-", not a number.
  auto partial = build_tables(fixture({
      {"w1", "single_device", "single_device", 100},
      {"w1", "tf_default", "tf_default", 80},
      {"w2", "single_device", "single_device", 100},
      {"w2", "tf_default", "tf_default", 80},
      {"w2", "go_multitask", "go_multitask", 40},
  }));
  const Table& p = multitask(partial);
  EXPECT_EQ(p.rows[0], (std::vector<std::string>{"w1", "80.000", "100.000", "-", "-", "tf_default",
                                                 "80.000", "-"}));
  EXPECT_EQ(p.rows[2],
            (std::vector<std::string>{"average", "", "", "+50.0%", "+60.0%", "", "", "+50.0%"}));
}

TEST(PlacementTableTest, GoAgentsAreComparedWithEveryOtherAgentHdpIncluded) {
  auto file = fixture({
      {"w1", "human_expert", "human_expert", 100},
      {"w1", "hdp", "hdp", 125},
      {"w1", "go_one", "go_one", 75},
  });
  file.metadata.table = "placement";
  file.results[1].learner = true;  // hdp learns, but GO is the subject
  auto tables = build_tables(file);
  ASSERT_FALSE(tables.empty());
  const Table& t = tables.front();
  ASSERT_EQ(t.id, "placement");
  const std::vector<std::string> header = {"workload",
                                           "human_expert (ms)",
                                           "hdp (ms)",
                                           "go_one (ms)",
                                           "best GO",
                                           "vs human_expert",
                                           "vs hdp",
                                           "best baseline",
                                           "best baseline (ms)",
                                           "go_one vs best baseline"};
  EXPECT_EQ(t.header, header);
  ASSERT_FALSE(t.rows.empty());
  EXPECT_EQ(t.rows[0],
            (std::vector<std::string>{"w1", "100.000", "125.000", "75.000", "go_one", "+25.0%",
                                      "+40.0%", "human_expert", "100.000", "+25.0%"}));
}

// Sets the recorded bounds of every result of `workload`: critical path, work, tight bound.
void set_bounds(ResultsFile& file, const std::string& workload, double cp_ms, double work_ms,
                double bound_ms) {
  for (auto& r : file.results) {
    if (r.key.workload != workload) continue;
    r.lower_bound_critical_path_s = cp_ms * 1e-3;
    r.lower_bound_work_s = work_ms * 1e-3;
    r.lower_bound_s = bound_ms * 1e-3;
  }
}

const Table& table_with_id(const std::vector<Table>& tables, const std::string& id) {
  for (const auto& t : tables) {
    if (t.id == id) return t;
  }
  ADD_FAILURE() << "no " << id << " table";
  static const Table kNone;
  return kNone;
}

bool has_note(const Table& t, const std::string& text) {
  for (const auto& n : t.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(PlacementTableTest, BestBaselinePerWorkloadAndEachGoAgentAgainstIt) {
  // w1: METIS is the best baseline (90), GO-one beats it; w2: the search reference is the
  // best baseline (50) and beats GO-one (55); w3: the expert is OOM, HDP best (200).
  auto file = fixture({
      {"w1", "human_expert", "human_expert", 120},
      {"w1", "metis", "metis", 90},
      {"w1", "search", "annealing", 95},
      {"w1", "go_one", "go_one", 72},
      {"w1", "go_b", "go_one", 99},
      {"w2", "human_expert", "human_expert", 100},
      {"w2", "metis", "metis", 80},
      {"w2", "search", "annealing", 50},
      {"w2", "go_one", "go_one", 55},
      {"w2", "go_b", "go_one", -1},
      {"w3", "human_expert", "human_expert", -1},
      {"w3", "metis", "metis", 250},
      {"w3", "search", "annealing", 200},
      {"w3", "go_one", "go_one", 150},
      {"w3", "go_b", "go_one", 210},
  });
  file.metadata.table = "placement";
  const auto tables = build_tables(file);
  const Table& t = table_with_id(tables, "placement");
  const std::vector<std::string> tail = {"best baseline", "best baseline (ms)",
                                         "go_one vs best baseline", "go_b vs best baseline"};
  ASSERT_GE(t.header.size(), tail.size());
  EXPECT_EQ(std::vector<std::string>(t.header.end() - 4, t.header.end()), tail);
  ASSERT_EQ(t.rows.size(), 4U);
  auto last4 = [](const std::vector<std::string>& row) {
    return std::vector<std::string>(row.end() - 4, row.end());
  };
  EXPECT_EQ(last4(t.rows[0]), (std::vector<std::string>{"metis", "90.000", "+20.0%", "-10.0%"}));
  EXPECT_EQ(last4(t.rows[1]), (std::vector<std::string>{"search", "50.000", "-10.0%", "OOM"}));
  EXPECT_EQ(last4(t.rows[2]), (std::vector<std::string>{"search", "200.000", "+25.0%", "-5.0%"}));
  // Averages: go_one (20 - 10 + 25) / 3, go_b (-10 - 5) / 2.
  EXPECT_EQ(last4(t.rows[3]), (std::vector<std::string>{"", "", "+11.7%", "-7.5%"}));
  // The paper's column (vs the expert) averages w1 and w2: (40 + 45) / 2; best GO vs the
  // best baseline: 20, -10, 25 (go_one is the best GO agent everywhere).
  EXPECT_TRUE(has_note(t,
                       "Summary: the best GO agent is +42.5% vs human_expert on average (the "
                       "paper's comparison) and +11.7% vs the best baseline of each workload, "
                       "ahead of it on 2 of 3 workloads; +30.4% vs the best of the paper's "
                       "baselines (the search reference left out), ahead on 3 of 3."))
      << t.notes.back();
  // go_b against METIS, the best paper baseline: w1 -10%, w2 out of memory, w3 +16%.
  EXPECT_TRUE(has_note(t,
                       "+3.0% vs the best of the paper's baselines (the search reference "
                       "left out), ahead on 1 of 2."));
  EXPECT_TRUE(has_note(t, "Summary: go_b is"));
  // csv carries the same cells.
  const std::string csv = render_tables({t}, TableFormat::kCsv);
  EXPECT_NE(csv.find("w2,100.000,80.000,50.000,55.000,OOM,"), std::string::npos) << csv;
}

TEST(BoundsTableTest, BoundsAndGapsPerAgent) {
  auto file = fixture({
      {"w1", "human_expert", "human_expert", 120},
      {"w1", "go_one", "go_one", 60},
      {"w2", "human_expert", "human_expert", -1},
      {"w2", "go_one", "go_one", 90},
  });
  file.metadata.table = "placement";
  set_bounds(file, "w1", 30, 40, 50);  // the tight bound 50 > max(30, 40)
  set_bounds(file, "w2", 45, 20, 0);   // an older file: no tight bound, max(45, 20) = 45
  const auto tables = build_tables(file);
  const Table& t = table_with_id(tables, "placement_bounds");
  EXPECT_EQ(t.header,
            (std::vector<std::string>{"workload", "bound (ms)", "max(critical path, work) (ms)",
                                      "human_expert gap", "go_one gap", "best / bound"}));
  ASSERT_EQ(t.rows.size(), 3U);
  EXPECT_EQ(t.rows[0],
            (std::vector<std::string>{"w1", "50.000", "40.000", "2.40x", "1.20x", "1.20x"}));
  EXPECT_EQ(t.rows[1],
            (std::vector<std::string>{"w2", "45.000", "45.000", "OOM", "2.00x", "2.00x"}));
  EXPECT_EQ(t.rows[2], (std::vector<std::string>{"average", "", "", "2.40x", "1.60x", "1.60x"}));
  EXPECT_TRUE(has_note(t, "provably optimal"));
}

// The expert (100 ms), HDP (90) and GO-one (70) on one workload, with learning curves:
// hdp reaches 90 at 400 samples; go_one 95 at 17, 88 at 34, 70 at 51.
ResultsFile convergence_fixture() {
  auto file = fixture({
      {"w1", "human_expert", "human_expert", 100},
      {"w1", "hdp", "hdp", 90},
      {"w1", "go_one", "go_one", 70},
  });
  file.metadata.table = "placement";
  using P = agents::LearningCurvePoint;
  file.results[1].learning_curve = {P{1, 200, 0.120, 0, 0}, P{2, 400, 0.090, 0, 0}};
  file.results[1].samples = 401;
  file.results[2].learning_curve = {P{1, 17, 0.095, 0, 0}, P{2, 34, 0.088, 0, 0},
                                    P{3, 51, 0.070, 0, 0}};
  file.results[2].samples = 52;
  return file;
}

TEST(ConvergenceTableTest, SamplesToHdpExpertAndBestBaseline) {
  const auto tables = build_tables(convergence_fixture());
  const Table& t = table_with_id(tables, "convergence");
  EXPECT_EQ(t.header,
            (std::vector<std::string>{"workload", "agent", "samples", "hdp final best (ms)",
                                      "samples to hdp final best", "human_expert (ms)",
                                      "samples to human_expert", "best baseline + 5% (ms)",
                                      "samples to best baseline + 5%"}));
  ASSERT_EQ(t.rows.size(), 2U);
  // The best baseline is HDP (90); +5%: 94.5 ms.
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"w1", "hdp", "401", "90.000", "400", "100.000",
                                                 "400", "94.500", "400"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"w1", "go_one", "52", "90.000", "34", "100.000",
                                                 "17", "94.500", "34"}));
}

// With the samples that improved each best recorded, the count is to the sample that
// reached the target, not to the end of its update; results without them (older files) keep
// the update's count, and a note says so.
TEST(ConvergenceTableTest, CountsToTheSampleThatReachedTheTarget) {
  auto file = convergence_fixture();
  file.results[1].best_improvements = {{1, 0.150}, {150, 0.120}, {230, 0.090}};
  file.results[2].best_improvements = {{2, 0.099}, {9, 0.095}, {20, 0.088}, {50, 0.070}};
  auto t = table_with_id(build_tables(file), "convergence");
  ASSERT_EQ(t.rows.size(), 2U);
  // HDP reached its 90 (and 94.5) at sample 230; go_one the expert's 100 at sample 2 and
  // 94.5 and 90 at 20 (its curve says 17 and 34).
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"w1", "hdp", "401", "90.000", "230", "100.000",
                                                 "230", "94.500", "230"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"w1", "go_one", "52", "90.000", "20", "100.000",
                                                 "2", "94.500", "20"}));
  EXPECT_FALSE(has_note(t, "before samples were counted one by one"));

  file.results[1].best_improvements.clear();  // HDP from an older file
  t = table_with_id(build_tables(file), "convergence");
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"w1", "hdp", "401", "90.000", "400", "100.000",
                                                 "400", "94.500", "400"}));
  EXPECT_TRUE(has_note(t, "before samples were counted one by one"));
}

TEST(ConvergenceTableTest, NeverAndPartialSeedsAreSaid) {
  ResultsFile file;
  file.metadata.table = "placement";
  auto add = [&](std::uint64_t seed, const std::string& agent, const std::string& type, double ms,
                 std::vector<agents::LearningCurvePoint> curve) {
    RunResult r;
    r.key = {"w1", agent, seed};
    r.order = static_cast<std::int64_t>(file.results.size());
    r.agent_type = type;
    r.learner = !curve.empty();
    r.oom = ms < 0;
    r.best_step_time_s = ms < 0 ? 0 : ms * 1e-3;
    r.learning_curve = std::move(curve);
    r.samples = 10;
    file.results.push_back(r);
  };
  using P = agents::LearningCurvePoint;
  add(1, "human_expert", "human_expert", 100, {});
  add(2, "human_expert", "human_expert", 100, {});
  add(1, "hdp", "hdp", -1, {P{1, 4, 1e9, 0, 0}});  // OOM in seed 1: no HDP target there
  add(2, "hdp", "hdp", 80, {P{1, 4, 0.080, 0, 0}});
  add(1, "go_one", "go_one", 90, {P{1, 5, 0.090, 0, 0}});
  add(2, "go_one", "go_one", 120, {P{1, 5, 0.120, 0, 0}});
  const auto tables = build_tables(file);
  const Table& t = table_with_id(tables, "convergence");
  ASSERT_EQ(t.rows.size(), 2U);
  // go_one: HDP's best (seed 2 only, 80) never reached; the expert reached in seed 1 only.
  EXPECT_EQ(t.rows[1],
            (std::vector<std::string>{"w1", "go_one", "10", "80.000", "never", "100.000",
                                      "5 (1 of 2 seeds)", "94.500", "5 (1 of 2 seeds)"}));
}

}  // namespace
}  // namespace gopt::experiments

namespace gopt::experiments {
namespace {

// Jobs still training get their own table, with their state as a reader should see it.
TEST(RunningTableTest, ShowsEachJobsCurveSoFarAndWhetherItStillRuns) {
  ResultsFile file = fixture({{"w1", "single_device", "single_device", 100}});
  file.metadata.table = "placement";
  RunningJob live;
  live.rows = {{"w1", "go_one", 1}};
  live.agent_type = "go_one";
  live.max_steps = 200;
  live.updated = "2026-11-24T12:00:00Z";
  live.host = "elsewhere";  // another machine: its process cannot be checked from here
  live.pid = 1;
  live.learning_curve = {{1, 17, 0.090, 0.120, 1}, {2, 34, 0.080, 0.100, 2}};
  RunningJob gone = live;
  gone.rows = {{"w1", "go_pretrain", 1}, {"w2", "go_pretrain", 1}};
  gone.host = host_name();
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // reaped: no process has this pid now
  gone.pid = child;
  RunningJob stopped = live;
  stopped.rows = {{"w2", "go_one", 1}};
  stopped.state = "stopped";
  stopped.learning_curve.clear();
  file.running = {live, gone, stopped};
  const auto tables = build_tables(file);
  const auto it =
      std::find_if(tables.begin(), tables.end(), [](const Table& t) { return t.id == "running"; });
  ASSERT_NE(it, tables.end());
  ASSERT_EQ(it->rows.size(), 3u);
  EXPECT_EQ(it->rows[0], (std::vector<std::string>{"w1", "go_one", "1", "running", "2 of 200", "34",
                                                   "80.000", "100.000", "2026-11-24T12:00:00Z"}));
  EXPECT_EQ(it->rows[1][0], "pretraining on 2 graphs (w1, w2)");
  EXPECT_EQ(it->rows[1][3], "not running: its process " + std::to_string(child) +
                                " is gone (--resume continues it)");
  EXPECT_EQ(it->rows[2][3], "stopped (--resume continues it)");
  EXPECT_EQ(it->rows[2][4], "0 of 200");
  // The finished results' tables are still there.
  EXPECT_TRUE(std::any_of(tables.begin(), tables.end(),
                          [](const Table& t) { return t.id == "placement"; }));
}

// No warning for what is normal: agents with different budgets, one revision, and files
// without provenance (format version 1); a warning once one agent's rows differ.
TEST(ProvenanceWarningsTest, OnlyMixedRevisionsOrOneAgentsMixedBudgetsWarn) {
  auto file = fixture({{"w1", "hdp", "hdp", 10},
                       {"w2", "hdp", "hdp", 10},
                       {"w1", "go_one", "go_one", 10},
                       {"w1", "metis", "metis", 10}});
  EXPECT_TRUE(provenance_warnings(file).empty());  // no provenance at all
  for (auto& r : file.results) {
    r.provenance.git_revision = "abc1234";
    if (r.key.agent != "metis") r.budget = agents::TrainBudget().with_max_steps(100);
  }
  file.results[2].budget = agents::TrainBudget().with_max_steps(1000);  // go_one: its own budget
  EXPECT_TRUE(provenance_warnings(file).empty());

  file.results[1].budget =
      agents::TrainBudget().with_max_steps(100).with_max_samples(400).with_max_seconds(1.5);
  auto warnings = provenance_warnings(file);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "agent hdp trained under 2 budgets, so its results are not comparable with each "
            "other: steps 100 (1 result); steps 100, samples 400, seconds 1.5 (1 result)");
}

// A learner trained on another CPU code path (OpenBLAS's kernels for another CPU, say)
// may have followed another path: a warning; a baseline on another path is the same result.
TEST(ProvenanceWarningsTest, LearnersOnMixedCpuPathsWarn) {
  auto file =
      fixture({{"w1", "hdp", "hdp", 10}, {"w2", "hdp", "hdp", 10}, {"w1", "metis", "metis", 10}});
  for (auto& r : file.results) {
    r.provenance.cpu_numerics = "OpenBLAS SkylakeX";
    r.learner = r.key.agent == "hdp";
  }
  file.results[2].provenance.cpu_numerics = "OpenBLAS Cooperlake";  // metis: no learner
  EXPECT_TRUE(provenance_warnings(file).empty());
  file.results[1].provenance.cpu_numerics = "OpenBLAS Cooperlake";
  const auto warnings = provenance_warnings(file);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "the learners' results come from 2 CPU code paths, whose float rounding sends "
            "training along different paths (docs/agents.md \"Determinism and CPU code "
            "paths\"): OpenBLAS SkylakeX (1 result); OpenBLAS Cooperlake (1 result)");
}

// Continuing a file on other CPU code paths than its learners ran on (a machine whose
// OpenBLAS picks other kernels): `gopt run --resume` warns, naming the environment that
// forces the file's paths.
TEST(ProvenanceWarningsTest, ResumingOnOtherCpuPathsNamesTheEnvironmentThatForcesTheFiles) {
  const std::string cooperlake = "gopt kernels avx512 (native); ATen AVX2; OpenBLAS Cooperlake";
  const std::string skylake = "gopt kernels avx512 (native); ATen AVX2; OpenBLAS SkylakeX";
  EXPECT_EQ(agents::cpu_numerics_environment(cooperlake),
            "GOPT_CPU_KERNEL=avx512 ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Cooperlake");
  EXPECT_EQ(agents::cpu_numerics_environment(
                "gopt kernels baseline (forced); ATen default; OpenBLAS unknown"),
            "GOPT_CPU_KERNEL=baseline ATEN_CPU_CAPABILITY=default");
  // As LibTorch names its default path on x86: the environment still forces it.
  EXPECT_EQ(agents::cpu_numerics_environment(
                "gopt kernels baseline (native); ATen NO AVX; OpenBLAS Prescott"),
            "GOPT_CPU_KERNEL=baseline ATEN_CPU_CAPABILITY=default OPENBLAS_CORETYPE=Prescott");

  auto file = fixture({{"w1", "hdp", "hdp", 10},
                       {"w2", "hdp", "hdp", 10},
                       {"w3", "hdp", "hdp", 10},
                       {"w1", "metis", "metis", 10}});
  for (auto& r : file.results) {
    r.provenance.cpu_numerics = cooperlake;
    r.learner = r.key.agent == "hdp";
  }
  file.results[2].provenance.cpu_numerics = "OpenBLAS Haswell";
  file.results[3].provenance.cpu_numerics = skylake;  // metis: no learner
  const std::string warning = cpu_path_warning("t.h5", file.results, skylake);
  EXPECT_NE(warning.find("t.h5: its learners' results ran on CPU code paths '" + cooperlake +
                         "' (2 results), this process runs on '" + skylake + "'"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("run with GOPT_CPU_KERNEL=avx512 ATEN_CPU_CAPABILITY=avx2 "
                         "OPENBLAS_CORETYPE=Cooperlake\n"),
            std::string::npos)
      << warning;
  EXPECT_EQ(cpu_path_warning("t.h5", file.results, cooperlake), "");  // the file's own
  EXPECT_EQ(cpu_path_warning("t.h5", file.results, "OpenBLAS Haswell"), "");
  for (auto& r : file.results) r.learner = false;
  EXPECT_EQ(cpu_path_warning("t.h5", file.results, skylake), "");  // no learners
}

}  // namespace
}  // namespace gopt::experiments
