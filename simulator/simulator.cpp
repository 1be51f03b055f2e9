#include "simulator/simulator.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include "core/errors.h"

namespace gopt::simulator {
namespace {

// An index (never negative) as a size_t. Through the unsigned type of the same width, so
// that a 32-bit index costs no sign extension (x86 zero-extends 32-bit values for free).
template <typename I>
std::size_t at(I i) {
  return static_cast<std::size_t>(static_cast<std::make_unsigned_t<I>>(i));
}

// An event: a kernel finishing or a transfer arriving. Ordered by (time, sequence number);
// `key` packs the sequence number (high 32 bits), the kind (bit 31) and the task or
// transfer index (low 31 bits). Simulated times are finite and >= 0, so the bit pattern
// of a time orders like the time itself, and (time, key) compares as one 128-bit integer
// (branch-free in the heap's inner loop).
__extension__ typedef unsigned __int128 EventOrder;

struct Event {
  EventOrder order;

  Event() : order(0) {}

  Event(Seconds time, std::uint64_t key) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &time, sizeof bits);
    order = (static_cast<EventOrder>(bits) << 64) | key;
  }
  [[nodiscard]] Seconds time() const {
    auto bits = static_cast<std::uint64_t>(order >> 64);
    Seconds t = 0;
    std::memcpy(&t, &bits, sizeof t);
    return t;
  }
  [[nodiscard]] std::uint64_t key() const { return static_cast<std::uint64_t>(order); }
};

constexpr std::uint64_t kArrivalBit = std::uint64_t{1} << 31;
constexpr std::int32_t kQueuedCopy = -2;
constexpr std::uint64_t kIdMask = kArrivalBit - 1;

// A run of events sorted by (time, sequence), in an array whose capacity is kept: push
// shifts the later events up by one, pop takes the front. Every pushed event orders after
// the last popped one (times never precede `now`; a kernel or a transfer issued now gets
// the newest sequence number; a FIFO group's next transfer ends no earlier and was issued
// later than the one arriving), so the last popped event, kept just before the front,
// stops the shift without a bounds check; a maximal event after the back makes an empty
// run's front lose every comparison.
class SortedEvents {
 public:
  void reserve(std::size_t bound) {
    events_.resize(bound + kSlack);
    clear();
  }
  void clear() {
    events_[0] = Event{};
    head_ = 1;
    tail_ = 1;
    events_[tail_].order = ~EventOrder{0};
  }
  [[nodiscard]] const Event& front() const { return events_[head_]; }
  void pop_front() { ++head_; }
  void push(Event ev) {
    Event* h = events_.data();
    if (tail_ + 1 == events_.size()) {
      // Move the live events and both sentinels back to the start (no call: hot loop).
      for (std::size_t i = head_ - 1; i <= tail_; ++i) h[i - head_ + 1] = h[i];
      tail_ -= head_ - 1;
      head_ = 1;
      assert(tail_ + 1 < events_.size() && "more events than the bound given to reserve()");
    }
    // <=: the first event of a run can tie with the zeroed sentinel (a zero-time kernel
    // started at time 0 with sequence 0); every other popped event has a unique order.
    assert(h[head_ - 1].order <= ev.order && "event scheduled before the last one processed");
    std::size_t i = tail_++;
    h[tail_] = h[i];
    while (ev.order < h[i - 1].order) {
      h[i] = h[i - 1];
      --i;
    }
    h[i] = ev;
  }

 private:
  static constexpr std::size_t kSlack = 64;  // pushes between two compactions, at least

  std::vector<Event> events_;
  std::size_t head_ = 1;  // the first live event, after the last popped one
  std::size_t tail_ = 1;  // one past the last live event, holding the maximal event
};

// The event queue. Clusters of up to 8 devices hold a few dozen events at most, kernels
// (one per busy stream) and arrivals (one per FIFO group of routes with transfers in
// flight), so each kind is a SortedEvents and a pop compares the two fronts. Larger
// clusters use one binary min-heap.
class EventQueue {
 public:
  /// The most kernels and arrivals ever queued at once.
  void reserve(std::size_t kernel_bound, std::size_t arrival_bound) {
    sorted_ = kernel_bound + arrival_bound <= kSortedBound;
    if (sorted_) {
      kernels_.reserve(kernel_bound);
      arrivals_.reserve(arrival_bound);
    } else {
      heap_.resize(kernel_bound + arrival_bound);
    }
    clear();
  }
  void clear() {
    if (sorted_) {
      kernels_.clear();
      arrivals_.clear();
    }
    size_ = 0;
  }

  void push_kernel(Event ev) {
    if (sorted_) {
      kernels_.push(ev);
    } else {
      push_heap(ev);
    }
  }
  void push_arrival(Event ev) {
    if (sorted_) {
      arrivals_.push(ev);
    } else {
      push_heap(ev);
    }
  }

  /// Takes the first event into `ev`; false when there is none.
  bool pop(Event& ev) {
    if (sorted_) {
      const EventOrder kernel = kernels_.front().order;
      const EventOrder arrival = arrivals_.front().order;
      if (kernel < arrival) {
        ev.order = kernel;
        kernels_.pop_front();
        return true;
      }
      if (arrival == ~EventOrder{0}) return false;  // both runs empty: their back sentinels
      ev.order = arrival;
      arrivals_.pop_front();
      return true;
    }
    if (size_ == 0) return false;
    // Floyd: move the hole at the root down to a leaf along the smaller children (one
    // branch-free comparison per level), then sift the last event up from there.
    Event* h = heap_.data();
    ev = h[0];
    const std::size_t n = --size_;
    std::size_t hole = 0;
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child + 1 < n) {
        child += static_cast<std::size_t>(h[child + 1].order < h[child].order);
      } else if (child >= n) {
        break;
      }
      h[hole] = h[child];
      hole = child;
    }
    if (hole != n) sift_up(hole, h[n].order);
    return true;
  }

 private:
  // 8 devices with one stream each and one FIFO group per route (the worst grouping).
  static constexpr std::size_t kSortedBound = 8 + 8 * 8;

  void push_heap(Event ev) {
    assert(size_ < heap_.size() && "more events than the bound given to reserve()");
    sift_up(size_++, ev.order);
  }

  void sift_up(std::size_t i, EventOrder order) {
    Event* h = heap_.data();
    while (i > 0) {
      std::size_t parent = (i - 1) / 2;
      if (h[parent].order <= order) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i].order = order;
  }

  bool sorted_ = true;
  SortedEvents kernels_;
  SortedEvents arrivals_;
  std::vector<Event> heap_;
  std::size_t size_ = 0;  // of the heap
};

// Min-heap of ready-queue keys (priority, topological rank) for one device, used when the
// decision has priorities. Pops move the hole down to a leaf with one branch-free
// comparison per level, then sift the last key up (Floyd's bottom-up heap): ready queues of
// large graphs hold hundreds of ops.
class ReadyHeap {
 public:
  void reserve(std::size_t n) { heap_.reserve(n); }
  void clear() { heap_.clear(); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  void push(std::uint64_t key) {
    heap_.push_back(key);
    sift_up(heap_.size() - 1, key);
  }
  std::uint64_t pop() {
    std::uint64_t* h = heap_.data();
    const std::uint64_t top = h[0];
    const std::uint64_t last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return top;
    std::size_t hole = 0;
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child + 1 < n) {
        child += static_cast<std::size_t>(h[child + 1] < h[child]);
      } else if (child >= n) {
        break;
      }
      h[hole] = h[child];
      hole = child;
    }
    sift_up(hole, last);
    return top;
  }

 private:
  void sift_up(std::size_t i, std::uint64_t key) {
    std::uint64_t* h = heap_.data();
    while (i > 0) {
      std::size_t parent = (i - 1) / 2;
      if (h[parent] <= key) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = key;
  }

  std::vector<std::uint64_t> heap_;
};

