#include "simulator/simulator_pool.h"

#include <utility>

namespace gopt::simulator {

SimulatorPool::SimulatorPool(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                             const hardware::CostModel& cost_model, SimulatorOptions options)
    : graph_(graph), cluster_(cluster), cost_model_(cost_model), options_(std::move(options)) {
  simulators_.push_back(std::make_unique<Simulator>(graph_, cluster_, cost_model_, options_));
}

SimulatorPool::~SimulatorPool() = default;

void SimulatorPool::simulate_each(
    const std::vector<core::Decision>& decisions,
    const std::function<void(std::size_t, const SimulationResult&)>& take) {
  if (threads_ < 2 || decisions.size() < 2) {
    for (std::size_t i = 0; i < decisions.size(); ++i) take(i, primary().simulate(decisions[i]));
    return;
  }
  // Simulators are kept once built (a later batch on more threads reuses them); the team
  // of threads is rebuilt when its size changes.
  while (simulators_.size() < static_cast<std::size_t>(threads_)) {
    simulators_.push_back(std::make_unique<Simulator>(graph_, cluster_, cost_model_, options_));
  }
  if (!workers_ || workers_->size() != threads_) {
    workers_ = std::make_unique<core::WorkerPool>(threads_);
  }
  workers_->run(decisions.size(), [&](int worker, std::size_t i) {
    take(i, simulators_[static_cast<std::size_t>(worker)]->simulate(decisions[i]));
  });
}

}  // namespace gopt::simulator
