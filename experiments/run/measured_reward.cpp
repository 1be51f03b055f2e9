// Training on measured rewards (experiments/run/measured_reward.h).
#include "experiments/run/measured_reward.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "hardware/validation.h"

namespace gopt::experiments {

MeasuredReward::MeasuredReward(hardware::backend::Backend& backend, const core::Graph& graph,
                               const MeasuredRewardOptions& options)
    : backend_(backend),
      graph_(graph),
      options_(options),
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

Selection MeasuredReward::select(const core::Decision& proposed) {
  // The candidates: `proposed`, then the fastest others by their sample times.
  std::vector<std::pair<core::Seconds, const core::Decision*>> by_time;
  by_time.reserve(times_.size());
  for (const auto& [decision, t] : times_) by_time.emplace_back(t, &decision);
  std::stable_sort(by_time.begin(), by_time.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<core::Decision> candidates{proposed};
  const DecisionLess less;
  for (const auto& entry : by_time) {
    if (static_cast<int>(candidates.size()) >= std::max(1, options_.final_candidates)) break;
    const core::Decision& d = *entry.second;
    if (!less(d, proposed) && !less(proposed, d)) continue;
    candidates.push_back(d);
  }
  const auto remeasure = hardware::backend::ExecutionOptions()
                             .with_warmup_steps(options_.final_warmup_steps)
                             .with_timed_steps(options_.final_timed_steps)
                             .with_reuse_kernels(true);
  std::vector<std::vector<core::Seconds>> steps(candidates.size());
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < std::max(1, options_.final_rounds); ++round) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const auto r = backend_.execute(graph_, candidates[i], remeasure);
      steps[i].insert(steps[i].end(), r.step_times_s.begin(), r.step_times_s.end());
    }
  }
  execution_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Selection best;
  best.candidates = candidates.size();
  std::size_t chosen = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (steps[i].empty()) continue;
    const core::Seconds median = hardware::median(std::move(steps[i]));
    if (best.step_time_s == 0 || median < best.step_time_s) {
      best.step_time_s = median;
      chosen = i;
    }
  }
  best.decision = std::move(candidates[chosen]);
  best.changed = chosen != 0;
  return best;
}

}  // namespace gopt::experiments
