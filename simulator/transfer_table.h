// TransferTable: the transfers of one run. A transfer sends one op's output to one remote
// device and serves a contiguous list of consumers there; it holds a reference count of
// the data edges still to consume it, so the received copy is freed by its last consumer.
// Unobserved runs reuse the slot of a transfer whose last consumer has finished (LIFO, so
// the live transfers stay in cache); observed runs number transfers in issue order, which
// is the id observers see. Sized once for a graph: a run allocates nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/compiled_graph.h"
#include "core/errors.h"
#include "simulator/indexing.h"

namespace gopt::simulator {

using core::Bytes;
using core::DeviceId;
using core::NodeId;
using core::Seconds;

/// Hot state of a transfer.
struct Transfer {
  NodeId producer;
  DeviceId src;
  DeviceId dst;
  std::int32_t recv_refs;  // data edges into consumers on dst still to finish
  Bytes bytes;
  Seconds end_s;                // arrival; for a queued receiver copy, its duration until it starts
  std::uint32_t sequence;       // of its arrival event
  std::int32_t copy_stream;     // a receiver copy's stream on dst once started, else -1
  std::int32_t consumer_begin;  // the consumers it serves: consumer(begin) .. consumer(end-1),
  std::int32_t consumer_end;    // in the producer's out-edge order
};

class TransferTable {
 public:
  /// A graph with `num_edges` edges has at most that many transfers and consumers.
  explicit TransferTable(std::size_t num_edges)
      : transfers_(num_edges),
        free_slots_(num_edges + 1),
        consumers_(num_edges + 1),
        slot_transfer_(num_edges) {}

  /// No transfer; `observed` numbers them in issue order and keeps their request and
  /// start times.
  void reset(bool observed) {
    observed_ = observed;
    num_issued_ = 0;
    num_slots_ = 0;
    num_free_ = 0;
    num_consumers_ = 0;
    times_.clear();
  }

  /// The state of `o` (of the same graph, unobserved): its live entries only. What a delta
  /// simulation restores from a checkpoint.
  void copy_run_state(const TransferTable& o) {
    GOPT_ASSERT(!o.observed_, "an observed run has no checkpoints");
    observed_ = false;
    num_issued_ = o.num_issued_;
    num_slots_ = o.num_slots_;
    num_free_ = o.num_free_;
    num_consumers_ = o.num_consumers_;
    auto copy = [](const auto& from, auto& to, std::int32_t count) {
      std::copy(from.begin(), from.begin() + count, to.begin());
    };
    copy(o.transfers_, transfers_, num_slots_);
    copy(o.free_slots_, free_slots_, num_free_);
    copy(o.consumers_, consumers_, num_consumers_);
    slot_transfer_ = o.slot_transfer_;
  }
  /// Transfer ids in use so far are below this.
  [[nodiscard]] std::int32_t num_slots() const { return num_slots_; }

  /// The id of a new transfer (a free slot when unobserved).
  std::int32_t allocate() {
    ++num_issued_;
    const std::int32_t id =
        !observed_ && num_free_ > 0 ? free_slots_[at(--num_free_)] : num_slots_++;
    GOPT_ASSERT(at(id) < transfers_.size(), "more transfers than edges");
    return id;
  }
  /// Returns `slot` to the free list when `last` (branch-free: the entry past the list is
  /// written either way, which the spare entry allows). Observed runs never reuse slots.
  void free_if(bool last, std::int32_t slot) {
    if (observed_) return;
    free_slots_[at(num_free_)] = slot;
    num_free_ += static_cast<std::int32_t>(last);
  }

  Transfer& operator[](std::int32_t id) { return transfers_[at(id)]; }
  const Transfer& operator[](std::int32_t id) const { return transfers_[at(id)]; }
  [[nodiscard]] std::int32_t num_issued() const { return num_issued_; }

  // --- Consumer lists: a transfer's consumers are appended contiguously. The list has
  // one spare entry: StepModel::produce() writes the entry past a transfer's last
  // consumer without a branch (it is kept only when the edge was for the transfer).
  [[nodiscard]] std::int32_t num_consumers() const { return num_consumers_; }
  NodeId* consumers() { return consumers_.data(); }
  void set_num_consumers(std::int32_t n) { num_consumers_ = n; }
  /// The transfer feeding each remote in-slot (entries of local in-slots are stale, but
  /// always a valid id).
  std::int32_t* slot_transfer() { return slot_transfer_.data(); }

  // --- Observed runs: when each transfer was requested and started, in seconds.
  void record_times(Seconds request_s, Seconds start_s) { times_.push_back({request_s, start_s}); }
  void set_start(std::int32_t id, Seconds start_s) { times_[at(id)].start_s = start_s; }
  [[nodiscard]] Seconds request_s(std::int32_t id) const { return times_[at(id)].request_s; }
  [[nodiscard]] Seconds start_s(std::int32_t id) const { return times_[at(id)].start_s; }

 private:
  struct Times {
    Seconds request_s;
    Seconds start_s;
  };

  std::vector<Transfer> transfers_;
  std::vector<std::int32_t> free_slots_;  // one spare entry, see free_if()
  std::vector<NodeId> consumers_;         // one spare entry, see consumers()
  std::vector<std::int32_t> slot_transfer_;
  std::vector<Times> times_;
  bool observed_ = false;
  std::int32_t num_issued_ = 0;
  std::int32_t num_slots_ = 0;
  std::int32_t num_free_ = 0;
  std::int32_t num_consumers_ = 0;
};

}  // namespace gopt::simulator
