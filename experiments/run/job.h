// Running one planned job (internal to the runner, experiments/run/runner.cpp): building its
// agent, training it on its graph or on the training set, and turning the decision it
// proposes into result rows; and the training snapshots that let a stopped job continue.
// Thread-safe: jobs share only the read-only JobContext.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "experiments/results/provenance.h"
#include "experiments/run/plan.h"
#include "experiments/run/runner.h"
#include "hardware/backend/backend.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"

namespace gopt::experiments::runner {

/// Read-only data every job of a run shares.
struct JobContext {
  const ExperimentConfig& config;
  const Plan& plan;
  const agents::AgentRegistry& registry;
  hardware::Cluster cluster;
  std::unique_ptr<hardware::CostModel> cost;
  std::map<std::string, core::CompiledGraph> graphs;  ///< by workload label
  Provenance provenance;     ///< this process's, stamped on every result it produces
  int simulate_threads = 1;  ///< RunnerOptions::simulate_threads
  /// Under `reward: measured` (experiments/run/measured_reward.h): the backend that times the
  /// learners' samples, and the graphs it executes, by workload label. Null and empty when
  /// no job of the plan has measured rewards.
  std::unique_ptr<hardware::backend::Backend> backend;
  std::map<std::string, core::Graph> measured_graphs;
};

/// A job's training snapshots (RunnerOptions::snapshot_dir): the file, and the identity that
/// ties it to this job as configured (a changed option or budget starts the job over).
/// Empty when the run keeps no snapshots.
[[nodiscard]] agents::TrainSnapshots job_snapshots(const RunnerOptions& options, const Plan& plan,
                                                   const PlannedJob& job);

/// Removes the job's snapshot, and the temporary file of a write that a kill interrupted.
void remove_snapshot(const agents::TrainSnapshots& snapshots);

/// Runs a job on one workload (training it first if its agent learns, reporting each update
/// to `observer`); its one row, without its learning curve.
/// `learners`: the group a data-parallel job shares its training with (null: alone).
[[nodiscard]] RunResult run_single(const JobContext& context, const PlannedJob& job,
                                   agents::TrainingObserver& observer,
                                   const agents::TrainSnapshots& snapshots,
                                   agents::LearnerGroup* learners = nullptr);

/// Trains a training-set job (continuing from its snapshot if there is one), which writes
/// its artifacts, and returns its rows, each with `curve` (what `observer` recorded).
/// `checkpoint_steps`: set to the updates behind the policy it wrote.
[[nodiscard]] std::vector<RunResult> run_training_set(
    const JobContext& context, const PlannedJob& job, const agents::TrainSnapshots& snapshots,
    agents::TrainingObserver& observer, const std::vector<agents::LearningCurvePoint>& curve,
    std::int64_t& checkpoint_steps, agents::LearnerGroup* learners = nullptr);

/// A finished row's progress line: "wavenet_2 / hdp / seed 1: step time 12.3 ms (simulated),
/// 4.5 s wall".
[[nodiscard]] std::string result_line(const RunResult& r);

}  // namespace gopt::experiments::runner
