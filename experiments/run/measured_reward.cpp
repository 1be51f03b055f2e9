// Training on measured rewards (experiments/run/measured_reward.h).
#include "experiments/run/measured_reward.h"

#include <chrono>

namespace gopt::experiments {

MeasuredReward::MeasuredReward(hardware::backend::Backend& backend, const core::Graph& graph,
                               const MeasuredRewardOptions& options)
    : backend_(backend),
      graph_(graph),
      execution_(hardware::backend::ExecutionOptions()
                     .with_warmup_steps(options.warmup_steps)
                     .with_timed_steps(options.timed_steps)
                     .with_reuse_kernels(true)) {}

core::Seconds MeasuredReward::step_time_s(const core::Decision& decision) {
  ++requests_;
  const auto cached = times_.find(decision);
  if (cached != times_.end()) return cached->second;
  const auto start = std::chrono::steady_clock::now();
  const core::Seconds t = backend_.execute(graph_, decision, execution_).step_time_s;
  execution_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  times_.emplace(decision, t);
  return t;
}

}  // namespace gopt::experiments
