#include "simulator/simulator.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/errors.h"

namespace gopt::simulator {
namespace {

template <typename I>
std::size_t at(I i) {
  return static_cast<std::size_t>(i);
}

// An event: a kernel finishing or a transfer arriving. Ordered by (time, sequence number);
// `key` packs the sequence number (high 32 bits), the kind (bit 31) and the task or
// transfer index (low 31 bits). Simulated times are finite and >= 0, so the bit pattern
// of a time orders like the time itself, and (time, key) compares as one 128-bit integer
// (branch-free in the heap's inner loop).
__extension__ typedef unsigned __int128 EventOrder;

struct Event {
  EventOrder order;

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
constexpr std::uint64_t kIdMask = kArrivalBit - 1;

// Binary min-heap over a vector whose capacity is kept between simulations; pops use
// Floyd's bottom-up sift (one branch-free comparison per level).
class EventQueue {
 public:
  void reserve(std::size_t n) { heap_.reserve(n); }
  void clear() { heap_.clear(); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }

  void push(Event ev) {
    heap_.push_back(ev);
    sift_up(heap_.size() - 1, ev.order);
  }

  Event pop() {
    Event* h = heap_.data();
    const Event top = h[0];
    const EventOrder last = heap_.back().order;
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return top;
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
    sift_up(hole, last);
    return top;
  }

 private:
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

  std::vector<Event> heap_;
};

// Min-heap of ready-queue keys (priority, topological rank) for one device. Pops move the
// hole down to a leaf with one branch-free comparison per level, then sift the last key
// up (Floyd's bottom-up heap): ready queues of large graphs hold hundreds of ops.
class ReadyQueue {
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

// Higher priority first: map an int32 priority to a 32-bit value that sorts the other way.
inline std::uint64_t priority_bits(std::int32_t priority) {
  auto biased = static_cast<std::uint32_t>(priority) ^ 0x80000000u;
  return static_cast<std::uint64_t>(~biased) << 32;
}

// Hot state of a transfer (40 bytes); request and start times are kept only while an
// observer is attached (TransferTimes).
struct Transfer {
  NodeId producer;
  DeviceId src;
  DeviceId dst;
  std::int32_t recv_refs;  // data edges into consumers on dst still to finish
  Bytes bytes;
  Seconds end_s;
  std::uint64_t event_key;  // (sequence, kind, id) of its arrival event
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
  std::vector<Bytes> capacity_;
  std::vector<Seconds> op_time_;  // [op * num_types + type]
  Seconds lb_critical_path_s_ = 0;
  Seconds lb_work_s_ = 0;
  std::vector<std::int32_t> pair_route_offset_;  // [src * D + dst], D*D + 1
  std::vector<std::int32_t> pair_channels_;
  std::vector<Seconds> pair_latency_s_;
  std::vector<double> pair_seconds_per_byte_;
  std::vector<DeviceId> zero_placement_;
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
  std::vector<std::int32_t> pending_;
  std::vector<std::int32_t> task_stream_;
  std::vector<Seconds> task_start_;
  std::vector<std::int32_t> local_refs_;
  std::vector<std::int32_t> edge_transfer_;
  std::vector<Transfer> transfers_;
  std::vector<std::int32_t> next_in_pair_;     // next transfer on the same route, -1 for none
  std::vector<TransferTimes> transfer_times_;  // only with an observer
  // Link statistics are accumulated per route and spread over its links at the end.
  std::vector<Bytes> pair_bytes_;
  std::vector<Seconds> pair_busy_s_;
  std::vector<std::int32_t> pair_count_;
  std::vector<Bytes> in_bytes_;  // edge bytes in in-slot order
  // Arrivals on one (src, dst) route happen in issue order (the route's links are FIFO),
  // so each route keeps a FIFO of its transfers and only its head sits in the event
  // queue: the queue holds at most streams + devices^2 events.
  std::vector<std::int32_t> pair_head_;
  std::vector<std::int32_t> pair_tail_;
  std::vector<ReadyQueue> ready_;
  std::vector<std::uint64_t> busy_streams_;
  std::vector<int> idle_streams_;
  std::vector<Bytes> memory_;
  std::vector<Seconds> channel_free_s_;
  std::vector<std::uint64_t> remote_mark_;
  std::vector<std::uint64_t> transfer_mark_;
  std::vector<Bytes> remote_bytes_;
  std::vector<std::int32_t> remote_transfer_;
  std::vector<DeviceId> dirty_;
  std::vector<std::uint8_t> is_dirty_;
  EventQueue events_;
  std::uint64_t stamp_ = 0;
  std::uint64_t sequence_ = 0;
  Seconds now_ = 0;
  std::int32_t finished_tasks_ = 0;
  bool stop_ = false;
  SimulationResult result_;

