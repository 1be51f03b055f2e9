// The ETA's job-time model: seconds per op of an agent's finished jobs, scaled to the job.
#include "experiments/job_time_model.h"

#include <gtest/gtest.h>

namespace gopt::experiments {
namespace {

TEST(JobTimeModelTest, ScalesAnAgentsFinishedJobsByGraphSize) {
  JobTimeModel m;
  EXPECT_TRUE(m.empty());
  EXPECT_LT(m.expected_s("go_one", 1000), 0);  // nothing finished: unknown
  m.add("go_one", 1000, 10);                   // 10 ms per op
  m.add("go_one", 3000, 50);                   // together: 60 s over 4000 ops
  EXPECT_FALSE(m.empty());
  EXPECT_DOUBLE_EQ(m.expected_s("go_one", 4000), 60);
  EXPECT_DOUBLE_EQ(m.expected_s("go_one", 20000), 300);  // a larger graph takes longer
  m.add("metis", 1000, 1);
  EXPECT_DOUBLE_EQ(m.expected_s("metis", 2000), 2);
  // An agent with no finished job: the rate of every finished job (61 s over 5000 ops).
  EXPECT_DOUBLE_EQ(m.expected_s("hdp", 5000), 61);
}

}  // namespace
}  // namespace gopt::experiments
