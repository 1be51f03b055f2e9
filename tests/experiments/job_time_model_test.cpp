// The ETA's job-time model: a prior from graph size, learning and budget, corrected by the
// jobs that finished.
#include "experiments/job_time_model.h"

#include <gtest/gtest.h>

namespace gopt::experiments {
namespace {

JobCost learner(const char* agent, double nodes, std::int64_t steps) {
  return JobCost{agent, nodes, true, steps};
}
JobCost baseline(const char* agent, double nodes) { return JobCost{agent, nodes, false, 0}; }

TEST(JobTimeModelTest, BeforeAnyJobTheModelGrowsWithOpsAndUpdates) {
  JobTimeModel m;
  EXPECT_TRUE(m.empty());
  const double small = m.expected_s(learner("go_one", 1000, 100));
  EXPECT_DOUBLE_EQ(small, 1000 * 100 * JobTimeModel::kLearnerPriorSecondsPerWork);
  EXPECT_DOUBLE_EQ(m.expected_s(learner("go_one", 4000, 100)), 4 * small);
  EXPECT_DOUBLE_EQ(m.expected_s(learner("go_one", 1000, 300)), 3 * small);
  EXPECT_DOUBLE_EQ(m.expected_s(baseline("metis", 1000)),
                   1000 * JobTimeModel::kBaselinePriorSecondsPerWork);
}

TEST(JobTimeModelTest, AnAgentsFinishedJobsSetItsRate) {
  JobTimeModel m;
  m.add(learner("go_one", 1000, 10), 10);
  m.add(learner("go_one", 3000, 10), 50);  // together: 60 s over 40,000 op-updates
  EXPECT_FALSE(m.empty());
  EXPECT_DOUBLE_EQ(m.expected_s(learner("go_one", 4000, 10)), 60);
  EXPECT_DOUBLE_EQ(m.expected_s(learner("go_one", 4000, 20)), 120);   // twice the budget
  EXPECT_DOUBLE_EQ(m.expected_s(learner("go_one", 20000, 10)), 300);  // a larger graph
}

// The bug this model replaced: fast baselines finishing first made every learner look as
// cheap per op as a baseline ("ETA 0:00" with 14 of 18 jobs left).
TEST(JobTimeModelTest, FinishedBaselinesDoNotMakeLearnersLookCheap) {
  JobTimeModel m;
  const JobCost hdp = learner("hdp", 4000, 100);
  const double prior = m.expected_s(hdp);
  // Baselines ran twice as fast as their prior: the machine factor applies to baselines.
  m.add(baseline("metis", 4000), 0.5 * 4000 * JobTimeModel::kBaselinePriorSecondsPerWork);
  EXPECT_DOUBLE_EQ(m.expected_s(baseline("heft", 8000)),
                   0.5 * 8000 * JobTimeModel::kBaselinePriorSecondsPerWork);
  // A learner is still projected as a learner (the only class factor known scales it).
  EXPECT_DOUBLE_EQ(m.expected_s(hdp), 0.5 * prior);
  EXPECT_GT(m.expected_s(hdp), 1000 * m.expected_s(baseline("heft", 4000)));
  // Once a learner finished 3x slower than its prior, other learners follow it.
  m.add(learner("go_one", 1000, 100), 3 * 1000 * 100 * JobTimeModel::kLearnerPriorSecondsPerWork);
  EXPECT_DOUBLE_EQ(m.expected_s(hdp), 3 * prior);
}

}  // namespace
}  // namespace gopt::experiments