 private:
  template <bool kFused>
  void run();
  template <bool kFused>
  void start(std::int32_t task, DeviceId d);
  template <bool kFused>
  void finish(std::int32_t task);
  template <bool kFused>
  void produce(NodeId op, DeviceId d, std::int32_t task);
  template <bool kFused>
  void arrive(std::int32_t transfer);
  template <bool kFused>
  void dispatch(DeviceId d);
  template <bool kFused>
  void make_ready(std::int32_t task, DeviceId d);
  template <bool kFused>
  void satisfy(NodeId consumer, DeviceId d);
  template <bool kFused>
  bool needs_buffer(NodeId op) const;

  void prepare_fusion(const core::Decision& decision);
  void issue_transfer(NodeId producer, DeviceId src, DeviceId dst, Bytes bytes);
  void allocate(DeviceId d, Bytes bytes);
  void release(DeviceId d, Bytes bytes) { memory_[at(d)] -= bytes; }
  void push_event(Seconds time, std::uint64_t kind_and_id) {
    events_.push(Event{time, (sequence_++ << 32) | kind_and_id});
  }
  std::uint64_t next_key(std::uint64_t kind_and_id) { return (sequence_++ << 32) | kind_and_id; }
  void mark_dirty(DeviceId d) {
    if (!is_dirty_[at(d)]) {
      is_dirty_[at(d)] = 1;
      dirty_.push_back(d);
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
  for (hardware::LinkId l = 0; l < cluster.num_links(); ++l)
    link_costs.push_back(cost_model.link_cost(l));
  pair_route_offset_.push_back(0);
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
      pair_latency_s_.push_back(latency);
      pair_seconds_per_byte_.push_back(per_byte);
    }
  }

  zero_placement_.assign(at(n_), 0);
  identity_groups_.group_of.resize(at(n_));
  std::iota(identity_groups_.group_of.begin(), identity_groups_.group_of.end(), 0);
  identity_groups_.member_offset.resize(at(n_) + 1);
  std::iota(identity_groups_.member_offset.begin(), identity_groups_.member_offset.end(), 0);
  identity_groups_.members = identity_groups_.group_of;
  groups_ = &identity_groups_;

