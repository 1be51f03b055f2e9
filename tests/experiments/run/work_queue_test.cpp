// The order in which `gopt run` hands out its work: waits for pretraining, never idling
// a worker while an item it could run is left.
#include "experiments/run/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>

namespace {

using gopt::experiments::WorkQueue;

// Items: two pretraining units (0, 1), then jobs: 2 waits for 0, 3 waits for none, 4 waits
// for 1.
TEST(WorkQueueTest, HandsOutTheFirstItemNotWaitingInOrder) {
  WorkQueue queue({-1, -1, 0, -1, 1}, nullptr);
  EXPECT_EQ(queue.next(), std::optional<std::size_t>(0));
  EXPECT_EQ(queue.next(), std::optional<std::size_t>(1));
  EXPECT_EQ(queue.next(), std::optional<std::size_t>(3));  // 2 waits for 0
  queue.ended(1);
  EXPECT_EQ(queue.next(), std::optional<std::size_t>(4));  // 1 ended before 0
  queue.ended(0);
  EXPECT_EQ(queue.next(), std::optional<std::size_t>(2));
  EXPECT_EQ(queue.next(), std::nullopt);
  EXPECT_EQ(queue.next(), std::nullopt);
}

TEST(WorkQueueTest, AWorkerWaitsUntilTheItemItNeedsEnds) {
  WorkQueue queue({-1, 0}, nullptr);
  ASSERT_EQ(queue.next(), std::optional<std::size_t>(0));
  std::atomic<bool> ended{false};
  std::optional<std::size_t> got;
  std::thread waiter([&] {
    got = queue.next();
    // Handed out only after item 0 ended.
    EXPECT_TRUE(ended.load());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ended = true;
  queue.ended(0);
  waiter.join();
  EXPECT_EQ(got, std::optional<std::size_t>(1));
}

TEST(WorkQueueTest, TheStopFlagEndsAWait) {
  std::atomic<bool> stop{false};
  WorkQueue queue({-1, 0, -1}, &stop);
  ASSERT_EQ(queue.next(), std::optional<std::size_t>(0));
  ASSERT_EQ(queue.next(), std::optional<std::size_t>(2));
  std::thread waiter([&] { EXPECT_EQ(queue.next(), std::nullopt); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;  // nobody calls ended(0): the waiter notices the flag by itself
  waiter.join();
}

TEST(WorkQueueTest, AnItemMayOnlyWaitForAnEarlierOneThatWaitsForNone) {
  EXPECT_THROW(WorkQueue({1, -1}, nullptr), std::logic_error);
  EXPECT_THROW(WorkQueue({-1, 0, 1}, nullptr), std::logic_error);
  EXPECT_THROW(WorkQueue({0}, nullptr), std::logic_error);
}

}  // namespace
