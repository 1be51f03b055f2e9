// This process's share of a run's jobs (experiments/run/assignment.h).
#include "experiments/run/assignment.h"

#include <numeric>

#include "core/errors.h"
#include "experiments/run/job_time_model.h"

namespace gopt::experiments::runner {

Assignment assign_jobs(const Plan& plan, const std::vector<Progress::Item>& items, RunTeam* team,
                       std::vector<char> shared) {
  Assignment out;
  std::vector<std::ptrdiff_t> waits_for;
  for (const auto& job : plan.jobs) waits_for.push_back(job.waits_for);
  if (team == nullptr) {
    out.mine.resize(plan.jobs.size());
    std::iota(out.mine.begin(), out.mine.end(), std::size_t{0});
    out.waits = waits_for;
    out.shared.assign(plan.jobs.size(), 0);
    return out;
  }
  shared.resize(plan.jobs.size(), 0);
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) {  // a producer never waits itself
    const auto w = waits_for[i];
    if (w >= 0 && shared[static_cast<std::size_t>(w)] == 0) shared[i] = 0;
  }
  // The jobs not shared are dealt; one that waits for a shared job may run anywhere.
  const JobTimeModel prior;  // nothing finished: the cost model's prior
  std::vector<double> expected;
  std::vector<std::ptrdiff_t> dealt_waits = waits_for;
  for (std::size_t i = 0; i < items.size(); ++i) {
    expected.push_back(shared[i] != 0 ? 0.0 : prior.expected_s(items[i].cost));
    if (dealt_waits[i] >= 0 && shared[static_cast<std::size_t>(dealt_waits[i])] != 0) {
      dealt_waits[i] = -1;
    }
  }
  const RankPlan ranks = plan_ranks(expected, dealt_waits, team->size());
  std::vector<int> rank_of = ranks.rank_of;
  team->share_plan(rank_of);  // rank 0's deal is everyone's
  std::vector<std::ptrdiff_t> local_of(plan.jobs.size(), -1);
  auto take = [&](std::size_t i) {
    local_of[i] = static_cast<std::ptrdiff_t>(out.mine.size());
    out.mine.push_back(i);
    out.shared.push_back(shared[i]);
  };
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) {
    if (shared[i] != 0) take(i);
  }
  for (const auto& dealt : ranks.order) {
    for (const auto i : dealt) {
      if (shared[i] == 0 && rank_of[i] == team->rank()) take(i);
    }
  }
  for (const auto i : out.mine) {
    const auto w = waits_for[i];
    GOPT_ASSERT(w < 0 || local_of[static_cast<std::size_t>(w)] >= 0,
                "a job runs on the rank of the job whose artifact it reads");
    out.waits.push_back(w < 0 ? -1 : local_of[static_cast<std::size_t>(w)]);
  }
  return out;
}

}  // namespace gopt::experiments::runner
