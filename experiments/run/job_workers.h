// The executor of a plan (internal to the runner, experiments/run/runner.cpp): runs the plan's
// jobs on a pool of workers in plan order (a job that reads an artifact waits for the job
// writing it, and fails without running when that job failed), alone or with the other
// ranks of a shared run, and writes each finished job's rows to the sink (rank 0 and a run
// alone) or sends them to rank 0. Knows the plan's jobs and artifacts, never an agent by
// name.
#pragma once

#include <vector>

#include "experiments/results/result_sink.h"
#include "experiments/run/job.h"
#include "experiments/run/progress.h"
#include "experiments/run/runner.h"

namespace gopt::experiments::runner {

/// Runs this process's share of `context.plan`'s jobs (options.team: shared by ranks),
/// recording what happened in `summary`. `items`: the progress item of each of the plan's
/// jobs. Throws core::Error when the sink fails.
void execute_plan(const JobContext& context, ResultSink& sink, const RunnerOptions& options,
                  RunSummary& summary, std::vector<Progress::Item> items);

}  // namespace gopt::experiments::runner
