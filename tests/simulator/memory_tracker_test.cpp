// MemoryTracker: usage and peaks per device, the first OOM and when, stopping at it.
#include "simulator/memory_tracker.h"

#include <gtest/gtest.h>

namespace gopt::simulator {
namespace {

TEST(MemoryTrackerTest, PeakIsTheHighestUsage) {
  MemoryTracker memory({100, 100});
  memory.reset(false);
  memory.allocate(0, 30, 0.0);
  memory.allocate(0, 50, 1.0);
  memory.release(0, 30);
  memory.allocate(0, 20, 2.0);  // 70 in use, below the peak of 80
  memory.allocate(1, 10, 2.0);
  EXPECT_EQ(memory.peak_bytes(0), 80);
  EXPECT_EQ(memory.peak_bytes(1), 10);
  EXPECT_FALSE(memory.oom());
  EXPECT_EQ(memory.oom_device(), -1);
}

TEST(MemoryTrackerTest, FirstDeviceOverCapacityIsTheOutcome) {
  MemoryTracker memory({100, 50});
  memory.reset(/*stop_on_oom=*/false);
  memory.allocate(0, 100, 0.5);  // exactly the capacity: fine
  EXPECT_FALSE(memory.oom());
  memory.allocate(1, 60, 1.5);
  memory.allocate(0, 1, 2.5);
  EXPECT_TRUE(memory.oom());
  EXPECT_EQ(memory.oom_device(), 1);
  EXPECT_EQ(memory.oom_time_s(), 1.5);
  EXPECT_FALSE(memory.stop_requested());
  EXPECT_EQ(memory.peak_bytes(0), 101);  // the run goes on and peaks keep counting
}

TEST(MemoryTrackerTest, StopsAtOomWhenAsked) {
  MemoryTracker memory({10});
  memory.reset(/*stop_on_oom=*/true);
  memory.allocate(0, 10, 0.0);
  EXPECT_FALSE(memory.stop_requested());
  memory.allocate(0, 1, 3.0);
  EXPECT_TRUE(memory.stop_requested());
  memory.reset(true);
  EXPECT_FALSE(memory.oom());
  EXPECT_EQ(memory.peak_bytes(0), 0);
}

}  // namespace
}  // namespace gopt::simulator
