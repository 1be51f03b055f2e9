// The engine's event queue and dispatch loop: (time, sequence) order, ties by sequence,
// events in the past rejected in every build.
#include "simulator/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gopt::simulator {
namespace {

TEST(EventQueueTest, PopsByTimeThenSequence) {
  EventQueue queue;
  queue.push(Event(2.0, 0, EventKind::kKernelEnd, 1));
  queue.push(Event(1.0, 3, EventKind::kArrival, 2));
  queue.push(Event(1.0, 1, EventKind::kKernelEnd, 3));
  queue.push(Event(0.5, 9, EventKind::kArrival, 4));
  std::vector<std::pair<double, std::int32_t>> popped;
  Event ev;
  while (queue.pop(ev)) popped.emplace_back(ev.time(), ev.id());
  const std::vector<std::pair<double, std::int32_t>> expected = {
      {0.5, 4}, {1.0, 3}, {1.0, 2}, {2.0, 1}};
  EXPECT_EQ(popped, expected);
  EXPECT_TRUE(queue.empty());
}

TEST(EventQueueTest, EventKeepsTimeKindAndId) {
  const Event ev(3.25, 7, EventKind::kArrival, 0x7fffffff);
  EXPECT_EQ(ev.time(), 3.25);
  EXPECT_EQ(ev.kind(), EventKind::kArrival);
  EXPECT_EQ(ev.id(), 0x7fffffff);
  EXPECT_EQ(Event(0.0, 0, EventKind::kKernelEnd, 0).kind(), EventKind::kKernelEnd);
}

TEST(EventQueueTest, MatchesASortOfRandomEvents) {
  std::mt19937_64 rng(5);
  EventQueue queue;
  std::vector<std::pair<double, std::uint32_t>> expected;
  for (std::uint32_t seq = 0; seq < 500; ++seq) {
    // Few distinct times: many ties, broken by sequence.
    const double time = static_cast<double>(rng() % 20) * 0.25;
    queue.push(Event(time, seq, EventKind::kKernelEnd, static_cast<std::int32_t>(seq)));
    expected.emplace_back(time, seq);
  }
  std::sort(expected.begin(), expected.end());
  Event ev;
  for (const auto& [time, seq] : expected) {
    ASSERT_TRUE(queue.pop(ev));
    EXPECT_EQ(ev.time(), time);
    EXPECT_EQ(static_cast<std::uint32_t>(ev.id()), seq);
  }
  EXPECT_FALSE(queue.pop(ev));
}

// A model that records what the engine hands it and schedules follow-ups.
struct RecordingModel {
  explicit RecordingModel(Engine& e) : engine(e) {}
  Engine& engine;
  std::vector<std::pair<double, std::int32_t>> kernels;
  std::vector<std::pair<double, std::int32_t>> arrivals;
  int dispatches = 0;
  bool stop_after_first = false;

  void dispatch() { ++dispatches; }
  [[nodiscard]] bool stopped() const { return stop_after_first && !kernels.empty(); }
  void on_kernel_end(std::int32_t id) {
    kernels.emplace_back(engine.now(), id);
    // A kernel ending at time t starts a transfer arriving 1 s later.
    engine.schedule(engine.now() + 1.0, EventKind::kArrival, id);
  }
  void on_arrival(std::int32_t id) { arrivals.emplace_back(engine.now(), id); }
};

TEST(EngineTest, RunsEventsInOrderAndDispatchesBeforeEach) {
  Engine engine;
  engine.reset();
  RecordingModel model(engine);
  engine.schedule(2.0, EventKind::kKernelEnd, 0);
  engine.schedule(1.0, EventKind::kKernelEnd, 1);
  engine.schedule(2.0, EventKind::kArrival, 9);  // ties with kernel 0, scheduled later
  engine.run(model);
  const std::vector<std::pair<double, std::int32_t>> kernels = {{1.0, 1}, {2.0, 0}};
  // Ties at 2.0 go by sequence: kernel 0 (0), arrival 9 (2), then kernel 1's transfer,
  // scheduled at 1.0 (3).
  const std::vector<std::pair<double, std::int32_t>> arrivals = {{2.0, 9}, {2.0, 1}, {3.0, 0}};
  EXPECT_EQ(model.kernels, kernels);
  EXPECT_EQ(model.arrivals, arrivals);
  EXPECT_EQ(model.dispatches, 6);  // before each of the 5 events, and once more at the end
  EXPECT_EQ(engine.now(), 3.0);
}

TEST(EngineTest, StopsWhenTheModelSaysSo) {
  Engine engine;
  RecordingModel model(engine);
  model.stop_after_first = true;
  engine.schedule(1.0, EventKind::kKernelEnd, 0);
  engine.schedule(5.0, EventKind::kKernelEnd, 1);
  engine.run(model);
  EXPECT_EQ(model.kernels.size(), 1u);
  EXPECT_EQ(engine.now(), 1.0);
}

TEST(EngineTest, AnEventInThePastIsAnInternalError) {
  Engine engine;
  struct Model {
    Engine& engine;
    void dispatch() {}
    [[nodiscard]] bool stopped() const { return false; }
    void on_kernel_end(std::int32_t /*id*/) { engine.schedule(0.5, EventKind::kKernelEnd, 1); }
    void on_arrival(std::int32_t /*id*/) {}
  } model{engine};
  engine.schedule(1.0, EventKind::kKernelEnd, 0);
  EXPECT_THROW(engine.run(model), std::logic_error);
}

TEST(EngineTest, ResetGoesBackToTimeZero) {
  Engine engine;
  RecordingModel model(engine);
  engine.schedule(4.0, EventKind::kKernelEnd, 0);
  engine.run(model);
  engine.reset();
  EXPECT_EQ(engine.now(), 0.0);
  EXPECT_EQ(engine.next_sequence(), 0u);
}

}  // namespace
}  // namespace gopt::simulator
