// StepModel: what happens in one training step, event by event. It connects the graph to
// the resources: a kernel that ends frees its stream and its inputs, satisfies its local
// consumers and sends its output once to each remote device that consumes it; a transfer
// that arrives allocates its copy on the destination and satisfies the consumers there;
// whenever a device changed, its ready kernels (and incoming copies) start on its idle
// streams. Time and the event queue belong to the Engine, state to the resources
// (ComputeDevice, Links, MemoryTracker, TransferTable); durations to the CostModel and the
// NetworkModel. docs/simulator.md describes the semantics.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/decision.h"
#include "hardware/cluster.h"
#include "hardware/cost_model.h"
#include "hardware/network_model.h"
#include "simulator/compute_device.h"
#include "simulator/engine.h"
#include "simulator/links.h"
#include "simulator/memory_tracker.h"
#include "simulator/observer.h"
#include "simulator/packed_graph.h"
#include "simulator/task_table.h"
#include "simulator/transfer_table.h"

namespace gopt::simulator {

struct SimulationResult;

class StepModel {
 public:
  /// Sizes every buffer for the graph and the cluster; the references must outlive it.
  StepModel(const PackedGraph& graph, const hardware::Cluster& cluster,
            const hardware::CostModel& cost_model, const hardware::NetworkModel& network);
  ~StepModel();
  StepModel(const StepModel&) = delete;
  StepModel& operator=(const StepModel&) = delete;

  /// Runs one step of `decision` (already validated) and writes every field of `result`
  /// but the lower bounds. `observer` may be null.
  void simulate(const core::Decision& decision, bool stop_on_oom, SimulationObserver* observer,
                SimulationResult& result);

  /// The tasks of the last run (fused groups, or each op alone).
  [[nodiscard]] const TaskTable& tasks() const { return tasks_; }

  /// Delta simulation (docs/simulator.md): the same run and result as simulate() without
  /// an observer or a stop at OOM, but started from the base run's last checkpoint before
  /// the first event that a change of placement or priority can affect. The run records
  /// its own checkpoints, so keep_as_base() can make it the next base. A fused decision, a
  /// change at time 0 or none base yet: the whole step, recorded.
  void simulate_delta(const core::Decision& decision, SimulationResult& result);
  /// The last simulate_delta() run becomes the base of the next ones. After a simulate()
  /// in between, or a fused run, there is no base (the next run is whole).
  void keep_as_base();
  /// Events the last simulate_delta() run simulated, and its step's events in all.
  [[nodiscard]] std::int64_t delta_events() const { return delta_events_; }
  [[nodiscard]] std::int64_t step_events() const { return events_; }

 private:
  template <bool kFused, bool kObserved>
  struct Handlers;
  struct RecordingHandlers;
  struct Checkpoint;

  // Per-op state of a run. Fused, the task fields (pending, stream) are indexed by group
  // and the op fields by op.
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

  template <bool kFused, bool kObserved>
  void run();
  // Resets every resource and places the parameters: the state before the first event.
  void begin_run(const core::Decision& decision, bool stop_on_oom, SimulationObserver* observer);
  // The fields of `result` from the resources after a run.
  void write_result(SimulationResult& result);
  // A whole recorded run (simulate_delta without a usable base).
  void run_recorded(const core::Decision& decision, SimulationResult& result);
  void save_checkpoint(std::size_t index);
  void restore_checkpoint(const Checkpoint& c);
  void remember_scratch_decision(const core::Decision& decision);
  template <bool kFused, bool kObserved>
  void dispatch_changed();
  template <bool kFused, bool kObserved>
  void dispatch(DeviceId d);
  template <bool kObserved>
  void start_copies(DeviceId d);
  template <bool kFused, bool kObserved>
  void start(std::int32_t task, DeviceId d);
  template <bool kFused, bool kObserved>
  void finish(std::int32_t task);
  template <bool kFused, bool kObserved>
  void produce(NodeId op, DeviceId d, std::int32_t task);
  template <bool kObserved>
  std::int32_t issue_transfer(NodeId producer, DeviceId src, DeviceId dst, Bytes bytes);
  template <bool kFused, bool kObserved>
  void arrive(std::int32_t id);
  template <bool kFused>
  void make_ready(std::int32_t task, DeviceId d);
  template <bool kFused>
  void satisfy(NodeId consumer, DeviceId d);
  template <bool kFused>
  [[nodiscard]] bool needs_buffer(NodeId op) const {
    if constexpr (kFused) {
      return tasks_.needs_buffer(op);
    } else {
      return output_bytes_[op] > 0;
    }
  }