// The ready queue of one device when the decision has no priorities: the set of ready
// topological ranks as a two-level bitmap (a bit per rank, a summary bit per word), so push
// and pop-min cost a few instructions. Ranks become ready nearly in increasing order, so
// the scan for the first non-empty summary word is short.
class RankSet {
 public:
  void resize(std::size_t num_ranks) {
    words_.assign((num_ranks + 63) / 64, 0);
    summary_.assign((words_.size() + 63) / 64 + 1, 0);
    summary_.back() = 1;  // sentinel: stops the scan in pop() (never reached when non-empty)
    first_ = summary_.size() - 1;
    size_ = 0;
  }
  void clear() {
    if (size_ != 0) {
      std::fill(words_.begin(), words_.end(), 0);
      std::fill(summary_.begin(), summary_.end() - 1, 0);
    }
    first_ = summary_.size() - 1;
    size_ = 0;
  }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  void push(std::uint32_t rank) {
    const std::size_t w = rank >> 6;
    words_[w] |= std::uint64_t{1} << (rank & 63);
    const std::size_t s = w >> 6;
    summary_[s] |= std::uint64_t{1} << (w & 63);
    first_ = std::min(first_, s);
    ++size_;
  }
  std::uint32_t pop() {
    std::size_t s = first_;
    while (summary_[s] == 0) ++s;
    first_ = s;
    const std::uint64_t summary = summary_[s];
    const std::size_t w = s * 64 + static_cast<std::size_t>(__builtin_ctzll(summary));
    std::uint64_t bits = words_[w];
    const auto rank =
        static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
    bits &= bits - 1;
    words_[w] = bits;
    if (bits == 0) summary_[s] = summary & (summary - 1);
    --size_;
    return rank;
  }

 private:
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> summary_;
  std::size_t first_ = 0;  // no summary word before it is non-empty
  std::size_t size_ = 0;
};

// `condition ? a : b` for integers, computed with masks: compilers turn a ?: on an
// unpredictable condition into a branch, which mispredicts about half the time.
template <typename T>
T select(bool condition, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const U mask = U{0} - static_cast<U>(condition);
  return static_cast<T>(static_cast<U>(b) ^ ((static_cast<U>(a) ^ static_cast<U>(b)) & mask));
}
template <typename T>
T* select(bool condition, T* a, T* b) {
  return reinterpret_cast<T*>(
      select(condition, reinterpret_cast<std::uintptr_t>(a), reinterpret_cast<std::uintptr_t>(b)));
}

// Higher priority first: map an int32 priority to a 32-bit value that sorts the other way.
inline std::uint64_t priority_bits(std::int32_t priority) {
  auto biased = static_cast<std::uint32_t>(priority) ^ 0x80000000u;
  return static_cast<std::uint64_t>(~biased) << 32;
}

// Hot state of a transfer (48 bytes); request and start times are kept only while an
// observer is attached (TransferTimes).
struct Transfer {
  NodeId producer;
  DeviceId src;
  DeviceId dst;
  std::int32_t recv_refs;  // data edges into consumers on dst still to finish
  Bytes bytes;
  Seconds end_s;
  std::uint32_t sequence;  // of its arrival event
  // Next transfer of its route's FIFO group, -1 for none; for a receiver copy (a
  // destination without a copy engine) kQueuedCopy while queued, then -2 - its stream.
  std::int32_t next_in_fifo;
  std::int32_t consumer_begin;  // the consumers it serves: Impl::consumers_[begin, end),
  std::int32_t consumer_end;    // in the producer's out-edge order
};

// The graph's edges as the engine reads them, packed: an out-edge with its target's in-slot
// and bytes; an in-slot with its source and whether it carries data.
struct OutEdge {
  NodeId target;
  core::EdgeIndex slot;
  Bytes bytes;
};
struct InEdge {
  NodeId source;
  std::int32_t has_bytes;
};

// Per-op state of one run, together because an event touches it together. Fused, the
// task fields (pending, stream) are indexed by group and the op fields by op.
struct OpState {
  std::int32_t pending;  // task: inputs not yet available on its device
  std::int32_t refs;     // op: consumers and transfers still holding its output buffer
  std::int32_t stream;   // task: the compute stream it runs on
  DeviceId device;       // op: its placement
};

// A remote out-edge met while an op finishes, kept until its transfer is issued.
struct RemoteEdge {
  NodeId consumer;
  DeviceId device;
  core::EdgeIndex slot;  // the edge's in-slot at the consumer
  std::int32_t has_bytes;
};

// Per (src, dst) route: its fixed costs, its FIFO group and its statistics during a run,
// together because a transfer touches them together.
struct Route {
  Seconds latency_s;        // summed over the hops
  double seconds_per_byte;  // of the slowest hop
  Bytes bytes;              // moved in this run
  Seconds busy_s;           // summed transfer durations in this run
  std::int32_t count;       // transfers in this run
  std::int32_t fifo;        // its FIFO group (Impl::fifo_tail_), -1 for src == dst
};

struct TransferTimes {
  Seconds request_s;
  Seconds start_s;
};

}  // namespace

class Simulator::Impl {
 public:
  Impl(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
       const hardware::CostModel& cost_model, SimulatorOptions options);

  const SimulationResult& simulate(const core::Decision& decision, SimulationObserver* observer);

  // --- Fixed per (graph, cluster, cost model).
  const core::CompiledGraph& g_;
  const hardware::Cluster& cluster_;
  const hardware::CostModel& cost_;
  SimulatorOptions options_;
  NodeId n_;
  DeviceId num_devices_;
  int num_types_;
  std::vector<int> device_type_;
  std::vector<int> device_streams_;
  // Devices without a copy engine perform their incoming copies on a compute stream
  // (receiver copies): copy_engine_[d] == 0. receiver_copies_: some device has none.
  std::vector<std::uint8_t> copy_engine_;
  bool receiver_copies_ = false;
  std::vector<Bytes> capacity_;
  std::vector<Seconds> op_time_;  // [op * num_types + type]
  Seconds lb_critical_path_s_ = 0;
  Seconds lb_work_s_ = 0;
  std::vector<std::int32_t> pair_route_offset_;  // [src * D + dst], D*D + 1
  std::vector<std::int32_t> pair_channels_;
  // Every route's channels padded to route_length_ (repeating its first channel, which
  // changes neither the max of free times nor the updates), so the channel scans of a
  // transfer have the same trip count on every route.
  std::vector<std::int32_t> route_channels_;  // [pair * route_length_ + hop]
  // At least kShortRoute: routes of up to 4 hops (single-switch-level trees, NVLink) are
  // padded to 4 and scanned by unrolled code without a loop.
  std::size_t route_length_ = 1;
  static constexpr std::size_t kShortRoute = 4;
  std::vector<Route> routes_;  // [src * D + dst]
  std::vector<DeviceId> zero_placement_;
  std::vector<NodeId> sources_;  // ops without inputs, in topological order
  FusionGroups identity_groups_;
  // Cached views of the graph arrays.
  const NodeId* topo_order_;
  const NodeId* topo_rank_;
  const Bytes* output_bytes_;

