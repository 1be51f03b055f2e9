// EventQueue: the simulator's one event queue, a binary min-heap of events ordered by
// (time, sequence number). Sequence numbers are unique, so the order is total and every
// run pops the same events in the same order whatever the heap's shape.
//
//   EventQueue queue;
//   queue.push(Event(/*time_s=*/2.0, /*sequence=*/0, EventKind::kKernelEnd, /*id=*/7));
//   Event ev;
//   while (queue.pop(ev)) handle(ev.time(), ev.kind(), ev.id());
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/compiled_graph.h"

namespace gopt::simulator {

using core::Seconds;

/// What an event is: a kernel ending or a transfer's data arriving.
enum class EventKind : std::uint8_t { kKernelEnd = 0, kArrival = 1 };

/// An event, packed into one 128-bit integer: the bit pattern of the time (high 64 bits),
/// the sequence number (32 bits), the kind (1 bit) and the task or transfer id (31 bits).
/// Times are finite and >= 0, so their bit patterns order like the times, and comparing
/// two events is one branch-free 128-bit comparison.
class Event {
 public:
  __extension__ typedef unsigned __int128 Order;

  Event() = default;
  Event(Seconds time_s, std::uint32_t sequence, EventKind kind, std::int32_t id) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &time_s, sizeof bits);
    const std::uint64_t key = (std::uint64_t{sequence} << 32) |
                              (std::uint64_t{static_cast<std::uint8_t>(kind)} << 31) |
                              static_cast<std::uint32_t>(id);
    order_ = (static_cast<Order>(bits) << 64) | key;
  }

  [[nodiscard]] Seconds time() const {
    auto bits = static_cast<std::uint64_t>(order_ >> 64);
    Seconds t = 0;
    std::memcpy(&t, &bits, sizeof t);
    return t;
  }
  [[nodiscard]] EventKind kind() const {
    return static_cast<EventKind>((static_cast<std::uint64_t>(order_) >> 31) & 1);
  }
  [[nodiscard]] std::int32_t id() const {
    return static_cast<std::int32_t>(static_cast<std::uint64_t>(order_) & kIdMask);
  }
  [[nodiscard]] Order order() const { return order_; }

  /// Ids fit in 31 bits.
  static constexpr std::uint64_t kIdMask = (std::uint64_t{1} << 31) - 1;

 private:
  Order order_ = 0;
};

/// A binary min-heap of events. Pops move the hole at the root down to a leaf along the
/// smaller children (one branch-free comparison per level) and sift the last event up
/// from there (Floyd). Capacity is kept between runs, so a run allocates nothing once the
/// heap has reached its largest size.
class EventQueue {
 public:
  void reserve(std::size_t events) { heap_.reserve(events); }
  void clear() { heap_.clear(); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }

  void push(Event ev) {
    // A new slot, then `ev` written once where it lands (push_back(ev) would copy it
    // through the stack: two 64-bit stores read back as one 128-bit load, which stalls).
    heap_.emplace_back();
    sift_up(heap_.size() - 1, ev);
  }

  /// Takes the first event into `ev`; false when there is none.
  bool pop(Event& ev) {
    if (heap_.empty()) return false;
    Event* h = heap_.data();
    ev = h[0];
    const std::size_t n = heap_.size() - 1;
    std::size_t hole = 0;
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child + 1 < n) {
        child += static_cast<std::size_t>(h[child + 1].order() < h[child].order());
      } else if (child >= n) {
        break;
      }
      h[hole] = h[child];
      hole = child;
    }
    if (hole != n) sift_up(hole, h[n]);
    heap_.pop_back();
    return true;
  }

 private:
  void sift_up(std::size_t i, Event ev) {
    Event* h = heap_.data();
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (h[parent].order() <= ev.order()) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = ev;
  }

  std::vector<Event> heap_;
};

}  // namespace gopt::simulator
