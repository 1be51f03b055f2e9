#include "agents/environment.h"

#include <utility>

namespace gopt::agents {

Environment::Environment(const Problem& problem)
    : problem_(problem), simulator_(problem.graph, problem.cluster, problem.cost_model) {}

Evaluation Environment::evaluate(const core::Decision& decision) {
  const Evaluation e = simulate(decision);
  record(e, decision);
  return e;
}

Evaluation Environment::simulate(const core::Decision& decision) {
  last_ = &simulator_.simulate(decision);
  return {last_->step_time_s, last_->oom, last_->oom_device};
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
