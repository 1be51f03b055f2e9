// `gopt table`'s Table 3 (multitask) on a small in-memory results fixture: references found
// by agent type, every variant against both, multi-task GO against the best single task and
// the best two-task variant, OOM and missing cells, and the average row.
#include "experiments/tables.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
                                        "go_multitask vs best single task"};
  EXPECT_EQ(t.header, header);
  ASSERT_EQ(t.rows.size(), 3U);
  EXPECT_EQ(t.rows[0],
            (std::vector<std::string>{"w1", "80.000", "100.000", "+25.0%", "+40.0%", "+15.0%",
                                      "+32.0%", "+40.0%", "+52.0%", "+20.0%"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"w2", "100.000", "200.000", "OOM", "OOM", "+20.0%",
                                                 "+60.0%", "+40.0%", "+70.0%", "+25.0%"}));
  // Averages over the workloads where both have a time (go_placement: w1 only).
  EXPECT_EQ(t.rows[2], (std::vector<std::string>{"average", "", "", "+25.0%", "+40.0%", "+17.5%",
                                                 "+46.0%", "+40.0%", "+61.0%", "+22.5%"}));
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
  ASSERT_GE(t.header.size(), 2U);
  EXPECT_EQ(t.header.back(), "joint vs best two tasks");
  EXPECT_EQ(t.header[t.header.size() - 2], "joint vs single GPU");  // no single-task agents
  ASSERT_EQ(t.rows.size(), 3U);
  EXPECT_EQ(t.rows[0].back(), "-10.0%");  // 44 against pf's 40
  EXPECT_EQ(t.rows[1].back(), "+20.0%");  // 48 against ps's 60
  EXPECT_EQ(t.rows[2].back(), "+5.0%");
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
  EXPECT_EQ(p.rows[0], (std::vector<std::string>{"w1", "80.000", "100.000", "-", "-"}));
  EXPECT_EQ(p.rows[2], (std::vector<std::string>{"average", "", "", "+50.0%", "+60.0%"}));
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
  const std::vector<std::string> header = {"workload",    "human_expert (ms)", "hdp (ms)",
                                           "go_one (ms)", "best GO",           "vs human_expert",
                                           "vs hdp"};
  EXPECT_EQ(t.header, header);
  ASSERT_FALSE(t.rows.empty());
  EXPECT_EQ(t.rows[0][4], "go_one");
  EXPECT_EQ(t.rows[0][5], "+25.0%");
  EXPECT_EQ(t.rows[0][6], "+40.0%");
}

}  // namespace
}  // namespace gopt::experiments
