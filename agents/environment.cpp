#include "agents/environment.h"

#include <utility>

namespace gopt::agents {

Environment::Environment(const Problem& problem)
    : problem_(problem), pool_(problem.graph, problem.cluster, problem.cost_model) {}

Evaluation Environment::evaluate(const core::Decision& decision) {
  const Evaluation e = simulate(decision);
  record(e, decision);
  return e;
}

Evaluation Environment::evaluation_of(const simulator::SimulationResult& r,
                                      const core::Decision& decision) {
  Evaluation e{r.step_time_s, r.oom, r.oom_device};
  if (timer_ != nullptr && !e.oom) e.step_time_s = timer_->step_time_s(decision);
  return e;
}

Evaluation Environment::simulate(const core::Decision& decision) {
  last_ = &pool_.primary().simulate(decision);
  return evaluation_of(*last_, decision);
}

Evaluation Environment::evaluate_delta(const core::Decision& decision) {
  last_ = &pool_.primary().simulate_delta(decision);
  const Evaluation e = evaluation_of(*last_, decision);
  record(e, decision);
  return e;
}

std::vector<Evaluation> Environment::simulate_many(const std::vector<core::Decision>& decisions) {
  std::vector<Evaluation> out(decisions.size());
  last_ = nullptr;
  pool_.simulate_each(decisions, [&](std::size_t i, const simulator::SimulationResult& r) {
    out[i] = {r.step_time_s, r.oom, r.oom_device};
  });
  if (timer_ != nullptr) {  // one execution at a time, after the parallel simulations
    for (std::size_t i = 0; i < decisions.size(); ++i) {
      if (!out[i].oom) out[i].step_time_s = timer_->step_time_s(decisions[i]);
    }
  }
  return out;
}

std::vector<Evaluation> Environment::evaluate_many(const std::vector<core::Decision>& decisions) {
  std::vector<Evaluation> out = simulate_many(decisions);
  for (std::size_t i = 0; i < decisions.size(); ++i) record(out[i], decisions[i]);
  return out;
}

void Environment::record(const Evaluation& evaluation, const core::Decision& decision) {
  ++samples_;
  if (improves(evaluation)) {
    best_step_time_s_ = evaluation.step_time_s;
    best_decision_ = decision;
    improvements_.push_back({samples_, best_step_time_s_});
  }
}

void Environment::restore(std::int64_t samples, Seconds best_step_time_s,
                          core::Decision best_decision, std::vector<BestImprovement> improvements) {
  samples_ = samples;
  best_step_time_s_ = best_step_time_s;
  best_decision_ = std::move(best_decision);
  improvements_ = std::move(improvements);
}

}  // namespace gopt::agents
