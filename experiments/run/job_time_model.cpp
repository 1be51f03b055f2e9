#include "experiments/run/job_time_model.h"

#include <algorithm>

namespace gopt::experiments {

double JobCost::work() const {
  const double ops = std::max(1.0, nodes);
  return learner ? (ops + JobTimeModel::kLearnerFixedOps) *
                       static_cast<double>(std::max<std::int64_t>(1, steps))
                 : ops;
}

double JobTimeModel::prior_s(const JobCost& job) {
  return job.work() * (job.learner ? kLearnerPriorSecondsPerWork : kBaselinePriorSecondsPerWork);
}

void JobTimeModel::add(const JobCost& job, double seconds) {
  for (Totals* t : {&by_agent_[job.agent], job.learner ? &learners_ : &baselines_, &all_}) {
    t->seconds += seconds;
    t->work += job.work();
    t->prior_s += prior_s(job);
    ++t->count;
  }
}

double JobTimeModel::expected_s(const JobCost& job) const {
  auto it = by_agent_.find(job.agent);
  if (it != by_agent_.end() && it->second.work > 0) {
    return it->second.seconds / it->second.work * job.work();
  }
  const Totals& cls = job.learner ? learners_ : baselines_;
  const double factor = cls.prior_s > 0 ? cls.seconds / cls.prior_s : 1.0;
  return prior_s(job) * factor;
}

}  // namespace gopt::experiments
