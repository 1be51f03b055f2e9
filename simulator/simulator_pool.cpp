#include "simulator/simulator_pool.h"

#include <algorithm>
#include <utility>

namespace gopt::simulator {

SimulatorPool::SimulatorPool(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                             const hardware::CostModel& cost_model, SimulatorOptions options)
    : graph_(graph), cluster_(cluster), cost_model_(cost_model), options_(std::move(options)) {
  simulators_.push_back(std::make_unique<Simulator>(graph_, cluster_, cost_model_, options_));
}

SimulatorPool::~SimulatorPool() = default;

void SimulatorPool::set_threads(int threads) {
  threads = std::max(1, threads);
  if (threads == this->threads() && (threads == 1 || workers_)) return;
  while (this->threads() < threads) {
    simulators_.push_back(std::make_unique<Simulator>(graph_, cluster_, cost_model_, options_));
  }
  simulators_.resize(static_cast<std::size_t>(threads));
  workers_ = threads > 1 ? std::make_unique<core::WorkerPool>(threads) : nullptr;
}

void SimulatorPool::simulate_each(
    const std::vector<core::Decision>& decisions,
    const std::function<void(std::size_t, const SimulationResult&)>& take) {
  if (!workers_ || decisions.size() < 2) {
    for (std::size_t i = 0; i < decisions.size(); ++i) take(i, primary().simulate(decisions[i]));
    return;
  }
  workers_->run(decisions.size(), [&](int worker, std::size_t i) {
    take(i, simulators_[static_cast<std::size_t>(worker)]->simulate(decisions[i]));
  });
}

}  // namespace gopt::simulator