  // --- Per simulation (reset by simulate(); capacity kept).
  const DeviceId* place_ = nullptr;
  const std::int32_t* priority_ = nullptr;
  SimulationObserver* observer_ = nullptr;
  const FusionGroups* groups_ = nullptr;
  FusionWorkspace fusion_workspace_;
  FusionGroups fused_groups_;
  std::vector<std::uint8_t> needs_buffer_;  // fused only: output leaves its group
  std::vector<Seconds> task_time_;          // fused only
  std::vector<std::uint64_t> task_key_;     // fused only
  std::vector<std::int32_t> task_of_rank_;  // fused only
  std::vector<OpState> ops_;
  std::vector<Seconds> task_start_;
  std::vector<std::int32_t> slot_transfer_;  // in-slot -> the transfer feeding it (remote)
  // Transfers and their consumers are written at an index rather than pushed: no call in
  // the dispatch loop (sized num_edges: a transfer serves at least one edge).
  // Unobserved runs reuse the slot of a transfer whose last consumer has finished (LIFO),
  // so the live transfers stay in cache; observed runs number them in issue order.
  std::vector<Transfer> transfers_;
  std::int32_t num_transfers_ = 0;  // issued
  std::int32_t num_slots_ = 0;      // slots of transfers_ ever used in this run
  std::vector<std::int32_t> free_slots_;
  std::int32_t num_free_slots_ = 0;
  std::vector<NodeId> consumers_;  // see Transfer::consumer_begin
  std::int32_t num_consumers_ = 0;
  std::vector<RemoteEdge> remote_edges_;       // scratch of produce(), max out-degree
  std::vector<DeviceId> remote_devices_;       // scratch: in order of first out-edge
  std::vector<TransferTimes> transfer_times_;  // only with an observer
  std::vector<core::EdgeIndex> out_offset_;    // fixed: CSR of out_edges_ by op
  std::vector<OutEdge> out_edges_;
  std::vector<core::EdgeIndex> in_offset_;  // fixed: CSR of in_edges_ by op
  std::vector<InEdge> in_edges_;
  // Link statistics are accumulated per route (Route) and spread over its links at the
  // end. Transfers whose routes share a channel arrive in issue order: each holds the
  // channel for its whole duration and starts when the channel is free, so it ends no
  // earlier than the transfer issued before it (and has a later sequence number). Routes
  // are grouped by their first channel (the source's uplink in a PCIe or NVSwitch tree, so
  // one group per source device there); each group keeps a FIFO of its transfers in flight
  // (fifo_tail_, Transfer::next_in_fifo) and only its head sits in the event queue, which
  // then holds at most streams + groups events (a few, where one per route would be
  // devices^2 and every arrival a long insertion scan).
  std::vector<std::int32_t> fifo_tail_;  // the last transfer issued in the group, -1 if none
  // Receiver copies waiting for a stream of their destination, FIFO per device:
  // copy_queue_[d * copy_queue_capacity_ + i] for i in [copy_head_[d], copy_tail_[d]).
  std::vector<std::int32_t> copy_queue_;
  std::size_t copy_queue_capacity_ = 0;
  std::vector<std::int32_t> copy_head_;
  std::vector<std::int32_t> copy_tail_;
  std::vector<ReadyHeap> ready_;      // with priorities
  std::vector<RankSet> ready_ranks_;  // without
  bool by_rank_ = true;               // no priorities: ready_ranks_ serve
  std::vector<std::uint64_t> busy_streams_;
  std::vector<int> idle_streams_;
  std::vector<Bytes> memory_;
  std::vector<Seconds> channel_free_s_;
  std::vector<std::uint64_t> remote_mark_;
  std::vector<Bytes> remote_bytes_;
  std::vector<std::int32_t> remote_transfer_;
  std::vector<DeviceId> dirty_;  // the first num_dirty_, in the order they were marked
  std::int32_t num_dirty_ = 0;
  std::vector<std::int32_t> is_dirty_;
  EventQueue events_;
  std::uint64_t stamp_ = 0;
  std::uint64_t sequence_ = 0;
  Seconds now_ = 0;
  std::int32_t finished_tasks_ = 0;
  bool stop_ = false;
  SimulationResult result_;

 private:
  template <bool kFused, bool kObserved>
  void run();
  template <bool kFused, bool kObserved>
  void start(std::int32_t task, DeviceId d);
  template <bool kFused, bool kObserved>
  void finish(std::int32_t task);
  template <bool kFused, bool kObserved>
  void produce(NodeId op, DeviceId d, std::int32_t task);
  template <bool kFused, bool kObserved>
  void arrive(std::int32_t transfer);
  template <bool kFused, bool kObserved>
  void dispatch(DeviceId d);
  template <bool kObserved>
  void start_copies(DeviceId d);
  template <bool kFused, bool kObserved>
  void make_ready(std::int32_t task, DeviceId d);
  template <bool kFused, bool kObserved>
  void satisfy(NodeId consumer, DeviceId d);
  template <bool kFused>
  bool needs_buffer(NodeId op) const;

  void prepare_fusion(const core::Decision& decision);
  template <bool kObserved>
  std::int32_t issue_transfer(NodeId producer, DeviceId src, DeviceId dst, Bytes bytes);
  void allocate(DeviceId d, Bytes bytes);
  void release(DeviceId d, Bytes bytes) { memory_[at(d)] -= bytes; }
  void push_event(Seconds time, std::uint64_t kind_and_id) {
    events_.push_kernel(Event{time, (sequence_++ << 32) | kind_and_id});
  }
  static std::uint64_t arrival_key(std::uint32_t sequence, std::int32_t id) {
    return (std::uint64_t{sequence} << 32) | kArrivalBit | static_cast<std::uint64_t>(id);
  }
  void mark_dirty(DeviceId d) {
    if (!is_dirty_[at(d)]) {
      is_dirty_[at(d)] = 1;
      dirty_[at(num_dirty_++)] = d;
    }
  }
  KernelEvent kernel_event(std::int32_t task, DeviceId d) const;
  TransferEvent transfer_event(std::int32_t transfer) const;
};

