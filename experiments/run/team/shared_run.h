// The loop of a run shared by ranks (internal to the runner, experiments/run/job_workers.cpp):
// this rank's worker threads run its jobs (experiments/run/assignment.h) while this thread
// watches the other ranks (experiments/run/team/team.h) and, on rank 0, hands their events on.
#pragma once

#include <atomic>
#include <functional>

#include "experiments/run/progress.h"
#include "experiments/run/runner.h"
#include "experiments/run/team/team.h"

namespace gopt::experiments::runner {

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
