// SimulatorPool: the batch evaluation of decisions. One Simulator per worker thread of a
// core::WorkerPool, all of one (graph, cluster, cost model); a batch is spread over them
// and each result is handed back with its index, so what a caller computes from a batch
// is the same for every thread count. Agents reach it through agents::Environment
// (evaluate_many), the Python module directly.
//
//   SimulatorPool pool(graph, cluster, cost);
//   pool.set_threads(2);
//   pool.simulate_each(decisions, [&](std::size_t i, const SimulationResult& r) {
//     step_time[i] = r.step_time_s;   // called from the worker that simulated it
//   });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "core/worker_pool.h"
#include "simulator/simulator.h"

namespace gopt::simulator {

class SimulatorPool {
 public:
  /// One Simulator (the primary one) at once, the others built when set_threads() asks for
  /// them. The graph, cluster and cost model must outlive the pool.
  SimulatorPool(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                const hardware::CostModel& cost_model, SimulatorOptions options = {});
  ~SimulatorPool();
  SimulatorPool(const SimulatorPool&) = delete;
  SimulatorPool& operator=(const SimulatorPool&) = delete;

  /// Workers of simulate_each (at least 1). The Simulators and threads it lacks are built
  /// by the first batch that uses them (each Simulator asks the cost model for every op's
  /// time once), so a pool that never simulates a batch costs one Simulator.
  void set_threads(int threads) { threads_ = threads < 1 ? 1 : threads; }
  [[nodiscard]] int threads() const { return threads_; }

  /// The Simulator of worker 0, for one decision at a time.
  [[nodiscard]] Simulator& primary() { return *simulators_.front(); }
  [[nodiscard]] const Simulator& primary() const { return *simulators_.front(); }

  /// Simulates every decision and calls `take(i, result)` for each, from the worker that
  /// simulated it (concurrently for different i; the result is valid during the call).
  /// A decision that fails validation throws InputError: the lowest failing index's, as a
  /// loop over the decisions would.
  void simulate_each(const std::vector<core::Decision>& decisions,
                     const std::function<void(std::size_t, const SimulationResult&)>& take);

 private:
  const core::CompiledGraph& graph_;
  const hardware::Cluster& cluster_;
  const hardware::CostModel& cost_model_;
  SimulatorOptions options_;
  int threads_ = 1;
  std::vector<std::unique_ptr<Simulator>> simulators_;  // the first: primary(); worker w's: [w]
  std::unique_ptr<core::WorkerPool> workers_;           // of threads_ workers, once a batch ran
};

}  // namespace gopt::simulator
