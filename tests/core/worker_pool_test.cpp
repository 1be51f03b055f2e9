#include "core/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace gopt::core {
namespace {

TEST(WorkerPoolTest, RunsEveryItemOnceOnItsWorkersLoopAfterLoop) {
  for (int threads : {1, 2, 4}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (std::size_t count : {0, 1, 5, 1000}) {
      std::vector<std::atomic<int>> runs(count);
      std::vector<int> worker_of(count, -1);
      pool.run(count, [&](int worker, std::size_t i) {
        ++runs[i];
        worker_of[i] = worker;
      });
      for (std::size_t i = 0; i < count; ++i) {
        EXPECT_EQ(runs[i].load(), 1) << i;
        EXPECT_GE(worker_of[i], 0);
        EXPECT_LT(worker_of[i], threads);
      }
    }
  }
  EXPECT_EQ(WorkerPool(0).size(), 1);  // at least the caller
}

TEST(WorkerPoolTest, RethrowsTheLowestFailingIndexAndStaysUsable) {
  WorkerPool pool(3);
  for (int round = 0; round < 20; ++round) {
    try {
      pool.run(200, [&](int, std::size_t i) {
        if (i == 17 || i == 150) throw std::runtime_error("item " + std::to_string(i));
      });
      FAIL() << "expected a throw";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "item 17");
    }
  }
  std::atomic<int> done{0};
  pool.run(10, [&](int, std::size_t) { ++done; });
  EXPECT_EQ(done.load(), 10);
}

TEST(WorkerPoolTest, UsableCoresIsAtLeastOne) { EXPECT_GE(usable_cores(), 1); }

}  // namespace
}  // namespace gopt::core
