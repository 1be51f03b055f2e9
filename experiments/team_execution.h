// How this process takes part in a run (internal to the runner, experiments/runner.cpp):
// which of the plan's jobs it runs and what each waits for among them (`assign_jobs`), and,
// in a run shared by ranks (experiments/run_team.h), the loop that runs them on worker
// threads while watching the other ranks (`run_shared`).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <vector>

#include "experiments/plan.h"
#include "experiments/run_progress.h"
#include "experiments/run_team.h"
#include "experiments/runner.h"

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

/// Runs this rank's share of a run shared by ranks: `workers` threads run `work(worker)`
/// while this thread watches. On rank 0 it hands each event of the other ranks to
/// `handle(event, slot)` with the progress slot of the worker that sent it, until every rank
/// is done. It sets `halt` when the caller's `stop` flag is set, when `failed()` (a sink or
/// a send failed), when `handle` returns false, or when another rank fails
/// (summary.team_failure then says which and why). A rank other than 0 ends by telling rank
/// 0 that it is done.
void run_shared(RunTeam& team, int workers, const std::function<void(int)>& work,
                std::atomic<bool>& halt, const std::atomic<bool>* stop,
                const std::function<bool(const TeamEvent&, int)>& handle,
                const std::function<bool()>& failed, Progress& progress, RunSummary& summary);

}  // namespace gopt::experiments::runner
