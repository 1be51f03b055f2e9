#include "simulator/step_model.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "core/errors.h"
#include "simulator/simulator.h"

namespace gopt::simulator {

// What the Engine calls. The handlers and what they call are forced inline into the
// engine's loop: one frame for the whole dispatch loop, the arrays' base pointers kept in
// registers (3-4% at 80k nodes).
template <bool kFused, bool kObserved>
struct StepModel::Handlers {
  StepModel& model;
  void dispatch() { model.dispatch_changed<kFused, kObserved>(); }
  [[nodiscard]] bool stopped() const { return model.memory_.stop_requested(); }
  void on_kernel_end(std::int32_t task) { model.finish<kFused, kObserved>(task); }
  void on_arrival(std::int32_t id) { model.arrive<kFused, kObserved>(id); }
};

StepModel::StepModel(const PackedGraph& graph, const hardware::Cluster& cluster,
                     const hardware::CostModel& cost_model, const hardware::NetworkModel& network)
    : graph_(graph),
      cluster_(cluster),
      cost_model_(cost_model),
      network_(network),
      output_bytes_(graph.output_bytes()),
      num_devices_(cluster.num_devices()),
      memory_([&] {
        std::vector<Bytes> capacity;
        capacity.reserve(static_cast<std::size_t>(cluster.num_devices()));
        for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
          capacity.push_back(cluster.device(d).memory_capacity_bytes);
        }
        return capacity;
      }()),
      links_(network, at(graph.graph().num_edges())),
      transfers_(at(graph.graph().num_edges())),
      tasks_(graph) {
  GOPT_ASSERT(network.num_devices() == num_devices_, "the network model is of another cluster");
  const auto num_devices = at(num_devices_);
  const auto n = at(graph.num_nodes());
  const auto num_edges = at(graph.graph().num_edges());
  std::size_t copy_streams = 0;  // receiver copies in flight hold one stream each
  for (DeviceId d = 0; d < num_devices_; ++d) {
    const hardware::DeviceSpec& spec = cluster.device(d);
    if (spec.compute_streams < 1 || spec.compute_streams > ComputeDevice::kMaxStreams) {
      throw core::InputError(cluster.name(), "devices[" + std::to_string(d) + "].compute_streams",
                             "the simulator supports 1 to " +
                                 std::to_string(ComputeDevice::kMaxStreams) + " streams, got " +
                                 std::to_string(spec.compute_streams));
    }
    // Every transfer into a device without a copy engine may wait in its copy queue.
    devices_.emplace_back(spec.compute_streams, spec.has_copy_engine, n,
                          spec.has_copy_engine ? 0 : num_edges);
    if (!spec.has_copy_engine) {
      receiver_copies_ = true;
      copy_streams += at(spec.compute_streams);
    }
  }
  zero_placement_.assign(n, 0);
  ops_.resize(n);
  task_start_.resize(n);
  remote_edges_.resize(at(graph.max_out_degree()));
  remote_devices_.resize(num_devices);
  remote_mark_.assign(num_devices, 0);
  remote_bytes_.resize(num_devices);
  remote_transfer_.resize(num_devices);
  changed_.resize(num_devices);
  is_changed_.assign(num_devices, 0);
  // At most one kernel per stream, one arrival per transfer FIFO (one per route at
  // worst) and one per receiver copy in flight.
  engine_.reserve(at(cluster.total_compute_streams()) + num_devices * num_devices + copy_streams);
}

template <bool kFused>
[[gnu::always_inline]] inline void StepModel::make_ready(std::int32_t task, DeviceId d) {
  std::uint64_t key;
  if constexpr (kFused) {
    key = tasks_.key(task);
  } else {
    const auto rank = static_cast<std::uint32_t>(graph_.topological_rank()[task]);
    key = priority_ ? ready_key(rank, priority_[task]) : rank;
  }
  devices_[at(d)].push_ready(key);
  mark_changed(d);
}

template <bool kFused>
void StepModel::satisfy(NodeId consumer, DeviceId d) {
  const std::int32_t task = kFused ? tasks_.groups().group_of[at(consumer)] : consumer;
  if (--ops_[at(task)].pending == 0) make_ready<kFused>(task, d);
}