Simulator::Impl::Impl(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                      const hardware::CostModel& cost_model, SimulatorOptions options)
    : g_(graph),
      cluster_(cluster),
      cost_(cost_model),
      options_(std::move(options)),
      n_(graph.num_nodes()),
      num_devices_(cluster.num_devices()),
      num_types_(cluster.num_device_types()),
      topo_order_(graph.topological_order().data()),
      topo_rank_(graph.topological_rank().data()),
      output_bytes_(graph.output_bytes().data()) {
  GOPT_ASSERT(
      &cost_model.cluster() == &cluster || cost_model.cluster().num_devices() == num_devices_,
      "the cost model was built for another cluster");
  const auto D = at(num_devices_);
  // Op times, once per device type.
  std::vector<DeviceId> representative(at(num_types_), -1);
  for (DeviceId d = 0; d < num_devices_; ++d) {
    device_type_.push_back(cluster.device_type_index(d));
    device_streams_.push_back(cluster.device(d).compute_streams);
    copy_engine_.push_back(cluster.device(d).has_copy_engine ? 1 : 0);
    receiver_copies_ = receiver_copies_ || !cluster.device(d).has_copy_engine;
    capacity_.push_back(cluster.device(d).memory_capacity_bytes);
    if (representative[at(device_type_.back())] < 0) representative[at(device_type_.back())] = d;
  }
  op_time_.resize(at(n_) * at(num_types_));
  std::vector<Seconds> fastest(at(n_), std::numeric_limits<Seconds>::infinity());
  for (NodeId v = 0; v < n_; ++v) {
    for (int t = 0; t < num_types_; ++t) {
      Seconds time = cost_model.op_time(graph, v, representative[at(t)]);
      GOPT_ASSERT(time >= 0 && time < std::numeric_limits<Seconds>::infinity(),
                  "cost model returned a negative or infinite op time");
      op_time_[at(v) * at(num_types_) + at(t)] = time;
      fastest[at(v)] = std::min(fastest[at(v)], time);
    }
  }
  // Lower bounds: zero-communication critical path and work over streams.
  std::vector<Seconds> finish(at(n_), 0);
  Seconds total = 0;
  for (NodeId v : graph.topological_order()) {
    Seconds ready = 0;
    for (auto s = graph.in_begin(v); s < graph.in_end(v); ++s) {
      ready = std::max(ready, finish[at(graph.in_source(s))]);
    }
    finish[at(v)] = ready + fastest[at(v)];
    lb_critical_path_s_ = std::max(lb_critical_path_s_, finish[at(v)]);
    total += fastest[at(v)];
  }
  lb_work_s_ = total / static_cast<double>(cluster.total_compute_streams());

  // Routes: channels, summed latency and the bottleneck per-byte cost of each pair.
  std::vector<hardware::LinkCost> link_costs;
  for (hardware::LinkId l = 0; l < cluster.num_links(); ++l) {
    link_costs.push_back(cost_model.link_cost(l));
    // Transfers then never end before they start, which the event queue relies on.
    GOPT_ASSERT(link_costs.back().latency_s >= 0 && link_costs.back().seconds_per_byte >= 0 &&
                    link_costs.back().latency_s < std::numeric_limits<Seconds>::infinity() &&
                    link_costs.back().seconds_per_byte < std::numeric_limits<double>::infinity(),
                "cost model returned a negative or infinite link cost");
  }
  pair_route_offset_.push_back(0);
  std::vector<std::int32_t> first_channel_fifo;  // channel -> FIFO group, -1 for none yet
  for (DeviceId s = 0; s < num_devices_; ++s) {
    for (DeviceId t = 0; t < num_devices_; ++t) {
      Seconds latency = 0;
      double per_byte = 0;
      for (hardware::Hop hop : cluster.route(s, t)) {
        pair_channels_.push_back(hop.channel());
        latency += link_costs[at(hop.link)].latency_s;
        per_byte = std::max(per_byte, link_costs[at(hop.link)].seconds_per_byte);
      }
      pair_route_offset_.push_back(static_cast<std::int32_t>(pair_channels_.size()));
      routes_.push_back(Route{latency, per_byte, 0, 0, 0, -1});
      if (s == t) continue;
      GOPT_ASSERT(pair_route_offset_.back() > pair_route_offset_[at(s * num_devices_ + t)],
                  "a route between two devices has no hop");
      // The FIFO group of the route: the one of its first channel.
      const std::int32_t first = pair_channels_[at(pair_route_offset_[at(s * num_devices_ + t)])];
      if (at(first) >= first_channel_fifo.size()) first_channel_fifo.resize(at(first) + 1, -1);
      if (first_channel_fifo[at(first)] < 0) {
        first_channel_fifo[at(first)] = static_cast<std::int32_t>(fifo_tail_.size());
        fifo_tail_.push_back(-1);
      }
      routes_.back().fifo = first_channel_fifo[at(first)];
    }
  }
  for (std::size_t pair = 0; pair < D * D; ++pair) {
    route_length_ =
        std::max(route_length_, at(pair_route_offset_[pair + 1] - pair_route_offset_[pair]));
  }
  if (route_length_ < kShortRoute) route_length_ = kShortRoute;
  // An empty route (src == dst, never used) gets a channel of its own past the links'.
  route_channels_.resize(D * D * route_length_);
  for (std::size_t pair = 0; pair < D * D; ++pair) {
    const auto begin = pair_route_offset_[pair];
    const auto size = at(pair_route_offset_[pair + 1] - begin);
    for (std::size_t k = 0; k < route_length_; ++k) {
      route_channels_[pair * route_length_ + k] =
          size == 0 ? 2 * cluster.num_links() + static_cast<std::int32_t>(pair)
                    : pair_channels_[at(begin) + (k < size ? k : 0)];
    }
  }

  zero_placement_.assign(at(n_), 0);
  for (const NodeId v : graph.topological_order()) {
    if (graph.in_degree(v) == 0) sources_.push_back(v);
  }
  identity_groups_.group_of.resize(at(n_));
  std::iota(identity_groups_.group_of.begin(), identity_groups_.group_of.end(), 0);
  identity_groups_.member_offset.resize(at(n_) + 1);
  std::iota(identity_groups_.member_offset.begin(), identity_groups_.member_offset.end(), 0);
  identity_groups_.members = identity_groups_.group_of;
  groups_ = &identity_groups_;

  // Buffers sized once.
  ops_.resize(at(n_));
  task_start_.resize(at(n_));
  slot_transfer_.resize(at(graph.num_edges()));
  transfers_.resize(at(graph.num_edges()));
  // One spare entry: finish() writes the entry past the free list before it knows
  // whether the slot is freed.
  free_slots_.resize(at(graph.num_edges()) + 1);
  consumers_.resize(at(graph.num_edges()));
  core::EdgeIndex max_out_degree = 0;
  for (NodeId v = 0; v < n_; ++v) max_out_degree = std::max(max_out_degree, graph.out_degree(v));
  remote_edges_.resize(at(max_out_degree));
  remote_devices_.resize(D);
  out_offset_.resize(at(n_) + 1);
  in_offset_.resize(at(n_) + 1);
  for (NodeId v = 0; v <= n_; ++v) {
    out_offset_[at(v)] = v < n_ ? graph.out_begin(v) : graph.num_edges();
    in_offset_[at(v)] = v < n_ ? graph.in_begin(v) : graph.num_edges();
  }
  out_edges_.resize(at(graph.num_edges()));
  in_edges_.resize(at(graph.num_edges()));
  std::vector<core::EdgeIndex> slot_of_edge(at(graph.num_edges()));
  for (core::EdgeIndex s = 0; s < graph.num_edges(); ++s) slot_of_edge[at(graph.in_edge(s))] = s;
  for (core::EdgeIndex e = 0; e < graph.num_edges(); ++e) {
    out_edges_[at(e)] = OutEdge{graph.out_target(e), slot_of_edge[at(e)], graph.edge_bytes(e)};
  }
  for (core::EdgeIndex s = 0; s < graph.num_edges(); ++s) {
    in_edges_[at(s)] = InEdge{graph.in_source(s), graph.edge_bytes(graph.in_edge(s)) > 0};
  }
  ready_.resize(D);
  for (auto& q : ready_) q.reserve(at(n_));
  ready_ranks_.resize(D);
  for (auto& q : ready_ranks_) q.resize(at(n_));
  busy_streams_.resize(D);
  idle_streams_.resize(D);
  memory_.resize(D);
  channel_free_s_.resize(2 * at(cluster.num_links()) + D * D);
  remote_mark_.assign(D, 0);
  remote_bytes_.resize(D);
  remote_transfer_.resize(D);
  dirty_.resize(D);
  is_dirty_.assign(D, 0);
  std::size_t copy_streams = 0;  // receiver copies in flight hold one stream each
  if (receiver_copies_) {
    copy_queue_capacity_ = at(graph.num_edges());
    copy_queue_.resize(D * copy_queue_capacity_);
    copy_head_.assign(D, 0);
    copy_tail_.assign(D, 0);
    for (DeviceId d = 0; d < num_devices_; ++d) {
      if (!copy_engine_[at(d)]) copy_streams += at(device_streams_[at(d)]);
    }
  }
  events_.reserve(at(cluster.total_compute_streams()), fifo_tail_.size() + copy_streams);
  result_.devices.resize(D);
  result_.links.resize(at(cluster.num_links()));
}

