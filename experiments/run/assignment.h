// Which of the plan's jobs this process runs (internal to the runner,
// experiments/run/runner.cpp), and what each waits for among them: every job alone, or this
// rank's deal in a run shared by ranks (experiments/run/team/team.h).
#pragma once

#include <cstddef>
#include <vector>

#include "experiments/run/plan.h"
#include "experiments/run/progress.h"
#include "experiments/run/runner.h"
#include "experiments/run/team/team.h"

namespace gopt::experiments::runner {

/// Which of the plan's jobs this process runs, in the order it takes them (every job, in
/// plan order, when it runs alone), and what each waits for among them (WorkQueue: a
/// position in `mine`, or -1).
struct Assignment {
  std::vector<std::size_t> mine;
  std::vector<std::ptrdiff_t> waits;
  std::vector<char> shared;  ///< per position in `mine`: run by every rank together
};

/// This process's jobs: all of them without a team; with one, those plan_ranks deals this
/// rank (rank 0's deal is shared with every rank), a job on the rank of the job it waits
/// for. `items`: the progress items of the plan's jobs, whose costs the deal balances.
/// `shared`: per plan job, whether every rank runs it together (data parallelism); those
/// come first, in plan order, on every rank, and the rest are dealt. A shared job that
/// waits for a job not shared is not shared.
[[nodiscard]] Assignment assign_jobs(const Plan& plan, const std::vector<Progress::Item>& items,
                                     RunTeam* team, std::vector<char> shared = {});

}  // namespace gopt::experiments::runner
