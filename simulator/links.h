// Links: the interconnect during a run, as small state machines over the NetworkModel's
// directed channels. A channel is free or held until a time; a transfer holds every
// channel of its route from when all are free until its data arrives (so channels serve
// transfers in issue order, ASTRA-sim's link FIFO). Transfers whose routes share their
// first channel form one FIFO of transfers in flight: they arrive in issue order, so only
// the FIFO's head needs an arrival event, and when it arrives (and its channels free) the
// next one's is scheduled. Per-route statistics are kept here too.
//
//   Links links(network, max_transfers);
//   links.reset();
//   Links::Hold h = links.hold(src, dst, now_s, duration_s);   // h.start_s, h.end_s
//   if (links.enqueue(src, dst, id, h.end_s)) schedule_arrival(id);   // it is the head
//   ...at its arrival:  std::int32_t next = links.dequeue(src, dst, id);  // -1: empty
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/compiled_graph.h"
#include "core/errors.h"
#include "hardware/network_model.h"
#include "simulator/indexing.h"
#include "simulator/simulator.h"

namespace gopt::simulator {

using core::Bytes;
using core::DeviceId;
using core::Seconds;

class Links {
 public:
  /// Routes of up to this many channels are scanned by unrolled code (single-switch-level
  /// trees and NVLink); longer ones by a loop.
  static constexpr std::size_t kShortRoute = 4;

  /// `max_transfers` bounds the transfer ids of one run.
  Links(const hardware::NetworkModel& network, std::size_t max_transfers);

  /// Every channel free at time 0, every FIFO empty, statistics zero.
  void reset();
  /// The state of `o` (of the same network), transfer ids below `ids` only: what a delta
  /// simulation restores from a checkpoint.
  void copy_run_state(const Links& o, std::size_t ids) {
    channel_free_s_ = o.channel_free_s_;
    routes_ = o.routes_;
    fifos_ = o.fifos_;
    std::copy(o.next_.begin(), o.next_.begin() + static_cast<std::ptrdiff_t>(ids), next_.begin());
  }

  /// When a transfer over a route starts and its data arrives, in seconds.
  struct Hold {
    Seconds start_s;
    Seconds end_s;
  };
  /// Holds every channel of the route from `src` to `dst` (src != dst) from when all are
  /// free (and not before `now_s`) for `duration_s`.
  Hold hold(DeviceId src, DeviceId dst, Seconds now_s, Seconds duration_s) {
    const std::size_t pair = pair_index(src, dst);
    const std::int32_t* channels = padded_channels_.data() + pair * route_length_;
    Seconds* free_s = channel_free_s_.data();
    Seconds start_s = now_s;
    if (route_length_ == kShortRoute) {  // the same for every transfer of a run
      for (std::size_t k = 0; k < kShortRoute; ++k) {
        start_s = std::max(start_s, free_s[at(channels[k])]);
      }
    } else {
      for (std::size_t k = 0; k < route_length_; ++k) {
        start_s = std::max(start_s, free_s[at(channels[k])]);
      }
    }
    const Seconds end_s = start_s + duration_s;
    if (route_length_ == kShortRoute) {
      for (std::size_t k = 0; k < kShortRoute; ++k) free_s[at(channels[k])] = end_s;
    } else {
      for (std::size_t k = 0; k < route_length_; ++k) free_s[at(channels[k])] = end_s;
    }
    return Hold{start_s, end_s};
  }

  /// Appends transfer `id`, arriving at `end_s`, to its route's FIFO; true when it is the
  /// head (the caller schedules its arrival). A transfer arriving before the one queued
  /// before it would break the FIFO: an internal error.
  bool enqueue(DeviceId src, DeviceId dst, std::int32_t id, Seconds end_s) {
    GOPT_ASSERT(at(id) < next_.size(), "transfer id out of range");
    Fifo& fifo = fifos_[at(routes_[pair_index(src, dst)].fifo)];
    next_[at(id)] = -1;
    const std::int32_t tail = fifo.tail;
    fifo.tail = id;
    if (tail < 0) {
      fifo.tail_end_s = end_s;
      return true;
    }
    GOPT_ASSERT(end_s >= fifo.tail_end_s, "transfer FIFO out of order");
    fifo.tail_end_s = end_s;
    next_[at(tail)] = id;
    return false;
  }
  /// Removes the head `id` of its route's FIFO at its arrival; returns the next transfer
  /// (whose arrival the caller schedules), or -1 when the FIFO is now empty.
  std::int32_t dequeue(DeviceId src, DeviceId dst, std::int32_t id) {
    const std::int32_t next = next_[at(id)];
    if (next < 0) fifos_[at(routes_[pair_index(src, dst)].fifo)].tail = -1;
    return next;
  }

  /// Counts a transfer of `bytes` taking `duration_s` in its route's statistics.
  void record(DeviceId src, DeviceId dst, Bytes bytes, Seconds duration_s) {
    Route& route = routes_[pair_index(src, dst)];
    route.bytes += bytes;
    route.busy_s += duration_s;
    ++route.count;
  }

  /// Writes the run's statistics per link (a transfer counts on every link of its route,
  /// both directions together) into `links` (one entry per link of the network's
  /// cluster); returns the bytes moved, each transfer counted once.
  Bytes write_link_results(const hardware::NetworkModel& network,
                           std::vector<LinkResult>& links) const;

 private:
  struct Route {
    Bytes bytes;
    Seconds busy_s;
    std::int32_t count;
    std::int32_t fifo;  // its FIFO group, -1 for src == dst
  };
  struct Fifo {
    std::int32_t tail = -1;  // the last transfer issued, -1 when empty
    Seconds tail_end_s = 0;  // its arrival
  };

  [[nodiscard]] std::size_t pair_index(DeviceId src, DeviceId dst) const {
    return at(src) * at(num_devices_) + at(dst);
  }

  DeviceId num_devices_;
  // Every route's channels padded to route_length_ (repeating its first channel, which
  // changes neither the max of free times nor the updates), so every scan has the same
  // trip count; [pair * route_length_ + k].
  std::size_t route_length_ = kShortRoute;
  std::vector<std::int32_t> padded_channels_;
  std::vector<Seconds> channel_free_s_;
  std::vector<Route> routes_;       // [src * D + dst]
  std::vector<Fifo> fifos_;         // one per first channel
  std::vector<std::int32_t> next_;  // per transfer id: the next in its FIFO, -1 for none
};

}  // namespace gopt::simulator