void Simulator::Impl::allocate(DeviceId d, Bytes bytes) {
  Bytes& used = memory_[at(d)];
  used += bytes;
  DeviceResult& dev = result_.devices[at(d)];
  if (used > dev.peak_memory_bytes) {
    dev.peak_memory_bytes = used;
    if (used > capacity_[at(d)] && !result_.oom) {
      result_.oom = true;
      result_.oom_device = d;
      result_.oom_time_s = now_;
      if (options_.stop_on_oom) stop_ = true;
    }
  }
}

template <bool kFused>
bool Simulator::Impl::needs_buffer(NodeId op) const {
  if constexpr (kFused) {
    return needs_buffer_[at(op)] != 0;
  } else {
    return output_bytes_[op] > 0;
  }
}

// The event handlers and what they call are forced inline into run(): one frame for the
// whole dispatch loop, the arrays' base pointers kept in registers (3-4% at 80k nodes).
template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void Simulator::Impl::make_ready(std::int32_t task, DeviceId d) {
  std::uint64_t key;
  if constexpr (kFused) {
    key = task_key_[at(task)];
  } else {
    key = static_cast<std::uint32_t>(topo_rank_[task]);
    if (!by_rank_) key |= priority_bits(priority_[task]);
  }
  if (by_rank_) {
    ready_ranks_[at(d)].push(static_cast<std::uint32_t>(key));
  } else {
    ready_[at(d)].push(key);
  }
  mark_dirty(d);
}

template <bool kFused, bool kObserved>
void Simulator::Impl::satisfy(NodeId consumer, DeviceId d) {
  std::int32_t task = kFused ? groups_->group_of[at(consumer)] : consumer;
  if (--ops_[at(task)].pending == 0) make_ready<kFused, kObserved>(task, d);
}

template <bool kFused, bool kObserved>
void Simulator::Impl::dispatch(DeviceId d) {
  if (receiver_copies_) start_copies<kObserved>(d);
  if (by_rank_) {
    RankSet& queue = ready_ranks_[at(d)];
    while (idle_streams_[at(d)] > 0 && !queue.empty()) {
      const std::uint32_t rank = queue.pop();
      start<kFused, kObserved>(kFused ? task_of_rank_[rank] : topo_order_[rank], d);
    }
    return;
  }
  ReadyHeap& queue = ready_[at(d)];
  while (idle_streams_[at(d)] > 0 && !queue.empty()) {
    auto rank = static_cast<std::uint32_t>(queue.pop());
    start<kFused, kObserved>(kFused ? task_of_rank_[rank] : topo_order_[rank], d);
  }
}

// Receiver copies go first, in issue order, as the CPU backend's worker performs its
// incoming copies before its ready ops. Each holds a stream of d from now until it lands.
template <bool kObserved>
void Simulator::Impl::start_copies(DeviceId d) {
  std::int32_t head = copy_head_[at(d)];
  const std::int32_t tail = copy_tail_[at(d)];
  const std::int32_t* queue = copy_queue_.data() + at(d) * copy_queue_capacity_;
  while (idle_streams_[at(d)] > 0 && head < tail) {
    const std::int32_t id = queue[head++];
    const std::uint64_t busy = busy_streams_[at(d)];
    const int stream = __builtin_ctzll(~busy);
    busy_streams_[at(d)] = busy | (std::uint64_t{1} << stream);
    --idle_streams_[at(d)];
    Transfer& t = transfers_[at(id)];
    assert(t.next_in_fifo == kQueuedCopy && "a receiver copy started twice");
    t.end_s += now_;  // it held its duration while queued
    t.sequence = static_cast<std::uint32_t>(sequence_++);
    t.next_in_fifo = -2 - stream;
    events_.push_arrival(Event{t.end_s, arrival_key(t.sequence, id)});
    if constexpr (kObserved) {
      transfer_times_[at(id)].start_s = now_;
      observer_->on_transfer_start(transfer_event(id));
    }
  }
  copy_head_[at(d)] = head;
}

template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void Simulator::Impl::start(std::int32_t task, DeviceId d) {
  const std::uint64_t busy = busy_streams_[at(d)];
  const int stream = __builtin_ctzll(~busy);
  busy_streams_[at(d)] = busy | (std::uint64_t{1} << stream);
  --idle_streams_[at(d)];
  Seconds duration;
  if constexpr (kFused) {
    duration = task_time_[at(task)];
    const auto& gr = *groups_;
    for (auto i = gr.member_offset[at(task)]; i < gr.member_offset[at(task) + 1]; ++i) {
      NodeId m = gr.members[at(i)];
      if (needs_buffer<true>(m)) allocate(d, output_bytes_[m]);
    }
  } else {
    duration = op_time_[at(task) * at(num_types_) + at(device_type_[at(d)])];
    if (output_bytes_[task] > 0) allocate(d, output_bytes_[task]);
    // finish() will walk the op's edges: start loading them now (a kernel runs while
    // other events are handled, and these are the loop's first-touch cache misses).
    __builtin_prefetch(out_edges_.data() + out_offset_[at(task)]);
    __builtin_prefetch(in_edges_.data() + in_offset_[at(task)]);
  }
  DeviceResult& dev = result_.devices[at(d)];
  dev.busy_s += duration;
  ++dev.num_kernels;
  ops_[at(task)].stream = stream;
  if constexpr (kObserved) task_start_[at(task)] = now_;  // read by kernel_event() only
  push_event(now_ + duration, static_cast<std::uint64_t>(task));
  if constexpr (kObserved) observer_->on_kernel_start(kernel_event(task, d));
}

