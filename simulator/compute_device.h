// ComputeDevice: one device's compute resources during a run, as a small state machine.
// Its streams are busy or idle; ready kernels wait in one queue ordered by the decision's
// priority (then topological rank); on a device without a copy engine, incoming copies
// wait in a FIFO and are served on a compute stream before any ready kernel. It also
// counts the kernels it ran and their busy time. The model deciding what runs is the
// simulator's step (step_model.h); this class only keeps the state consistent.
//
//   ComputeDevice gpu(/*streams=*/1, /*copy_engine=*/true, num_ops, /*max_copies=*/0);
//   gpu.reset(/*by_priority=*/false);
//   gpu.push_ready(/*rank=*/3);
//   if (gpu.has_idle_stream() && !gpu.ready_empty()) {
//     int stream = gpu.acquire_stream();  std::uint32_t rank = gpu.pop_ready();  ...
//     gpu.release_stream(stream);         // when the kernel ends
//   }
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/compiled_graph.h"
#include "core/errors.h"
#include "simulator/ready_queue.h"

namespace gopt::simulator {

using core::Seconds;

class ComputeDevice {
 public:
  /// The most compute streams a device may have (one bit each in a 64-bit mask).
  static constexpr int kMaxStreams = 64;

  /// `streams` in [1, kMaxStreams] (checked by the caller, which names the device);
  /// `num_ranks` bounds the ready queue's topological ranks; `max_copies` bounds the
  /// incoming copies of one run (devices without a copy engine).
  ComputeDevice(int streams, bool copy_engine, std::size_t num_ranks, std::size_t max_copies)
      : streams_(streams), copy_engine_(copy_engine) {
    GOPT_ASSERT(streams >= 1 && streams <= kMaxStreams, "stream count out of range");
    ranks_.resize(num_ranks);
    heap_.reserve(num_ranks);
    if (!copy_engine) copies_.resize(max_copies);
  }

  /// Idle, empty, zero counters; the ready queue orders by priority or by rank alone.
  void reset(bool by_priority) {
    by_priority_ = by_priority;
    heap_.clear();
    ranks_.clear();
    busy_mask_ = 0;
    idle_streams_ = streams_;
    copy_head_ = 0;
    copy_tail_ = 0;
    busy_s_ = 0;
    num_kernels_ = 0;
  }

  [[nodiscard]] int streams() const { return streams_; }
  [[nodiscard]] bool has_copy_engine() const { return copy_engine_; }

  /// This device's state as `o`'s (a device of the same cluster and graph): what a delta
  /// simulation restores from a checkpoint. Copies only the live part of the copy queue.
  void copy_run_state(const ComputeDevice& o) {
    by_priority_ = o.by_priority_;
    busy_mask_ = o.busy_mask_;
    idle_streams_ = o.idle_streams_;
    heap_ = o.heap_;
    ranks_ = o.ranks_;
    std::copy(o.copies_.begin(), o.copies_.begin() + static_cast<std::ptrdiff_t>(o.copy_tail_),
              copies_.begin());
    copy_head_ = o.copy_head_;
    copy_tail_ = o.copy_tail_;
    busy_s_ = o.busy_s_;
    num_kernels_ = o.num_kernels_;
  }

  // --- Streams.
  [[nodiscard]] bool has_idle_stream() const { return idle_streams_ > 0; }
  /// Takes the lowest idle stream. Without one, an internal error.
  int acquire_stream() {
    GOPT_ASSERT(idle_streams_ > 0, "no idle stream to acquire");
    const int stream = __builtin_ctzll(~busy_mask_);
    busy_mask_ |= std::uint64_t{1} << stream;
    --idle_streams_;
    return stream;
  }
  void release_stream(int stream) {
    busy_mask_ &= ~(std::uint64_t{1} << stream);
    ++idle_streams_;
  }

  // --- The ready queue: keys from ready_key() (by priority) or plain ranks.
  void push_ready(std::uint64_t key) {
    if (by_priority_) {
      heap_.push(key);
    } else {
      ranks_.push(static_cast<std::uint32_t>(key));
    }
  }
  [[nodiscard]] bool ready_empty() const { return by_priority_ ? heap_.empty() : ranks_.empty(); }
  /// The topological rank of the first ready kernel, removed from the queue.
  std::uint32_t pop_ready() {
    return by_priority_ ? static_cast<std::uint32_t>(heap_.pop()) : ranks_.pop();
  }

  // --- Incoming copies (a device without a copy engine), FIFO in issue order.
  void queue_copy(std::int32_t transfer) {
    GOPT_ASSERT(copy_tail_ < copies_.size(), "more incoming copies than the bound");
    copies_[copy_tail_++] = transfer;
  }
  [[nodiscard]] bool has_queued_copy() const { return copy_head_ < copy_tail_; }
  std::int32_t pop_copy() { return copies_[copy_head_++]; }

  // --- Statistics.
  void record_kernel(Seconds duration_s) {
    busy_s_ += duration_s;
    ++num_kernels_;
  }
  /// Summed kernel time over all streams, in seconds (copies excluded).
  [[nodiscard]] Seconds busy_s() const { return busy_s_; }
  [[nodiscard]] std::int32_t num_kernels() const { return num_kernels_; }

 private:
  int streams_;
  bool copy_engine_;
  bool by_priority_ = false;
  std::uint64_t busy_mask_ = 0;
  int idle_streams_ = 0;
  ReadyHeap heap_;
  RankSet ranks_;
  std::vector<std::int32_t> copies_;
  std::size_t copy_head_ = 0;
  std::size_t copy_tail_ = 0;
  Seconds busy_s_ = 0;
  std::int32_t num_kernels_ = 0;
};

}  // namespace gopt::simulator
