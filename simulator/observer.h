// Observers: read-only views of what the simulator does, for tracing and statistics
// (STYLE.md point 4: never code inside the dispatch loop). Attach one per simulate() call;
// with none attached the engine pays one predictable branch per event.
//
//   ChromeTraceWriter trace;                 // an observer
//   simulator.simulate(decision, &trace);
//   trace.write("step.trace.json");
#pragma once

#include <cstdint>

#include "core/compiled_graph.h"
#include "core/decision.h"
#include "hardware/cluster.h"

namespace gopt::simulator {

using core::Bytes;
using core::DeviceId;
using core::NodeId;
using core::Seconds;

struct SimulationResult;

/// One kernel: a single op or a fused group. Pointers are valid during the callback only.
struct KernelEvent {
  std::int32_t task = 0;            ///< op id, or fused group id when fusion is active
  const NodeId* members = nullptr;  ///< the ops it runs, in topological order
  std::int32_t num_members = 0;
  DeviceId device = 0;
  int stream = 0;  ///< compute stream on the device
  Seconds start_s = 0;
  Seconds end_s = 0;
};

/// One tensor sent from its producer's device to another device over a route. The route's
/// links are all held from start_s to end_s (see docs/simulator.md).
struct TransferEvent {
  std::int32_t transfer = 0;  ///< index in issue order
  NodeId producer = 0;        ///< the op whose output is sent
  DeviceId src = 0;
  DeviceId dst = 0;
  Bytes bytes = 0;
  const hardware::Hop* hops = nullptr;  ///< the route, valid during the callback only
  std::int32_t num_hops = 0;
  Seconds request_s = 0;  ///< when the producer finished (the tensor was ready)
  Seconds start_s = 0;    ///< when every link of the route was free (>= request_s)
  Seconds end_s = 0;      ///< when the tensor is available on dst
};

/// The bytes in use on a device changed: an output allocated when its kernel starts, or
/// tensors released when their last consumer finishes. The first event per device (at
/// time 0) holds its resident parameters.
struct MemoryEvent {
  DeviceId device = 0;
  Seconds time_s = 0;
  Bytes in_use_bytes = 0;  ///< after the change
};

/// What a simulation runs on, handed to observers when it begins.
struct SimulationContext {
  const core::CompiledGraph* graph = nullptr;
  const hardware::Cluster* cluster = nullptr;
  const core::Decision* decision = nullptr;
};

/// Receives every kernel and transfer of one simulation, in simulated-time order of the
/// callback (start callbacks at their start, end callbacks at their end; a transfer's
/// start callback comes when it is issued, carrying its computed start time, except a copy
/// into a device without a copy engine, whose start callback comes when it starts).
class SimulationObserver {
 public:
  virtual ~SimulationObserver() = default;
  virtual void on_simulation_begin(const SimulationContext& /*context*/) {}
  virtual void on_kernel_start(const KernelEvent& /*kernel*/) {}
  virtual void on_kernel_end(const KernelEvent& /*kernel*/) {}
  virtual void on_transfer_start(const TransferEvent& /*transfer*/) {}
  virtual void on_transfer_end(const TransferEvent& /*transfer*/) {}
  /// After on_simulation_begin: once per device with its parameters, then at every change.
  virtual void on_memory(const MemoryEvent& /*memory*/) {}
  virtual void on_simulation_end(const SimulationResult& /*result*/) {}

 protected:
  SimulationObserver() = default;
  SimulationObserver(const SimulationObserver&) = default;
  SimulationObserver& operator=(const SimulationObserver&) = default;
};

}  // namespace gopt::simulator
