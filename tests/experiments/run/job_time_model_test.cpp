// The ETA's job-time model: a prior from graph size, learning and budget, corrected by the
// jobs that finished.
#include "experiments/run/job_time_model.h"

#include <gtest/gtest.h>

namespace gopt::experiments {
namespace {

constexpr double kFixed = JobTimeModel::kLearnerFixedOps;

JobCost learner(const char* agent, double nodes, std::int64_t steps) {
  return JobCost{agent, nodes, true, steps};
}
JobCost baseline(const char* agent, double nodes) { return JobCost{agent, nodes, false, 0}; }

TEST(JobTimeModelTest, BeforeAnyJobTheModelGrowsWithOpsAndUpdates) {
  JobTimeModel m;
  EXPECT_TRUE(m.empty());
  const double small = m.expected_s(learner("go_one", 1000, 100));
  EXPECT_DOUBLE_EQ(small, (1000 + kFixed) * 100 * JobTimeModel::kLearnerPriorSecondsPerWork);
  EXPECT_DOUBLE_EQ(m.expected_s(learner("go_one", 1000, 300)), 3 * small);
  EXPECT_GT(m.expected_s(learner("go_one", 4000, 100)), small);
  EXPECT_DOUBLE_EQ(m.expected_s(baseline("metis", 1000)),
                   1000 * JobTimeModel::kBaselinePriorSecondsPerWork);
}

TEST(JobTimeModelTest, AnAgentsFinishedJobsSetItsRate) {
  JobTimeModel m;
  m.add(learner("go_one", 1000, 10), 10);
  m.add(learner("go_one", 3000, 10), 20);  // together: 30 s over 10 x (4000 + 2 x fixed)
  EXPECT_FALSE(m.empty());
  const double rate = 30.0 / (10 * (4000 + 2 * kFixed));
  EXPECT_DOUBLE_EQ(m.expected_s(learner("go_one", 4000, 10)), rate * 10 * (4000 + kFixed));
  EXPECT_DOUBLE_EQ(m.expected_s(learner("go_one", 4000, 20)), rate * 20 * (4000 + kFixed));
}

// The bug this model replaced: fast baselines finishing first made every learner look as
// cheap per op as a baseline ("ETA 0:00" with 14 of 18 jobs left), and a slow baseline
// then made them look ten times dearer (11 minutes projected for a 1:17 quickstart).
TEST(JobTimeModelTest, FinishedBaselinesSayNothingAboutLearners) {
  JobTimeModel m;
  const JobCost hdp = learner("hdp", 4000, 100);
  const double prior = m.expected_s(hdp);
  m.add(baseline("metis", 4000), 9 * 4000 * JobTimeModel::kBaselinePriorSecondsPerWork);
  EXPECT_DOUBLE_EQ(m.expected_s(baseline("heft", 8000)),
                   9 * 8000 * JobTimeModel::kBaselinePriorSecondsPerWork);
  EXPECT_DOUBLE_EQ(m.expected_s(hdp), prior);
  // Once a learner finished 3x slower than its prior, other learners follow it.
  m.add(learner("go_one", 1000, 100),
        3 * (1000 + kFixed) * 100 * JobTimeModel::kLearnerPriorSecondsPerWork);
  EXPECT_DOUBLE_EQ(m.expected_s(hdp), 3 * prior);
}

}  // namespace
}  // namespace gopt::experiments