  // Buffers sized once.
  pending_.resize(at(n_));
  task_stream_.resize(at(n_));
  task_start_.resize(at(n_));
  local_refs_.resize(at(n_));
  edge_transfer_.resize(at(graph.num_edges()));
  transfers_.reserve(at(graph.num_edges()));
  next_in_pair_.reserve(at(graph.num_edges()));
  pair_bytes_.assign(D * D, 0);
  pair_busy_s_.assign(D * D, 0);
  pair_count_.assign(D * D, 0);
  in_bytes_.resize(at(graph.num_edges()));
  for (core::EdgeIndex s = 0; s < graph.num_edges(); ++s)
    in_bytes_[at(s)] = graph.edge_bytes(graph.in_edge(s));
  ready_.resize(D);
  for (auto& q : ready_) q.reserve(at(n_));
  busy_streams_.resize(D);
  idle_streams_.resize(D);
  memory_.resize(D);
  channel_free_s_.resize(2 * at(cluster.num_links()));
  pair_head_.assign(D * D, -1);
  pair_tail_.assign(D * D, -1);
  remote_mark_.assign(D, 0);
  transfer_mark_.assign(D, 0);
  remote_bytes_.resize(D);
  remote_transfer_.resize(D);
  dirty_.reserve(D);
  is_dirty_.assign(D, 0);
  events_.reserve(at(cluster.total_compute_streams()) + D * D + 16);
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

template <bool kFused>
void Simulator::Impl::make_ready(std::int32_t task, DeviceId d) {
  std::uint64_t key;
  if constexpr (kFused) {
    key = task_key_[at(task)];
  } else {
    key = static_cast<std::uint32_t>(topo_rank_[task]);
    if (priority_) key |= priority_bits(priority_[task]);
  }
  ready_[at(d)].push(key);
  mark_dirty(d);
}

template <bool kFused>
void Simulator::Impl::satisfy(NodeId consumer, DeviceId d) {
  std::int32_t task = kFused ? groups_->group_of[at(consumer)] : consumer;
  if (--pending_[at(task)] == 0) make_ready<kFused>(task, d);
}

template <bool kFused>
void Simulator::Impl::dispatch(DeviceId d) {
  ReadyQueue& queue = ready_[at(d)];
  while (idle_streams_[at(d)] > 0 && !queue.empty()) {
    auto rank = static_cast<std::uint32_t>(queue.pop());
    std::int32_t task = kFused ? task_of_rank_[rank] : topo_order_[rank];
    start<kFused>(task, d);
  }
}

template <bool kFused>
void Simulator::Impl::start(std::int32_t task, DeviceId d) {
  std::uint64_t busy = busy_streams_[at(d)];
  int stream = 0;
  while (busy & (std::uint64_t{1} << stream)) ++stream;
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
  }
  DeviceResult& dev = result_.devices[at(d)];
  dev.busy_s += duration;
  ++dev.num_kernels;
  task_stream_[at(task)] = stream;
  task_start_[at(task)] = now_;
  push_event(now_ + duration, static_cast<std::uint64_t>(task));
  if (observer_) observer_->on_kernel_start(kernel_event(task, d));
}

void Simulator::Impl::issue_transfer(NodeId producer, DeviceId src, DeviceId dst, Bytes bytes) {
  auto id = static_cast<std::int32_t>(transfers_.size());
  auto pair = at(src) * at(num_devices_) + at(dst);
  Seconds start_s = now_;
  const std::int32_t* first = pair_channels_.data() + pair_route_offset_[pair];
  const std::int32_t* last = pair_channels_.data() + pair_route_offset_[pair + 1];
  for (const std::int32_t* c = first; c < last; ++c)
    start_s = std::max(start_s, channel_free_s_[at(*c)]);
  Seconds duration =
      pair_latency_s_[pair] + static_cast<double>(bytes) * pair_seconds_per_byte_[pair];
  Seconds end_s = start_s + duration;
  for (const std::int32_t* c = first; c < last; ++c) channel_free_s_[at(*c)] = end_s;
  pair_bytes_[pair] += bytes;
  pair_busy_s_[pair] += duration;
  ++pair_count_[pair];
  std::uint64_t key = next_key(kArrivalBit | static_cast<std::uint64_t>(id));
  transfers_.push_back(Transfer{producer, src, dst, 0, bytes, end_s, key});
  next_in_pair_.push_back(-1);
  if (observer_) transfer_times_.push_back(TransferTimes{now_, start_s});
  if (pair_tail_[pair] < 0) {
    pair_head_[pair] = id;
    events_.push(Event{end_s, key});
  } else {
    assert(end_s >= transfers_[at(pair_tail_[pair])].end_s && "route FIFO out of order");
    next_in_pair_[at(pair_tail_[pair])] = id;
  }
  pair_tail_[pair] = id;
  if (observer_) observer_->on_transfer_start(transfer_event(id));
}

template <bool kFused>
void Simulator::Impl::produce(NodeId op, DeviceId d, std::int32_t task) {
  const DeviceId* place = place_;
  std::int32_t refs = 0;
  const std::uint64_t stamp = ++stamp_;
  bool any_remote = false;
  const auto out_begin = g_.out_begin(op);
  const auto out_end = g_.out_end(op);
  for (auto e = out_begin; e < out_end; ++e) {
    NodeId c = g_.out_target(e);
    if constexpr (kFused) {
      if (groups_->group_of[at(c)] == task) continue;
    }
    DeviceId dc = place[c];
    Bytes bytes = g_.edge_bytes(e);
    if (dc == d) {
      refs += bytes > 0;
      satisfy<kFused>(c, d);
    } else if (remote_mark_[at(dc)] != stamp) {
      remote_mark_[at(dc)] = stamp;
      remote_bytes_[at(dc)] = bytes;
      any_remote = true;
    } else {
      remote_bytes_[at(dc)] = std::max(remote_bytes_[at(dc)], bytes);
    }
  }
  if (any_remote) {
    for (auto e = out_begin; e < out_end; ++e) {
      NodeId c = g_.out_target(e);
      DeviceId dc = place[c];
      if (dc == d) continue;
      if (transfer_mark_[at(dc)] != stamp) {
        transfer_mark_[at(dc)] = stamp;
        if (remote_bytes_[at(dc)] > 0) {
          remote_transfer_[at(dc)] = static_cast<std::int32_t>(transfers_.size());
          issue_transfer(op, d, dc, remote_bytes_[at(dc)]);
          ++refs;
        } else {
          remote_transfer_[at(dc)] = -1;  // control only: satisfied now, nothing sent
        }
      }
      std::int32_t t = remote_transfer_[at(dc)];
      if (t < 0) {
        satisfy<kFused>(c, dc);
      } else {
        edge_transfer_[at(e)] = t;
        transfers_[at(t)].recv_refs += g_.edge_bytes(e) > 0;
      }
    }
  }
  local_refs_[at(op)] = refs;
  if (refs == 0 && needs_buffer<kFused>(op)) release(d, output_bytes_[op]);
}

template <bool kFused>
void Simulator::Impl::finish(std::int32_t task) {
  const auto& gr = *groups_;
  const NodeId first = kFused ? gr.members[at(gr.member_offset[at(task)])] : task;
  const DeviceId d = place_[first];
  if (observer_) observer_->on_kernel_end(kernel_event(task, d));
  busy_streams_[at(d)] &= ~(std::uint64_t{1} << task_stream_[at(task)]);
  ++idle_streams_[at(d)];
  mark_dirty(d);
  ++finished_tasks_;
  const auto begin = kFused ? gr.member_offset[at(task)] : 0;
  const auto end = kFused ? gr.member_offset[at(task) + 1] : 1;
  for (auto i = begin; i < end; ++i) {
    const NodeId m = kFused ? gr.members[at(i)] : task;
    // Inputs consumed: release local tensors and received copies.
    for (auto s = g_.in_begin(m); s < g_.in_end(m); ++s) {
      if (in_bytes_[at(s)] == 0) continue;
      const NodeId u = g_.in_source(s);
      if constexpr (kFused) {
        if (gr.group_of[at(u)] == task) continue;
      }
      if (place_[u] == d) {
        if (--local_refs_[at(u)] == 0 && needs_buffer<kFused>(u)) release(d, output_bytes_[u]);
      } else {
        Transfer& t = transfers_[at(edge_transfer_[at(g_.in_edge(s))])];
        if (--t.recv_refs == 0) release(d, t.bytes);
      }
    }
    produce<kFused>(m, d, task);
  }
}

template <bool kFused>
void Simulator::Impl::arrive(std::int32_t id) {
  Transfer& t = transfers_[at(id)];
  const auto pair = at(t.src) * at(num_devices_) + at(t.dst);
  const std::int32_t next_id = next_in_pair_[at(id)];
  pair_head_[pair] = next_id;
  if (next_id < 0) {
    pair_tail_[pair] = -1;
  } else {
    const Transfer& next = transfers_[at(next_id)];
    events_.push(Event{next.end_s, next.event_key});
  }
  if (observer_) observer_->on_transfer_end(transfer_event(id));
  if (t.recv_refs > 0) allocate(t.dst, t.bytes);
  if (--local_refs_[at(t.producer)] == 0 && needs_buffer<kFused>(t.producer)) {
    release(t.src, output_bytes_[t.producer]);
  }
  for (auto e = g_.out_begin(t.producer); e < g_.out_end(t.producer); ++e) {
    NodeId c = g_.out_target(e);
    if (place_[c] == t.dst) satisfy<kFused>(c, t.dst);
  }
}

template <bool kFused>
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
      pending_[at(task)] = count;
    }
    // Groups are numbered in topological order of their first member.
    for (std::int32_t task = 0; task < num_tasks; ++task) {
      if (pending_[at(task)] == 0) {
        make_ready<true>(task, place_[gr.members[at(gr.member_offset[at(task)])]]);
      }
    }
  } else {
    for (NodeId v = 0; v < n_; ++v) pending_[at(v)] = g_.in_degree(v);
    for (NodeId r = 0; r < n_; ++r) {
      NodeId v = topo_order_[r];
      if (pending_[at(v)] == 0) make_ready<false>(v, place_[v]);
    }
  }
  for (;;) {
    for (DeviceId d : dirty_) {
      is_dirty_[at(d)] = 0;
      dispatch<kFused>(d);
    }
    dirty_.clear();
    if (events_.empty() || stop_) break;
    Event ev = events_.pop();
    now_ = ev.time();
    auto id = static_cast<std::int32_t>(ev.key() & kIdMask);
    if (ev.key() & kArrivalBit) {
      arrive<kFused>(id);
    } else {
      finish<kFused>(id);
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
  }
}

const SimulationResult& Simulator::Impl::simulate(const core::Decision& decision,
                                                  SimulationObserver* observer) {
  if (options_.validate_decisions) {
    core::validate_decision(decision, n_, num_devices_, options_.decision_source, &g_.node_names());
  }
  place_ = decision.placement ? decision.placement->data() : zero_placement_.data();
  priority_ = decision.priority ? decision.priority->data() : nullptr;
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
  transfers_.clear();
  next_in_pair_.clear();
  transfer_times_.clear();
  std::fill(pair_bytes_.begin(), pair_bytes_.end(), 0);
  std::fill(pair_busy_s_.begin(), pair_busy_s_.end(), 0.0);
  std::fill(pair_count_.begin(), pair_count_.end(), 0);
  events_.clear();
  std::fill(channel_free_s_.begin(), channel_free_s_.end(), 0.0);
  std::fill(pair_head_.begin(), pair_head_.end(), -1);
  std::fill(pair_tail_.begin(), pair_tail_.end(), -1);
  for (DeviceId d = 0; d < num_devices_; ++d) {
    ready_[at(d)].clear();
    busy_streams_[at(d)] = 0;
    idle_streams_[at(d)] = device_streams_[at(d)];
    memory_[at(d)] = 0;
  }
  const Bytes* params = g_.param_bytes().data();
  for (NodeId v = 0; v < n_; ++v) memory_[at(place_[v])] += params[v];
  for (DeviceId d = 0; d < num_devices_; ++d) {
    result_.devices[at(d)].param_bytes = memory_[at(d)];
    memory_[at(d)] -= result_.devices[at(d)].param_bytes;
    allocate(d, result_.devices[at(d)].param_bytes);  // may report OOM at time 0
  }

  if (observer_) {
    observer_->on_simulation_begin(SimulationContext{&g_, &cluster_, &decision});
  }
  if (fused) {
    run<true>();
  } else {
    run<false>();
  }
  result_.step_time_s = now_;
  result_.num_transfers = static_cast<std::int32_t>(transfers_.size());
  for (std::size_t pair = 0; pair < pair_count_.size(); ++pair) {
    if (pair_count_[pair] == 0) continue;
    result_.bytes_moved += pair_bytes_[pair];
    for (auto i = pair_route_offset_[pair]; i < pair_route_offset_[pair + 1]; ++i) {
      LinkResult& link = result_.links[at(pair_channels_[at(i)] >> 1)];
      link.bytes_moved += pair_bytes_[pair];
      link.busy_s += pair_busy_s_[pair];
      link.num_transfers += pair_count_[pair];
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
  ev.stream = task_stream_[at(task)];
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
