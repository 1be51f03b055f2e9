// The discrete-event simulator: runs one training step of a CompiledGraph on a Cluster
// under a Decision (placement, priorities, fusion) and reports the step time, per-device
// busy time and peak memory, bytes moved, OOM and two lower bounds. It is the inner loop
// of every agent, so a Simulator is built once per (graph, cluster, cost model) and reused:
// op times are asked from the CostModel once and cached, and simulate() allocates nothing
// in steady state. The model is described in docs/simulator.md.
//
//   Cluster cluster = hardware::load_profile("p100x4_pcie");
//   hardware::RooflineCostModel cost(cluster);
//   Simulator sim(graph, cluster, cost);
//   const SimulationResult& r = sim.simulate(decision);   // valid until the next call
//   if (!r.oom) use(r.step_time_s);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/compiled_graph.h"
#include "core/decision.h"
#include "core/options.h"
#include "hardware/cluster.h"
#include "hardware/cost_model.h"
#include "hardware/network_model.h"
#include "simulator/fusion.h"
#include "simulator/observer.h"

namespace gopt::simulator {

/// Per-device outcome of a simulation.
struct DeviceResult {
  Seconds busy_s = 0;            ///< sum of kernel times on the device (all streams)
  Bytes peak_memory_bytes = 0;   ///< parameters + live activations + received tensors, at peak
  Bytes param_bytes = 0;         ///< resident parameters placed on the device
  std::int32_t num_kernels = 0;  ///< kernels launched (a fused group counts once)
};

/// Per-link outcome (both directions together).
struct LinkResult {
  Bytes bytes_moved = 0;           ///< bytes of every transfer routed over the link
  Seconds busy_s = 0;              ///< time the link was held, summed over directions
  std::int32_t num_transfers = 0;  ///< transfers routed over the link
};

/// The outcome of one simulated step. OOM is an outcome, not an error: the simulation
/// runs to the end (unless SimulatorOptions::stop_on_oom) so step time and peaks are
/// still reported.
struct SimulationResult {
  Seconds step_time_s = 0;   ///< when the last kernel or transfer finished
  bool oom = false;          ///< some device exceeded its memory capacity
  DeviceId oom_device = -1;  ///< the first device to exceed it, -1 when none
  Seconds oom_time_s = 0;    ///< when it did
  Bytes bytes_moved = 0;     ///< total bytes sent between devices (each transfer once)
  std::int32_t num_transfers = 0;
  std::int32_t num_kernels = 0;  ///< kernels launched over all devices
  /// Longest path of the graph with zero communication, each op at its fastest device
  /// time (unfused). No placement or schedule of the unfused graph beats it.
  Seconds lower_bound_critical_path_s = 0;
  /// Total op time (each op at its fastest device time) over the number of compute
  /// streams in the cluster (= devices with one stream each).
  Seconds lower_bound_work_s = 0;
  std::vector<DeviceResult> devices;
  std::vector<LinkResult> links;

  /// max of the two lower bounds.
  [[nodiscard]] Seconds lower_bound_s() const {
    return lower_bound_critical_path_s > lower_bound_work_s ? lower_bound_critical_path_s
                                                            : lower_bound_work_s;
  }
};

/// Options of a Simulator; defaults here and nowhere else.
struct SimulatorOptions {
  /// Check every decision with core::validate_decision (throws InputError). Turn off only
  /// for decisions already validated (an agent's own output).
  GOPT_OPTION(bool, validate_decisions, true)
  /// Stop at the first allocation over capacity. step_time_s is then the time reached.
  GOPT_OPTION(bool, stop_on_oom, false)
  /// Name of the decision's source in error messages (a file name).
  GOPT_OPTION(std::string, decision_source, "decision")
};

/// Simulates decisions for one graph on one cluster with one cost model. The graph, the
/// cluster and the cost model must outlive the Simulator. Not thread-safe: use one
/// Simulator per thread (they are cheap to build relative to the runs they serve).
class Simulator {
 public:
  /// Asks `cost_model` for every op's time on every device type and every link's cost,
  /// computes the lower bounds, and allocates all buffers.
  Simulator(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
            const hardware::CostModel& cost_model, SimulatorOptions options = {});
  /// The same with an injected network model (routes and how transfer times compose;
  /// built from `cluster` and `cost_model` otherwise), which must outlive the Simulator.
  Simulator(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
            const hardware::CostModel& cost_model, const hardware::NetworkModel& network,
            SimulatorOptions options = {});
  ~Simulator();
  Simulator(Simulator&&) noexcept;
  Simulator& operator=(Simulator&&) noexcept;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  /// Simulates one step. The returned reference stays valid (and unchanged) until the
  /// next call. Throws InputError for an invalid decision (wrong length, device out of
  /// range, negative fusion priority) when validation is on.
  const SimulationResult& simulate(const core::Decision& decision,
                                   SimulationObserver* observer = nullptr);

  /// Delta simulation (FlexFlow's idea, exact here): the same result as simulate(decision),
  /// bit for bit, computed by re-simulating only from the base run's last checkpoint before
  /// the first event that the decision's differences from the base (placement, priority)
  /// can affect. The base is the decision of the simulate_delta() call that keep_as_base()
  /// followed; before one, or for a fused decision or a change to an op without inputs,
  /// the whole step is simulated. Each call records checkpoints of what it simulates
  /// (about a dozen per step), so that it can become the base. With
  /// SimulatorOptions::stop_on_oom, a plain simulate(). docs/simulator.md "Delta simulation".
  ///
  ///   sim.simulate_delta(current);  sim.keep_as_base();
  ///   const auto& r = sim.simulate_delta(candidate);   // current with one unit moved
  ///   if (accepted) sim.keep_as_base();
  const SimulationResult& simulate_delta(const core::Decision& decision);
  /// The decision of the last simulate_delta() call becomes the base. After a fused
  /// decision, or a simulate() call in between, there is none (the next call simulates
  /// the whole step).
  void keep_as_base();
  /// The share of its step's events the last simulate_delta() call simulated (1: all).
  [[nodiscard]] double last_delta_share() const;

  /// The cached time of op `op` on device `device` (as the cost model gave it).
  [[nodiscard]] Seconds op_time(NodeId op, DeviceId device) const;
  /// The fused groups of the last simulate() call (each op alone when it had no fusion).
  [[nodiscard]] const FusionGroups& last_groups() const;

  [[nodiscard]] const core::CompiledGraph& graph() const;
  [[nodiscard]] const hardware::Cluster& cluster() const;
  [[nodiscard]] const SimulatorOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// Convenience for one-off runs: builds a Simulator and returns a copy of its result.
[[nodiscard]] SimulationResult simulate_once(const core::CompiledGraph& graph,
                                             const hardware::Cluster& cluster,
                                             const hardware::CostModel& cost_model,
                                             const core::Decision& decision,
                                             SimulationObserver* observer = nullptr);

}  // namespace gopt::simulator