template <bool kObserved>
[[gnu::always_inline]] inline std::int32_t Simulator::Impl::issue_transfer(NodeId producer,
                                                                           DeviceId src,
                                                                           DeviceId dst,
                                                                           Bytes bytes) {
  ++num_transfers_;
  const std::int32_t id =
      !kObserved && num_free_slots_ > 0 ? free_slots_[at(--num_free_slots_)] : num_slots_++;
  auto pair = at(src) * at(num_devices_) + at(dst);
  Route& route = routes_[pair];
  if (receiver_copies_ && !copy_engine_[at(dst)]) {
    // Queued for a stream of dst; it holds no link (the receiver copies through memory).
    const Seconds duration = route.latency_s + static_cast<double>(bytes) * route.seconds_per_byte;
    route.bytes += bytes;
    route.busy_s += duration;
    ++route.count;
    transfers_[at(id)] = Transfer{producer, src, dst, 0, bytes, duration, 0, kQueuedCopy, 0, 0};
    if constexpr (kObserved) transfer_times_.push_back(TransferTimes{now_, now_});
    copy_queue_[at(dst) * copy_queue_capacity_ + at(copy_tail_[at(dst)]++)] = id;
    mark_dirty(dst);
    return id;
  }
  Seconds start_s = now_;
  const std::size_t length = route_length_;
  const std::int32_t* channels = route_channels_.data() + pair * length;
  Seconds* channel_free_s = channel_free_s_.data();
  const bool unrolled = length == kShortRoute;  // the same for every transfer of a run
  if (unrolled) {
    for (std::size_t k = 0; k < kShortRoute; ++k) {
      start_s = std::max(start_s, channel_free_s[at(channels[k])]);
    }
  } else {
    for (std::size_t k = 0; k < length; ++k) {
      start_s = std::max(start_s, channel_free_s[at(channels[k])]);
    }
  }
  Seconds duration = route.latency_s + static_cast<double>(bytes) * route.seconds_per_byte;
  Seconds end_s = start_s + duration;
  if (unrolled) {
    for (std::size_t k = 0; k < kShortRoute; ++k) channel_free_s[at(channels[k])] = end_s;
  } else {
    for (std::size_t k = 0; k < length; ++k) channel_free_s[at(channels[k])] = end_s;
  }
  route.bytes += bytes;
  route.busy_s += duration;
  ++route.count;
  const auto sequence = static_cast<std::uint32_t>(sequence_++);
  transfers_[at(id)] = Transfer{producer, src, dst, 0, bytes, end_s, sequence, -1, 0, 0};
  if constexpr (kObserved) transfer_times_.push_back(TransferTimes{now_, start_s});
  std::int32_t& fifo_tail = fifo_tail_[at(route.fifo)];
  const std::int32_t tail = fifo_tail;
  if (tail < 0) {
    events_.push_arrival(Event{end_s, arrival_key(sequence, id)});
  } else {
    assert(end_s >= transfers_[at(tail)].end_s && "transfer FIFO out of order");
    transfers_[at(tail)].next_in_fifo = id;
  }
  fifo_tail = id;
  if constexpr (kObserved) observer_->on_transfer_start(transfer_event(id));
  return id;
}

template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void Simulator::Impl::produce(NodeId op, DeviceId d,
                                                            std::int32_t task) {
  OpState* ops = ops_.data();
  std::int32_t refs = 0;
  const OutEdge* out_end = out_edges_.data() + out_offset_[at(op) + 1];
  if constexpr (!kFused) {
    // One consumer (a third of the ops in large graphs): what the general pass below does
    // for it, without its bookkeeping of remote devices.
    const OutEdge* e = out_edges_.data() + out_offset_[at(op)];
    if (out_end - e == 1) {
      const NodeId c = e->target;
      const DeviceId dc = ops[c].device;
      const Bytes bytes = e->bytes;
      if (dc == d) {
        refs = bytes > 0;
        satisfy<kFused, kObserved>(c, d);
      } else if (bytes > 0) {
        const std::int32_t t = issue_transfer<kObserved>(op, d, dc, bytes);
        refs = 1;
        Transfer& tr = transfers_[at(t)];
        slot_transfer_[at(e->slot)] = t;
        tr.recv_refs = 1;
        tr.consumer_begin = num_consumers_;
        consumers_[at(num_consumers_++)] = c;
        tr.consumer_end = num_consumers_;
      } else {
        satisfy<kFused, kObserved>(c, dc);  // a control edge: nothing to send
      }
      ops_[at(op)].refs = refs;
      if (refs == 0 && output_bytes_[op] > 0) release(d, output_bytes_[op]);
      return;
    }
  }
  const std::uint64_t stamp = ++stamp_;
  RemoteEdge* remote = remote_edges_.data();
  std::size_t num_remote = 0;
  std::size_t num_devices = 0;
  for (const OutEdge* e = out_edges_.data() + out_offset_[at(op)]; e < out_end; ++e) {
    const NodeId c = e->target;
    if constexpr (kFused) {
      if (groups_->group_of[at(c)] == task) continue;
    }
    const DeviceId dc = ops[c].device;
    const Bytes bytes = e->bytes;
    if (dc == d) {
      refs += bytes > 0;
      satisfy<kFused, kObserved>(c, d);
      continue;
    }
    if (remote_mark_[at(dc)] != stamp) {
      remote_mark_[at(dc)] = stamp;
      remote_bytes_[at(dc)] = bytes;
      remote_devices_[num_devices++] = dc;
    } else {
      remote_bytes_[at(dc)] = std::max(remote_bytes_[at(dc)], bytes);
    }
    remote[num_remote++] = RemoteEdge{c, dc, e->slot, bytes > 0};
  }
  if (num_remote > 0) {
    // One transfer per remote device, issued in the order of the devices' first out-edges;
    // its consumers are listed contiguously.
    bool control_only = false;
    for (std::size_t i = 0; i < num_devices; ++i) {
      const DeviceId dc = remote_devices_[i];
      if (remote_bytes_[at(dc)] == 0) {
        control_only = true;  // satisfied below, nothing sent
        remote_transfer_[at(dc)] = -1;
        continue;
      }
      const std::int32_t t = issue_transfer<kObserved>(op, d, dc, remote_bytes_[at(dc)]);
      ++refs;
      Transfer& tr = transfers_[at(t)];
      std::int32_t num_consumers = num_consumers_;
      tr.consumer_begin = num_consumers;
      if (num_devices == 1) {  // usual: every remote edge goes to dc
        for (std::size_t k = 0; k < num_remote; ++k) {
          slot_transfer_[at(remote[k].slot)] = t;
          tr.recv_refs += remote[k].has_bytes;
          consumers_[at(num_consumers++)] = remote[k].consumer;
        }
      } else {
        // The edges to dc, without a branch per edge (as above).
        std::int32_t* slot_transfer = slot_transfer_.data();
        NodeId* consumers = consumers_.data();
        for (std::size_t k = 0; k < num_remote; ++k) {
          const bool to_dc = remote[k].device == dc;
          std::int32_t& slot = slot_transfer[at(remote[k].slot)];
          slot = select(to_dc, t, slot);
          tr.recv_refs += remote[k].has_bytes & static_cast<std::int32_t>(to_dc);
          consumers[at(num_consumers)] = remote[k].consumer;
          num_consumers += static_cast<std::int32_t>(to_dc);
        }
      }
      tr.consumer_end = num_consumers;
      num_consumers_ = num_consumers;
      remote_transfer_[at(dc)] = t;
    }
    if (control_only) {
      for (std::size_t k = 0; k < num_remote; ++k) {
        if (remote_transfer_[at(remote[k].device)] < 0) {
          satisfy<kFused, kObserved>(remote[k].consumer, remote[k].device);
        }
      }
    }
  }
  ops_[at(op)].refs = refs;
  if (refs == 0 && needs_buffer<kFused>(op)) release(d, output_bytes_[op]);
}

