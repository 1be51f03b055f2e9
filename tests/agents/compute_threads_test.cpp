// The LibTorch thread limit of a job's thread (agents/compute_threads.h).
#include <gtest/gtest.h>

#include <thread>

#include "agents/compute_threads.h"
#include "agents/go/go_agent.h"
#include "tests/agents/agents_test_util.h"

namespace gopt::agents::go {
namespace {

// The runner limits each parallel job thread's LibTorch threads; the limit holds for work
// issued from that thread and leaves a thread that already runs LibTorch work alone.
TEST(ComputeThreadsTest, LimitAppliesToTheCallingThread) {
  const int before = at::get_num_threads();
  at::set_num_threads(2);  // whatever OMP_NUM_THREADS says (ctest sets 1)
  int in_job = -1;
  std::thread job([&] {
    limit_compute_threads(1);
    in_job = at::get_num_threads();
  });
  job.join();
  EXPECT_EQ(in_job, 1);
  EXPECT_EQ(at::get_num_threads(), 2);
  limit_compute_threads(0);  // clamped to one thread, not an error
  EXPECT_EQ(at::get_num_threads(), 1);
  at::set_num_threads(before);  // the other tests run with the default
}

}  // namespace
}  // namespace gopt::agents::go
