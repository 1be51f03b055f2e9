// ComputeDevice and its ready queues: streams, priority then rank order, the receiver-copy
// FIFO, statistics, and misuse reported as internal errors.
#include "simulator/compute_device.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace gopt::simulator {
namespace {

TEST(ReadyQueueTest, RankSetPopsLowestRankFirst) {
  RankSet set;
  set.resize(200);
  for (std::uint32_t r : {130u, 5u, 64u, 199u, 0u}) set.push(r);
  std::vector<std::uint32_t> popped;
  while (!set.empty()) popped.push_back(set.pop());
  EXPECT_EQ(popped, (std::vector<std::uint32_t>{0, 5, 64, 130, 199}));
  EXPECT_THROW(set.push(200), std::logic_error);
  EXPECT_THROW(set.pop(), std::logic_error);
}

TEST(ReadyQueueTest, ReadyKeyOrdersByPriorityThenRank) {
  ReadyHeap heap;
  heap.push(ready_key(/*rank=*/1, /*priority=*/0));
  heap.push(ready_key(7, 5));
  heap.push(ready_key(3, 5));
  heap.push(ready_key(0, std::numeric_limits<std::int32_t>::min()));
  heap.push(ready_key(9, std::numeric_limits<std::int32_t>::max()));
  heap.push(ready_key(2, -1));
  std::vector<std::uint32_t> ranks;
  while (!heap.empty()) ranks.push_back(static_cast<std::uint32_t>(heap.pop()));
  EXPECT_EQ(ranks, (std::vector<std::uint32_t>{9, 3, 7, 1, 2, 0}));
  EXPECT_THROW(heap.pop(), std::logic_error);
}

TEST(ComputeDeviceTest, StreamsAreTakenLowestFirstAndReleased) {
  ComputeDevice device(/*streams=*/3, /*copy_engine=*/true, /*num_ranks=*/10, 0);
  device.reset(false);
  EXPECT_EQ(device.acquire_stream(), 0);
  EXPECT_EQ(device.acquire_stream(), 1);
  device.release_stream(0);
  EXPECT_EQ(device.acquire_stream(), 0);
  EXPECT_EQ(device.acquire_stream(), 2);
  EXPECT_FALSE(device.has_idle_stream());
  EXPECT_THROW(device.acquire_stream(), std::logic_error);
  device.release_stream(1);
  EXPECT_TRUE(device.has_idle_stream());
  device.reset(false);
  EXPECT_EQ(device.acquire_stream(), 0);  // reset frees every stream
}

TEST(ComputeDeviceTest, ReadyQueueFollowsTheRunsPolicy) {
  ComputeDevice device(1, true, 10, 0);
  device.reset(/*by_priority=*/false);
  device.push_ready(4);
  device.push_ready(2);
  EXPECT_EQ(device.pop_ready(), 2u);
  EXPECT_EQ(device.pop_ready(), 4u);
  EXPECT_TRUE(device.ready_empty());
  device.reset(/*by_priority=*/true);
  device.push_ready(ready_key(2, 0));
  device.push_ready(ready_key(4, 1));
  EXPECT_EQ(device.pop_ready(), 4u);  // higher priority first, whatever its rank
  EXPECT_EQ(device.pop_ready(), 2u);
}

TEST(ComputeDeviceTest, IncomingCopiesWaitInIssueOrderUpToTheBound) {
  ComputeDevice device(1, /*copy_engine=*/false, 10, /*max_copies=*/2);
  device.reset(false);
  EXPECT_FALSE(device.has_copy_engine());
  EXPECT_FALSE(device.has_queued_copy());
  device.queue_copy(7);
  device.queue_copy(3);
  EXPECT_THROW(device.queue_copy(9), std::logic_error);
  EXPECT_EQ(device.pop_copy(), 7);
  EXPECT_EQ(device.pop_copy(), 3);
  EXPECT_FALSE(device.has_queued_copy());
}

TEST(ComputeDeviceTest, CountsKernelsAndBusyTime) {
  ComputeDevice device(2, true, 1, 0);
  device.reset(false);
  device.record_kernel(1.5);
  device.record_kernel(0.25);
  EXPECT_EQ(device.busy_s(), 1.75);
  EXPECT_EQ(device.num_kernels(), 2);
  device.reset(false);
  EXPECT_EQ(device.busy_s(), 0.0);
  EXPECT_EQ(device.num_kernels(), 0);
}

}  // namespace
}  // namespace gopt::simulator