template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void Simulator::Impl::finish(std::int32_t task) {
  const auto& gr = *groups_;
  const NodeId first = kFused ? gr.members[at(gr.member_offset[at(task)])] : task;
  const DeviceId d = ops_[at(first)].device;
  if constexpr (kObserved) observer_->on_kernel_end(kernel_event(task, d));
  busy_streams_[at(d)] &= ~(std::uint64_t{1} << ops_[at(task)].stream);
  ++idle_streams_[at(d)];
  mark_dirty(d);
  ++finished_tasks_;
  const auto begin = kFused ? gr.member_offset[at(task)] : 0;
  const auto end = kFused ? gr.member_offset[at(task) + 1] : 1;
  for (auto i = begin; i < end; ++i) {
    const NodeId m = kFused ? gr.members[at(i)] : task;
    // Inputs consumed: release local tensors and received copies. Both live on d, so the
    // input's counter and size are selected without a branch (local or remote is data
    // dependent and unpredictable): a local input's slot_transfer_ entry is stale but in
    // range and is read, never used.
    const InEdge* in_edges = in_edges_.data();
    Bytes released = 0;
    std::int32_t num_free = num_free_slots_;
    for (auto s = in_offset_[at(m)], end_slot = in_offset_[at(m) + 1]; s < end_slot; ++s) {
      if (!in_edges[s].has_bytes) continue;
      const NodeId u = in_edges[s].source;
      if constexpr (kFused) {
        if (gr.group_of[at(u)] == task) continue;
      }
      OpState& producer = ops_[at(u)];
      const std::int32_t slot = slot_transfer_[at(s)];
      Transfer& t = transfers_[at(slot)];
      const bool local = producer.device == d;
      std::int32_t* refs = select(local, &producer.refs, &t.recv_refs);
      const bool last = --*refs == 0;
      const Bytes local_bytes = select<Bytes>(needs_buffer<kFused>(u), output_bytes_[u], 0);
      released += select<Bytes>(last, select(local, local_bytes, t.bytes), 0);
      if constexpr (!kObserved) {
        free_slots_[at(num_free)] = slot;
        num_free += static_cast<std::int32_t>(last & !local);
      }
    }
    num_free_slots_ = num_free;
    release(d, released);
    produce<kFused, kObserved>(m, d, task);
  }
}

template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void Simulator::Impl::arrive(std::int32_t id) {
  Transfer& t = transfers_[at(id)];
  const std::int32_t next_id = t.next_in_fifo;
  if (next_id < 0) {
    if (next_id == -1) {
      fifo_tail_[at(routes_[at(t.src) * at(num_devices_) + at(t.dst)].fifo)] = -1;
    } else {  // a receiver copy: its stream on dst is free again
      busy_streams_[at(t.dst)] &= ~(std::uint64_t{1} << (-2 - next_id));
      ++idle_streams_[at(t.dst)];
      mark_dirty(t.dst);
    }
  } else {
    const Transfer& next = transfers_[at(next_id)];
    events_.push_arrival(Event{next.end_s, arrival_key(next.sequence, next_id)});
  }
  if constexpr (kObserved) observer_->on_transfer_end(transfer_event(id));
  if (t.recv_refs > 0) allocate(t.dst, t.bytes);
  {
    // Whether this was the producer's last reference is data dependent: no branch.
    const bool last = --ops_[at(t.producer)].refs == 0;
    const bool held = needs_buffer<kFused>(t.producer);
    release(t.src, select<Bytes>(last & held, output_bytes_[t.producer], 0));
  }
  // Every transfer serves at least one consumer (a data edge).
  const NodeId* consumers = consumers_.data();
  const DeviceId dst = t.dst;
  const auto last = t.consumer_end - 1;
  for (auto k = t.consumer_begin; k < last; ++k) satisfy<kFused, kObserved>(consumers[k], dst);
  // Only dst can become dirty in an arrival. If the last consumer becomes ready while dst
  // has an idle stream and nothing else ready, the dispatch pass after this event would
  // start exactly it: start it now, without the ready queue and the pass.
  const NodeId c = consumers[last];
  const std::int32_t task = kFused ? groups_->group_of[at(c)] : c;
  if (--ops_[at(task)].pending != 0) return;
  const bool queue_empty = by_rank_ ? ready_ranks_[at(dst)].empty() : ready_[at(dst)].empty();
  if (!is_dirty_[at(dst)] && idle_streams_[at(dst)] > 0 && queue_empty) {
    start<kFused, kObserved>(task, dst);
  } else {
    make_ready<kFused, kObserved>(task, dst);
  }
}

template <bool kFused, bool kObserved>
void Simulator::Impl::run() {
  const std::int32_t num_tasks = kFused ? groups_->num_groups() : n_;
  if constexpr (kFused) {
    const auto& gr = *groups_;
    for (std::int32_t task = 0; task < num_tasks; ++task) {
      std::int32_t count = 0;
      for (auto i = gr.member_offset[at(task)]; i < gr.member_offset[at(task) + 1]; ++i) {
        NodeId m = gr.members[at(i)];
        for (auto s = g_.in_begin(m); s < g_.in_end(m); ++s) {
          count += gr.group_of[at(g_.in_source(s))] != task;
        }
      }
      ops_[at(task)].pending = count;
    }
    // Groups are numbered in topological order of their first member.
    for (std::int32_t task = 0; task < num_tasks; ++task) {
      if (ops_[at(task)].pending == 0) {
        make_ready<true, kObserved>(task, place_[gr.members[at(gr.member_offset[at(task)])]]);
      }
    }
  } else {
    // pending was set to the in-degree by simulate().
    for (const NodeId v : sources_) make_ready<false, kObserved>(v, place_[v]);
  }
  Event ev;
  for (;;) {
    for (std::int32_t i = 0; i < num_dirty_; ++i) {
      const DeviceId d = dirty_[at(i)];
      is_dirty_[at(d)] = 0;
      dispatch<kFused, kObserved>(d);
    }
    num_dirty_ = 0;
    if (stop_ || !events_.pop(ev)) break;
    now_ = ev.time();
    auto id = static_cast<std::int32_t>(ev.key() & kIdMask);
    if (ev.key() & kArrivalBit) {
      arrive<kFused, kObserved>(id);
    } else {
      finish<kFused, kObserved>(id);
    }
  }
  GOPT_ASSERT(stop_ || finished_tasks_ == num_tasks, "the simulation ended with ops not run");
}

void Simulator::Impl::prepare_fusion(const core::Decision& decision) {
  fusion_workspace_.form_groups(g_, decision.placement ? place_ : nullptr, decision.fusion->data(),
                                fused_groups_);
  groups_ = &fused_groups_;
  const auto& gr = fused_groups_;
  const std::int32_t num_groups = gr.num_groups();
  needs_buffer_.resize(at(n_));
  task_time_.resize(at(num_groups));
  task_key_.resize(at(num_groups));
  task_of_rank_.resize(at(n_));
  for (NodeId v = 0; v < n_; ++v) {
    bool has_data_out = false;
    bool leaves = false;
    for (auto e = g_.out_begin(v); e < g_.out_end(v); ++e) {
      if (g_.edge_bytes(e) == 0) continue;
      has_data_out = true;
      leaves = leaves || gr.group_of[at(g_.out_target(e))] != gr.group_of[at(v)];
    }
    needs_buffer_[at(v)] = output_bytes_[v] > 0 && (!has_data_out || leaves);
  }
  for (std::int32_t task = 0; task < num_groups; ++task) {
    const auto begin = gr.member_offset[at(task)];
    const auto end = gr.member_offset[at(task) + 1];
    const NodeId first = gr.members[at(begin)];
    const DeviceId d = place_[first];
    std::int32_t priority = std::numeric_limits<std::int32_t>::min();
    for (auto i = begin; i < end; ++i) {
      priority = std::max(priority, priority_ ? priority_[gr.members[at(i)]] : 0);
    }
    auto rank = static_cast<std::uint32_t>(topo_rank_[first]);
    task_of_rank_[rank] = task;
    task_key_[at(task)] = rank | (priority_ ? priority_bits(priority) : 0);
    if (end - begin == 1) {
      task_time_[at(task)] = op_time_[at(first) * at(num_types_) + at(device_type_[at(d)])];
      continue;
    }
    // Memory traffic of the fused kernel: members' reads and writes, minus the reads of
    // internal edges and the writes of outputs that never leave the group.
    Bytes traffic = 0;
    for (auto i = begin; i < end; ++i) {
      NodeId m = gr.members[at(i)];
      traffic += g_.bytes_read()[at(m)] + g_.bytes_written()[at(m)];
      if (!needs_buffer_[at(m)]) traffic -= g_.bytes_written()[at(m)];
      for (auto s = g_.in_begin(m); s < g_.in_end(m); ++s) {
        if (gr.group_of[at(g_.in_source(s))] == task) traffic -= g_.edge_bytes(g_.in_edge(s));
      }
    }
    traffic = std::max<Bytes>(traffic, 0);
    task_time_[at(task)] =
        cost_.fused_time(g_, gr.members.data() + begin, at(end - begin), traffic, d);
    // As for op times: a negative time would schedule an event before the present, which
    // the event queue cannot hold (the run would end with ops not run).
    GOPT_ASSERT(task_time_[at(task)] >= 0 &&
                    task_time_[at(task)] < std::numeric_limits<Seconds>::infinity(),
                "cost model returned a negative or infinite fused time");
  }
}