template <bool kFused, bool kObserved>
void StepModel::dispatch_changed() {
  for (std::int32_t i = 0; i < num_changed_; ++i) {
    const DeviceId d = changed_[at(i)];
    is_changed_[at(d)] = 0;
    dispatch<kFused, kObserved>(d);
  }
  num_changed_ = 0;
}

template <bool kFused, bool kObserved>
void StepModel::dispatch(DeviceId d) {
  if (receiver_copies_) start_copies<kObserved>(d);
  ComputeDevice& device = devices_[at(d)];
  const NodeId* topo_order = graph_.topological_order();
  while (device.has_idle_stream() && !device.ready_empty()) {
    const std::uint32_t rank = device.pop_ready();
    start<kFused, kObserved>(kFused ? tasks_.task_of_rank(rank) : topo_order[rank], d);
  }
}

// Receiver copies go first, in issue order, as the CPU backend's worker performs its
// incoming copies before its ready ops. Each holds a stream of d from now until it lands.
template <bool kObserved>
void StepModel::start_copies(DeviceId d) {
  ComputeDevice& device = devices_[at(d)];
  while (device.has_idle_stream() && device.has_queued_copy()) {
    const std::int32_t id = device.pop_copy();
    Transfer& t = transfers_[id];
    GOPT_ASSERT(t.copy_stream < 0, "a receiver copy started twice");
    t.copy_stream = device.acquire_stream();
    t.end_s += engine_.now();  // it held its duration while queued
    t.sequence = engine_.next_sequence();
    engine_.schedule(t.end_s, t.sequence, EventKind::kArrival, id);
    if constexpr (kObserved) {
      transfers_.set_start(id, engine_.now());
      observer_->on_transfer_start(transfer_event(id));
    }
  }
}

template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void StepModel::start(std::int32_t task, DeviceId d) {
  ComputeDevice& device = devices_[at(d)];
  const int stream = device.acquire_stream();
  Seconds duration;
  if constexpr (kFused) {
    duration = tasks_.time(task);
    const auto& gr = tasks_.groups();
    for (auto i = gr.member_offset[at(task)]; i < gr.member_offset[at(task) + 1]; ++i) {
      const NodeId m = gr.members[at(i)];
      if (tasks_.needs_buffer(m)) allocate(d, output_bytes_[m]);
    }
  } else {
    duration = graph_.op_time_on(task, d);
    if (output_bytes_[task] > 0) allocate(d, output_bytes_[task]);
    // finish() will walk the op's edges: start loading them now (a kernel runs while
    // other events are handled, and these are the loop's first-touch cache misses).
    __builtin_prefetch(graph_.out_begin(task));
    __builtin_prefetch(graph_.in_edges() + graph_.in_begin(task));
  }
  device.record_kernel(duration);
  ops_[at(task)].stream = stream;
  if constexpr (kObserved) task_start_[at(task)] = engine_.now();
  engine_.schedule(engine_.now() + duration, EventKind::kKernelEnd, task);
  if constexpr (kObserved) observer_->on_kernel_start(kernel_event(task, d));
}

template <bool kObserved>
[[gnu::always_inline]] inline std::int32_t StepModel::issue_transfer(NodeId producer, DeviceId src,
                                                                     DeviceId dst, Bytes bytes) {
  const std::int32_t id = transfers_.allocate();
  const Seconds now = engine_.now();
  const Seconds duration = network_.route_cost(src, dst).transfer_time_s(bytes);
  links_.record(src, dst, bytes, duration);
  if (receiver_copies_ && !devices_[at(dst)].has_copy_engine()) {
    // Queued for a stream of dst; it holds no link (the receiver copies through memory).
    transfers_[id] = Transfer{producer, src, dst, 0, bytes, duration, 0, -1, 0, 0};
    if constexpr (kObserved) transfers_.record_times(now, now);
    devices_[at(dst)].queue_copy(id);
    mark_changed(dst);
    return id;
  }
  const Links::Hold hold = links_.hold(src, dst, now, duration);
  const std::uint32_t sequence = engine_.next_sequence();
  transfers_[id] = Transfer{producer, src, dst, 0, bytes, hold.end_s, sequence, -1, 0, 0};
  if constexpr (kObserved) transfers_.record_times(now, hold.start_s);
  if (links_.enqueue(src, dst, id, hold.end_s)) {
    engine_.schedule(hold.end_s, sequence, EventKind::kArrival, id);
  }
  if constexpr (kObserved) observer_->on_transfer_start(transfer_event(id));
  return id;
}

