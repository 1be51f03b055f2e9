// Engine: the simulator's kernel. It owns the clock and the event queue and nothing else:
// resources schedule their completions through it, and run() pops events in (time,
// sequence) order, advances the clock and hands each event to the model, letting the model
// serve the resources the last event changed before the next one (SimGrid's kernel loop).
//
//   Engine engine;
//   engine.schedule(engine.now() + duration_s, EventKind::kKernelEnd, task);
//   engine.run(model);   // model: dispatch(), stopped(), on_kernel_end(id), on_arrival(id)
#pragma once

#include <cstdint>
#include <limits>

#include "core/errors.h"
#include "simulator/event_queue.h"

namespace gopt::simulator {

class Engine {
 public:
  /// Back to time 0 with no event; the queue keeps its capacity.
  void reset() {
    now_ = 0;
    sequence_ = 0;
    queue_.clear();
  }
  void reserve(std::size_t events) { queue_.reserve(events); }

  /// The simulated time of the event being handled, in seconds.
  [[nodiscard]] Seconds now() const { return now_; }

  /// A new sequence number: events at equal times are handled in sequence order.
  std::uint32_t next_sequence() { return static_cast<std::uint32_t>(sequence_++); }

  /// Schedules an event at `time_s` with a new sequence number.
  void schedule(Seconds time_s, EventKind kind, std::int32_t id) {
    schedule(time_s, next_sequence(), kind, id);
  }
  /// Schedules an event with a sequence number taken earlier (a transfer queued behind
  /// another keeps the number it got when it was issued). An event before the present
  /// (or at NaN) is an internal error: durations are >= 0.
  void schedule(Seconds time_s, std::uint32_t sequence, EventKind kind, std::int32_t id) {
    GOPT_ASSERT(time_s >= now_ && time_s < std::numeric_limits<Seconds>::infinity(),
                "an event was scheduled before the present or at an infinite time");
    queue_.push(Event(time_s, sequence, kind, id));
  }

  /// The dispatch loop. `model.dispatch()` serves the resources changed by the last event
  /// (and, first, the initial ready ops); then the next event advances the clock and goes
  /// to `model.on_kernel_end(id)` or `model.on_arrival(id)`. Ends when the queue is empty
  /// or `model.stopped()`.
  template <typename Model>
  void run(Model& model) {
    Event ev;
    for (;;) {
      model.dispatch();
      if (model.stopped() || !queue_.pop(ev)) break;
      now_ = ev.time();
      if (ev.kind() == EventKind::kArrival) {
        model.on_arrival(ev.id());
      } else {
        model.on_kernel_end(ev.id());
      }
    }
  }

 private:
  Seconds now_ = 0;
  std::uint64_t sequence_ = 0;
  EventQueue queue_;
};

}  // namespace gopt::simulator