const SimulationResult& Simulator::Impl::simulate(const core::Decision& decision,
                                                  SimulationObserver* observer) {
  if (options_.validate_decisions) {
    core::validate_decision(decision, n_, num_devices_, options_.decision_source, &g_.node_names());
  }
  place_ = decision.placement ? decision.placement->data() : zero_placement_.data();
  priority_ = decision.priority ? decision.priority->data() : nullptr;
  by_rank_ = priority_ == nullptr;
  observer_ = observer;
  bool fused = false;
  if (decision.fusion) {
    fused = std::any_of(decision.fusion->begin(), decision.fusion->end(),
                        [](std::int32_t f) { return f > 0; });
  }
  groups_ = &identity_groups_;
  if (fused) prepare_fusion(decision);

  // Reset state; capacities are kept.
  for (auto& dev : result_.devices) dev = DeviceResult{};
  for (auto& link : result_.links) link = LinkResult{};
  result_.step_time_s = 0;
  result_.oom = false;
  result_.oom_device = -1;
  result_.oom_time_s = 0;
  result_.bytes_moved = 0;
  result_.lower_bound_critical_path_s = lb_critical_path_s_;
  result_.lower_bound_work_s = lb_work_s_;
  now_ = 0;
  sequence_ = 0;
  finished_tasks_ = 0;
  stop_ = false;
  num_transfers_ = 0;
  num_slots_ = 0;
  num_free_slots_ = 0;
  num_consumers_ = 0;
  transfer_times_.clear();
  for (Route& route : routes_) {
    route.bytes = 0;
    route.busy_s = 0;
    route.count = 0;
  }
  events_.clear();
  std::fill(fifo_tail_.begin(), fifo_tail_.end(), -1);
  std::fill(copy_head_.begin(), copy_head_.end(), 0);
  std::fill(copy_tail_.begin(), copy_tail_.end(), 0);
  std::fill(channel_free_s_.begin(), channel_free_s_.end(), 0.0);
  for (DeviceId d = 0; d < num_devices_; ++d) {
    ready_[at(d)].clear();
    ready_ranks_[at(d)].clear();
    busy_streams_[at(d)] = 0;
    idle_streams_[at(d)] = device_streams_[at(d)];
    memory_[at(d)] = 0;
  }
  const Bytes* params = g_.param_bytes().data();
  const core::EdgeIndex* in_offset = in_offset_.data();
  for (NodeId v = 0; v < n_; ++v) {
    memory_[at(place_[v])] += params[v];
    ops_[at(v)].device = place_[v];
    ops_[at(v)].pending = in_offset[v + 1] - in_offset[v];  // fused runs reset it per group
  }
  for (DeviceId d = 0; d < num_devices_; ++d) {
    result_.devices[at(d)].param_bytes = memory_[at(d)];
    memory_[at(d)] -= result_.devices[at(d)].param_bytes;
    allocate(d, result_.devices[at(d)].param_bytes);  // may report OOM at time 0
  }

  if (observer_) {
    observer_->on_simulation_begin(SimulationContext{&g_, &cluster_, &decision});
  }
  if (fused) {
    observer_ ? run<true, true>() : run<true, false>();
  } else {
    observer_ ? run<false, true>() : run<false, false>();
  }
  result_.step_time_s = now_;
  result_.num_transfers = num_transfers_;
  for (std::size_t pair = 0; pair < routes_.size(); ++pair) {
    const Route& route = routes_[pair];
    if (route.count == 0) continue;
    result_.bytes_moved += route.bytes;
    for (auto i = pair_route_offset_[pair]; i < pair_route_offset_[pair + 1]; ++i) {
      LinkResult& link = result_.links[at(pair_channels_[at(i)] >> 1)];
      link.bytes_moved += route.bytes;
      link.busy_s += route.busy_s;
      link.num_transfers += route.count;
    }
  }
  result_.num_kernels = 0;
  for (const auto& dev : result_.devices) result_.num_kernels += dev.num_kernels;
  if (observer_) observer_->on_simulation_end(result_);
  observer_ = nullptr;
  return result_;
}

KernelEvent Simulator::Impl::kernel_event(std::int32_t task, DeviceId d) const {
  KernelEvent ev;
  ev.task = task;
  ev.members = groups_->members.data() + groups_->member_offset[at(task)];
  ev.num_members = groups_->group_size(task);
  ev.device = d;
  ev.stream = ops_[at(task)].stream;
  ev.start_s = task_start_[at(task)];
  ev.end_s = groups_ == &identity_groups_
                 ? ev.start_s + op_time_[at(task) * at(num_types_) + at(device_type_[at(d)])]
                 : ev.start_s + task_time_[at(task)];
  return ev;
}

TransferEvent Simulator::Impl::transfer_event(std::int32_t id) const {
  const Transfer& t = transfers_[at(id)];
  TransferEvent ev;
  ev.transfer = id;
  ev.producer = t.producer;
  ev.src = t.src;
  ev.dst = t.dst;
  ev.bytes = t.bytes;
  auto route = cluster_.route(t.src, t.dst);
  ev.hops = route.begin();
  ev.num_hops = static_cast<std::int32_t>(route.size());
  ev.request_s = transfer_times_[at(id)].request_s;
  ev.start_s = transfer_times_[at(id)].start_s;
  ev.end_s = t.end_s;
  return ev;
}

Simulator::Simulator(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                     const hardware::CostModel& cost_model, SimulatorOptions options)
    : impl_(std::make_unique<Impl>(graph, cluster, cost_model, std::move(options))) {}
Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;
Simulator& Simulator::operator=(Simulator&&) noexcept = default;

const SimulationResult& Simulator::simulate(const core::Decision& decision,
                                            SimulationObserver* observer) {
  return impl_->simulate(decision, observer);
}

Seconds Simulator::op_time(NodeId op, DeviceId device) const {
  return impl_->op_time_[at(op) * at(impl_->num_types_) + at(impl_->device_type_[at(device)])];
}

const FusionGroups& Simulator::last_groups() const { return *impl_->groups_; }
const core::CompiledGraph& Simulator::graph() const { return impl_->g_; }
const hardware::Cluster& Simulator::cluster() const { return impl_->cluster_; }
const SimulatorOptions& Simulator::options() const { return impl_->options_; }

SimulationResult simulate_once(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                               const hardware::CostModel& cost_model,
                               const core::Decision& decision, SimulationObserver* observer) {
  Simulator simulator(graph, cluster, cost_model);
  return simulator.simulate(decision, observer);
}

}  // namespace gopt::simulator