template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void StepModel::produce(NodeId op, DeviceId d, std::int32_t task) {
  OpState* ops = ops_.data();
  std::int32_t* slot_transfer = transfers_.slot_transfer();
  NodeId* consumers = transfers_.consumers();
  std::int32_t refs = 0;
  const OutEdge* out_end = graph_.out_end(op);
  if constexpr (!kFused) {
    // One consumer (a third of the ops in large graphs): what the general pass below does
    // for it, without its bookkeeping of remote devices.
    const OutEdge* e = graph_.out_begin(op);
    if (out_end - e == 1) {
      const NodeId c = e->target;
      const DeviceId dc = ops[c].device;
      const Bytes bytes = e->bytes;
      if (dc == d) {
        refs = bytes > 0;
        satisfy<kFused>(c, d);
      } else if (bytes > 0) {
        const std::int32_t t = issue_transfer<kObserved>(op, d, dc, bytes);
        refs = 1;
        Transfer& tr = transfers_[t];
        slot_transfer[at(e->slot)] = t;
        tr.recv_refs = 1;
        const std::int32_t num_consumers = transfers_.num_consumers();
        tr.consumer_begin = num_consumers;
        consumers[at(num_consumers)] = c;
        tr.consumer_end = num_consumers + 1;
        transfers_.set_num_consumers(num_consumers + 1);
      } else {
        satisfy<kFused>(c, dc);  // a control edge: nothing to send
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
  for (const OutEdge* e = graph_.out_begin(op); e < out_end; ++e) {
    const NodeId c = e->target;
    if constexpr (kFused) {
      if (tasks_.groups().group_of[at(c)] == task) continue;
    }
    const DeviceId dc = ops[c].device;
    const Bytes bytes = e->bytes;
    if (dc == d) {
      refs += bytes > 0;
      satisfy<kFused>(c, d);
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
    // One transfer per remote device, issued in the order of the devices' first out-edges,
    // carrying the largest edge's bytes; its consumers are listed contiguously.
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
      Transfer& tr = transfers_[t];
      std::int32_t num_consumers = transfers_.num_consumers();
      tr.consumer_begin = num_consumers;
      if (num_devices == 1) {  // usual: every remote edge goes to dc
        for (std::size_t k = 0; k < num_remote; ++k) {
          slot_transfer[at(remote[k].slot)] = t;
          tr.recv_refs += remote[k].has_bytes;
          consumers[at(num_consumers++)] = remote[k].consumer;
        }
      } else {
        // The edges to dc, without a branch per edge.
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
      transfers_.set_num_consumers(num_consumers);
      remote_transfer_[at(dc)] = t;
    }
    if (control_only) {
      for (std::size_t k = 0; k < num_remote; ++k) {
        if (remote_transfer_[at(remote[k].device)] < 0) {
          satisfy<kFused>(remote[k].consumer, remote[k].device);
        }
      }
    }
  }
  ops_[at(op)].refs = refs;
  if (refs == 0 && needs_buffer<kFused>(op)) release(d, output_bytes_[op]);
}

template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void StepModel::finish(std::int32_t task) {
  const auto& gr = tasks_.groups();
  const NodeId first = kFused ? gr.members[at(gr.member_offset[at(task)])] : task;
  const DeviceId d = ops_[at(first)].device;
  if constexpr (kObserved) observer_->on_kernel_end(kernel_event(task, d));
  devices_[at(d)].release_stream(ops_[at(task)].stream);
  mark_changed(d);
  ++finished_tasks_;
  const auto begin = kFused ? gr.member_offset[at(task)] : 0;
  const auto end = kFused ? gr.member_offset[at(task) + 1] : 1;
  const InEdge* in_edges = graph_.in_edges();
  const std::int32_t* slot_transfer = transfers_.slot_transfer();
  for (auto i = begin; i < end; ++i) {
    const NodeId m = kFused ? gr.members[at(i)] : task;
    // Inputs consumed: release local tensors and received copies. Both live on d, so the
    // input's counter and size are selected without a branch (local or remote is data
    // dependent and unpredictable): a local input's slot_transfer entry is stale but a
    // valid id, read and never used.
    Bytes released = 0;
    for (auto s = graph_.in_begin(m), end_slot = graph_.in_end(m); s < end_slot; ++s) {
      if (!in_edges[s].has_bytes) continue;
      const NodeId u = in_edges[s].source;
      if constexpr (kFused) {
        if (gr.group_of[at(u)] == task) continue;
      }
      OpState& producer = ops_[at(u)];
      const std::int32_t slot = slot_transfer[at(s)];
      Transfer& t = transfers_[slot];
      const bool local = producer.device == d;
      std::int32_t* refs = select(local, &producer.refs, &t.recv_refs);
      const bool last = --*refs == 0;
      const Bytes local_bytes = select<Bytes>(needs_buffer<kFused>(u), output_bytes_[u], 0);
      released += select<Bytes>(last, select(local, local_bytes, t.bytes), 0);
      if constexpr (!kObserved) transfers_.free_if(last & !local, slot);
    }
    release(d, released);
    produce<kFused, kObserved>(m, d, task);
  }
}

template <bool kFused, bool kObserved>
[[gnu::always_inline]] inline void StepModel::arrive(std::int32_t id) {
  Transfer& t = transfers_[id];
  const DeviceId dst = t.dst;
  ComputeDevice& device = devices_[at(dst)];
  if (receiver_copies_ && !device.has_copy_engine()) {
    device.release_stream(t.copy_stream);  // a receiver copy: its stream is free again
    mark_changed(dst);
  } else {
    const std::int32_t next = links_.dequeue(t.src, dst, id);
    if (next >= 0) {
      const Transfer& n = transfers_[next];
      engine_.schedule(n.end_s, n.sequence, EventKind::kArrival, next);
    }
  }
  if constexpr (kObserved) observer_->on_transfer_end(transfer_event(id));
  if (t.recv_refs > 0) allocate(dst, t.bytes);
  {
    // Whether this was the producer's last reference is data dependent: no branch.
    const bool last = --ops_[at(t.producer)].refs == 0;
    const bool held = needs_buffer<kFused>(t.producer);
    release(t.src, select<Bytes>(last & held, output_bytes_[t.producer], 0));
  }
  // Every transfer serves at least one consumer (a data edge).
  const NodeId* consumers = transfers_.consumers();
  const auto last = t.consumer_end - 1;
  for (auto k = t.consumer_begin; k < last; ++k) satisfy<kFused>(consumers[k], dst);
  // Only dst can change in an arrival. If the last consumer becomes ready while dst has an
  // idle stream and nothing else ready, the dispatch pass after this event would start
  // exactly it: start it now, without the ready queue and the pass.
  const NodeId c = consumers[last];
  const std::int32_t task = kFused ? tasks_.groups().group_of[at(c)] : c;
  if (--ops_[at(task)].pending != 0) return;
  if (!is_changed_[at(dst)] && device.has_idle_stream() && device.ready_empty()) {
    start<kFused, kObserved>(task, dst);
  } else {
    make_ready<kFused>(task, dst);
  }
}

template <bool kFused, bool kObserved>
void StepModel::run() {
  const auto& gr = tasks_.groups();
  const std::int32_t num_tasks = kFused ? gr.num_groups() : graph_.num_nodes();
  if constexpr (kFused) {
    const core::CompiledGraph& g = graph_.graph();
    for (std::int32_t task = 0; task < num_tasks; ++task) {
      std::int32_t count = 0;
      for (auto i = gr.member_offset[at(task)]; i < gr.member_offset[at(task) + 1]; ++i) {
        const NodeId m = gr.members[at(i)];
        for (auto s = g.in_begin(m); s < g.in_end(m); ++s) {
          count += gr.group_of[at(g.in_source(s))] != task;
        }
      }
      ops_[at(task)].pending = count;
    }
    // Groups are numbered in topological order of their first member.
    for (std::int32_t task = 0; task < num_tasks; ++task) {
      if (ops_[at(task)].pending == 0) {
        make_ready<true>(task, place_[gr.members[at(gr.member_offset[at(task)])]]);
      }
    }
  } else {
    // pending was set to the in-degree by simulate().
    for (const NodeId v : graph_.sources()) make_ready<false>(v, place_[v]);
  }
  Handlers<kFused, kObserved> handlers{*this};
  engine_.run(handlers);
  GOPT_ASSERT(memory_.stop_requested() || finished_tasks_ == num_tasks,
              "the simulation ended with ops not run");
}

void StepModel::begin_run(const core::Decision& decision, bool stop_on_oom,
                          SimulationObserver* observer) {
  const NodeId n = graph_.num_nodes();
  place_ = decision.placement ? decision.placement->data() : zero_placement_.data();
  priority_ = decision.priority ? decision.priority->data() : nullptr;
  observer_ = observer;
  memory_observed_ = false;
  engine_.reset();
  for (ComputeDevice& device : devices_) device.reset(priority_ != nullptr);
  memory_.reset(stop_on_oom);
  links_.reset();
  transfers_.reset(observer != nullptr);
  finished_tasks_ = 0;
  // Parameters are resident from time 0 (an OOM there is reported at time 0).
  std::vector<Bytes>& params = param_bytes_;  // capacity kept
  params.assign(at(num_devices_), 0);
  const Bytes* param_bytes = graph_.graph().param_bytes().data();
  for (NodeId v = 0; v < n; ++v) {
    params[at(place_[v])] += param_bytes[v];
    ops_[at(v)].device = place_[v];
    ops_[at(v)].pending = graph_.in_end(v) - graph_.in_begin(v);  // fused runs reset it per group
  }
  for (DeviceId d = 0; d < num_devices_; ++d) allocate(d, params[at(d)]);
}

void StepModel::write_result(SimulationResult& result) {
  result.step_time_s = engine_.now();
  result.oom = memory_.oom();
  result.oom_device = memory_.oom_device();
  result.oom_time_s = memory_.oom_time_s();
  result.num_transfers = transfers_.num_issued();
  result.num_kernels = 0;
  for (DeviceId d = 0; d < num_devices_; ++d) {
    DeviceResult& dev = result.devices[at(d)];
    dev.busy_s = devices_[at(d)].busy_s();
    dev.peak_memory_bytes = memory_.peak_bytes(d);
    dev.param_bytes = param_bytes_[at(d)];
    dev.num_kernels = devices_[at(d)].num_kernels();
    result.num_kernels += dev.num_kernels;
  }
  result.bytes_moved = links_.write_link_results(network_, result.links);
}

void StepModel::simulate(const core::Decision& decision, bool stop_on_oom,
                         SimulationObserver* observer, SimulationResult& result) {
  scratch_valid_ = false;  // the live state is no longer the last recorded run's
  bool fused = false;
  if (decision.fusion) {
    fused = std::any_of(decision.fusion->begin(), decision.fusion->end(),
                        [](std::int32_t f) { return f > 0; });
  }
  tasks_.use_ops();
  if (fused) {
    place_ = decision.placement ? decision.placement->data() : zero_placement_.data();
    priority_ = decision.priority ? decision.priority->data() : nullptr;
    tasks_.use_fusion(place_, decision.placement.has_value(), priority_, decision.fusion->data(),
                      cost_model_);
  }
  begin_run(decision, stop_on_oom, observer);
  if (observer_) {
    observer_->on_simulation_begin(SimulationContext{&graph_.graph(), &cluster_, &decision});
    for (DeviceId d = 0; d < num_devices_; ++d) report_memory(d);
    memory_observed_ = true;
  }
  if (fused) {
    observer_ ? run<true, true>() : run<true, false>();
  } else {
    observer_ ? run<false, true>() : run<false, false>();
  }
  write_result(result);
  if (observer_) observer_->on_simulation_end(result);
  observer_ = nullptr;
  memory_observed_ = false;
}

// --- Delta simulation.

// Everything a run changes (OpState's device is the decision's, patched on restore).
struct StepModel::Checkpoint {
  Engine engine;
  std::vector<ComputeDevice> devices;
  MemoryTracker memory;
  Links links;
  TransferTable transfers;
  std::vector<OpState> ops;
  std::int32_t finished_tasks;
  std::uint64_t stamp;
  std::vector<std::uint64_t> remote_mark;
  std::vector<Bytes> param_bytes;  // per device, of the run that saved it (memory holds them)
};

// What the Engine calls in a recorded run (unfused, unobserved): the handlers of
// Handlers<false, false>, counting events, with a checkpoint before every interval_-th.
struct StepModel::RecordingHandlers {
  StepModel& model;
  void dispatch() {
    model.dispatch_changed<false, false>();
    if (model.events_ % model.interval_ == 0) {
      model.save_checkpoint(static_cast<std::size_t>(model.events_ / model.interval_));
    }
  }
  [[nodiscard]] bool stopped() const { return false; }
  void on_kernel_end(std::int32_t task) {
    model.finish_event_[at(task)] = static_cast<std::int32_t>(model.events_++);
    model.finish<false, false>(task);
  }
  void on_arrival(std::int32_t id) {
    ++model.events_;
    model.arrive<false, false>(id);
  }
};

StepModel::~StepModel() = default;

void StepModel::save_checkpoint(std::size_t index) {
  if (scratch_checkpoints_.size() <= index) scratch_checkpoints_.resize(index + 1);
  auto& slot = scratch_checkpoints_[index];
  if (!slot) {
    slot = std::make_unique<Checkpoint>(Checkpoint{engine_, devices_, memory_, links_, transfers_,
                                                   ops_, finished_tasks_, stamp_, remote_mark_,
                                                   param_bytes_});
  } else {
    Checkpoint& c = *slot;
    c.engine = engine_;
    for (std::size_t d = 0; d < devices_.size(); ++d) c.devices[d].copy_run_state(devices_[d]);
    c.memory = memory_;
    c.links.copy_run_state(links_, at(transfers_.num_slots()));
    c.transfers.copy_run_state(transfers_);
    c.ops = ops_;
    c.finished_tasks = finished_tasks_;
    c.stamp = stamp_;
    c.remote_mark = remote_mark_;
    c.param_bytes = param_bytes_;
  }
  scratch_count_ = index + 1;
}

void StepModel::restore_checkpoint(const Checkpoint& c) {
  engine_ = c.engine;
  for (std::size_t d = 0; d < devices_.size(); ++d) devices_[d].copy_run_state(c.devices[d]);
  memory_ = c.memory;
  links_.copy_run_state(c.links, at(c.transfers.num_slots()));
  transfers_.copy_run_state(c.transfers);
  ops_ = c.ops;
  finished_tasks_ = c.finished_tasks;
  stamp_ = c.stamp;
  remote_mark_ = c.remote_mark;
  num_changed_ = 0;
}

void StepModel::remember_scratch_decision(const core::Decision& decision) {
  const auto n = at(graph_.num_nodes());
  if (decision.placement) {
    scratch_place_ = *decision.placement;
  } else {
    scratch_place_.assign(n, 0);
  }
  scratch_has_priority_ = decision.priority.has_value();
  if (scratch_has_priority_) scratch_priority_ = *decision.priority;
}

void StepModel::run_recorded(const core::Decision& decision, SimulationResult& result) {
  tasks_.use_ops();
  begin_run(decision, false, nullptr);
  finish_event_.assign(at(graph_.num_nodes()), 0);
  // About a dozen checkpoints per step (a step has the ops' events and its transfers').
  interval_ = std::max<std::int64_t>(256, graph_.num_nodes() / 12);
  events_ = 0;
  scratch_from_ = 0;
  scratch_count_ = 0;
  for (const NodeId v : graph_.sources()) make_ready<false>(v, place_[v]);
  RecordingHandlers handlers{*this};
  engine_.run(handlers);
  GOPT_ASSERT(finished_tasks_ == graph_.num_nodes(), "the simulation ended with ops not run");
  delta_events_ = events_;
  write_result(result);
  remember_scratch_decision(decision);
  scratch_valid_ = true;
}

void StepModel::simulate_delta(const core::Decision& decision, SimulationResult& result) {
  if (decision.fusion && std::any_of(decision.fusion->begin(), decision.fusion->end(),
                                     [](std::int32_t f) { return f > 0; })) {
    simulate(decision, false, nullptr, result);  // not recorded: fused runs have no checkpoints
    delta_events_ = -1;
    return;
  }
  const NodeId n = graph_.num_nodes();
  if (!base_valid_ || decision.priority.has_value() != base_has_priority_) {
    run_recorded(decision, result);
    return;
  }
  // The first event whose handler can read a changed op's device or priority. Its device
  // is read at the kernel end of each of its producers (which satisfies it there or sends
  // it its input); its priority only when it becomes ready, at or after the kernel end of
  // its last producer. A changed op without producers is read before the first event.
  const DeviceId* place = decision.placement ? decision.placement->data() : zero_placement_.data();
  const std::int32_t* priority = decision.priority ? decision.priority->data() : nullptr;
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  for (NodeId v = 0; v < n; ++v) {
    const bool moved = place[v] != base_place_[at(v)];
    const bool reordered = priority != nullptr && priority[v] != base_priority_[at(v)];
    if (!moved && !reordered) continue;
    if (graph_.in_begin(v) == graph_.in_end(v)) {
      run_recorded(decision, result);
      return;
    }
    std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
    std::int64_t latest = 0;
    for (auto s = graph_.in_begin(v); s < graph_.in_end(v); ++s) {
      const std::int64_t end = base_finish_event_[at(graph_.in_edges()[s].source)];
      earliest = std::min(earliest, end);
      latest = std::max(latest, end);
    }
    first = std::min(first, moved ? earliest : latest);
  }
  const std::size_t index = std::min<std::size_t>(
      base_count_ - 1, static_cast<std::size_t>(
                           std::min(first / interval_, static_cast<std::int64_t>(base_count_))));
  tasks_.use_ops();
  const Checkpoint& checkpoint = *base_checkpoints_[index];
  restore_checkpoint(checkpoint);
  place_ = place;
  priority_ = priority;
  observer_ = nullptr;
  memory_observed_ = false;
  // The new decision's parameters: resident from time 0, so the prefix's memory is the
  // base's shifted by the difference (unless that would have run out of memory in the
  // prefix, whose time is unknown here: then the whole step).
  std::vector<Bytes>& params = param_bytes_;
  params.assign(at(num_devices_), 0);
  const Bytes* param_bytes = graph_.graph().param_bytes().data();
  for (NodeId v = 0; v < n; ++v) {
    params[at(place[v])] += param_bytes[v];
    ops_[at(v)].device = place[v];
  }
  for (DeviceId d = 0; d < num_devices_; ++d) {
    memory_.shift(d, params[at(d)] - checkpoint.param_bytes[at(d)]);
  }
  if (memory_.oom() || memory_.over_capacity()) {
    run_recorded(decision, result);
    return;
  }
  finish_event_ = base_finish_event_;
  events_ = static_cast<std::int64_t>(index) * interval_;
  const std::int64_t start = events_;
  scratch_from_ = index;
  RecordingHandlers handlers{*this};
  engine_.run(handlers);
  GOPT_ASSERT(finished_tasks_ == n, "the simulation ended with ops not run");
  delta_events_ = events_ - start;
  write_result(result);
  remember_scratch_decision(decision);
  scratch_valid_ = true;
}

void StepModel::keep_as_base() {
  if (!scratch_valid_) {  // a fused or plain run last: no checkpoints to keep
    base_valid_ = false;
    return;
  }
  if (base_checkpoints_.size() < scratch_count_) base_checkpoints_.resize(scratch_count_);
  for (std::size_t c = scratch_from_; c < scratch_count_; ++c) {
    std::swap(base_checkpoints_[c], scratch_checkpoints_[c]);
  }
  base_count_ = scratch_count_;
  std::swap(base_finish_event_, finish_event_);
  std::swap(base_place_, scratch_place_);
  std::swap(base_priority_, scratch_priority_);
  base_has_priority_ = scratch_has_priority_;
  base_valid_ = true;
  scratch_valid_ = false;
}

KernelEvent StepModel::kernel_event(std::int32_t task, DeviceId d) const {
  const FusionGroups& groups = tasks_.groups();
  KernelEvent ev;
  ev.task = task;
  ev.members = groups.members.data() + groups.member_offset[at(task)];
  ev.num_members = groups.group_size(task);
  ev.device = d;
  ev.stream = ops_[at(task)].stream;
  ev.start_s = task_start_[at(task)];
  ev.end_s = ev.start_s + (tasks_.fused() ? tasks_.time(task) : graph_.op_time_on(task, d));
  return ev;
}

TransferEvent StepModel::transfer_event(std::int32_t id) const {
  const Transfer& t = transfers_[id];
  TransferEvent ev;
  ev.transfer = id;
  ev.producer = t.producer;
  ev.src = t.src;
  ev.dst = t.dst;
  ev.bytes = t.bytes;
  const hardware::RouteView route = cluster_.route(t.src, t.dst);
  ev.hops = route.begin();
  ev.num_hops = static_cast<std::int32_t>(route.size());
  ev.request_s = transfers_.request_s(id);
  ev.start_s = transfers_.start_s(id);
  ev.end_s = t.end_s;
  return ev;
}

}  // namespace gopt::simulator