  void mark_changed(DeviceId d) {
    if (!is_changed_[at(d)]) {
      is_changed_[at(d)] = 1;
      changed_[at(num_changed_++)] = d;
    }
  }
  void allocate(DeviceId d, Bytes bytes) {
    memory_.allocate(d, bytes, engine_.now());
    if (memory_observed_) report_memory(d);
  }
  void release(DeviceId d, Bytes bytes) {
    memory_.release(d, bytes);
    if (memory_observed_) report_memory(d);
  }
  void report_memory(DeviceId d) const {
    observer_->on_memory(MemoryEvent{d, engine_.now(), memory_.used_bytes(d)});
  }
  [[nodiscard]] KernelEvent kernel_event(std::int32_t task, DeviceId d) const;
  [[nodiscard]] TransferEvent transfer_event(std::int32_t id) const;

  // --- Fixed.
  const PackedGraph& graph_;
  const hardware::Cluster& cluster_;
  const hardware::CostModel& cost_model_;
  const hardware::NetworkModel& network_;
  const Bytes* output_bytes_;
  DeviceId num_devices_;
  bool receiver_copies_ = false;  // some device has no copy engine
  std::vector<DeviceId> zero_placement_;

  // --- The engine and the resources.
  Engine engine_;
  std::vector<ComputeDevice> devices_;
  MemoryTracker memory_;
  Links links_;
  TransferTable transfers_;
  TaskTable tasks_;

  // --- Per run.
  const DeviceId* place_ = nullptr;
  const std::int32_t* priority_ = nullptr;
  SimulationObserver* observer_ = nullptr;
  bool memory_observed_ = false;  // observer_ set and on_simulation_begin called
  std::vector<OpState> ops_;
  std::vector<Seconds> task_start_;  // observed runs only
  std::vector<Bytes> param_bytes_;   // per device
  std::int32_t finished_tasks_ = 0;
  // Devices changed by the current event, in the order they changed, served before the
  // next event.
  std::vector<DeviceId> changed_;
  std::vector<std::uint8_t> is_changed_;
  std::int32_t num_changed_ = 0;
  // Scratch of produce(): remote out-edges and their devices in order of first out-edge.
  std::vector<RemoteEdge> remote_edges_;
  std::vector<DeviceId> remote_devices_;
  std::vector<std::uint64_t> remote_mark_;
  std::vector<Bytes> remote_bytes_;
  std::vector<std::int32_t> remote_transfer_;
  std::uint64_t stamp_ = 0;

  // --- Delta simulation. A recorded run keeps a checkpoint before every interval_-th
  // event and the index of the event at which each op's kernel ended; the base run's are
  // kept (base_*), the last recorded run's are scratch until keep_as_base() takes them.
  std::int64_t interval_ = 1;
  std::int64_t events_ = 0;        // events handled by the current (or last) recorded run
  std::int64_t delta_events_ = 0;  // of those, the ones the last simulate_delta() simulated
  std::vector<std::int32_t> finish_event_;
  std::vector<std::unique_ptr<Checkpoint>> scratch_checkpoints_;
  std::size_t scratch_from_ = 0;   // scratch checkpoints before it are the base's
  std::size_t scratch_count_ = 0;  // checkpoints of the last recorded run
  bool scratch_valid_ = false;
  std::vector<DeviceId> scratch_place_;
  std::vector<std::int32_t> scratch_priority_;
  bool scratch_has_priority_ = false;
  std::vector<std::unique_ptr<Checkpoint>> base_checkpoints_;
  std::size_t base_count_ = 0;
  bool base_valid_ = false;
  std::vector<std::int32_t> base_finish_event_;
  std::vector<DeviceId> base_place_;
  std::vector<std::int32_t> base_priority_;
  bool base_has_priority_ = false;
};

}  // namespace gopt::simulator
