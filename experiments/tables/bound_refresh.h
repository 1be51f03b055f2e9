// Lower bounds recomputed for a results file: `gopt table|report RESULTS.h5
// --recompute-bounds`. Each result stores the bound of the gopt that ran it
// (simulator/lower_bounds.h); a later gopt may prove a tighter one. Every bound is valid,
// so each result's bound becomes the larger of the stored one and the one this build
// computes from the config the result ran under (its hardware and workloads).
// FileConfigSetup is that rebuild, which reschedule.h's re-simulation shares.
//
//   ResultsFile file = read_results_file("results/table1_placement.h5");
//   const BoundRefresh refreshed = recompute_lower_bounds(file);
//   std::cout << bound_refresh_note(refreshed) << "\n";
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "datasets/workload_registry.h"
#include "experiments/config/config.h"
#include "experiments/results/results_file.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"

namespace gopt::experiments {

/// The config `result` ran under, as `file` records it: the file's first config when the
/// result's config hash is that one's (or the result records none, as older files' do),
/// else that of the run in the file's history with the result's hash (a `--resume` with
/// another config or --set); "" when the file records none that matches.
[[nodiscard]] std::string config_yaml_of(const ResultsFile& file, const RunResult& result);

/// What one of a results file's own configs rebuilds: its hardware with the cost model a
/// run uses (which refers to the cluster, so the setup stays where it was built), and the
/// workload generators (compile_workload builds a workload's graph from them).
struct FileConfigSetup {
  /// `config_yaml`, one of `file`'s configs, parsed (relative paths from where the file's
  /// config was), its hardware loaded. Throws core::InputError naming the file when the
  /// config or its hardware cannot be loaded.
  FileConfigSetup(const ResultsFile& file, const std::string& config_yaml);
  FileConfigSetup(const FileConfigSetup&) = delete;
  FileConfigSetup& operator=(const FileConfigSetup&) = delete;
  FileConfigSetup(FileConfigSetup&&) = delete;
  FileConfigSetup& operator=(FileConfigSetup&&) = delete;
  ~FileConfigSetup() = default;

  ExperimentConfig config;
  hardware::Cluster cluster;
  std::unique_ptr<hardware::CostModel> cost;
  datasets::WorkloadRegistry workloads;
};

/// Visits `file`'s results grouped by the config they ran under (config_yaml_of), each
/// group with that config's setup, the file's first config first. Results of one workload
/// label may sit in several groups (a resume that changed the workload's graph). Throws
/// core::InputError naming the file when it records no config ("...; `consequence`"), or a
/// result whose config it does not record (naming the result), before visiting any.
void for_each_file_config(
    ResultsFile& file, const std::string& consequence,
    const std::function<void(const FileConfigSetup&, const std::vector<RunResult*>&)>& visit);

/// What recompute_lower_bounds did.
struct BoundRefresh {
  std::size_t workloads = 0;  ///< workload labels whose graphs were rebuilt and bounded
  /// Graphs rebuilt: one per workload and config its results ran under (a resumed file may
  /// hold several configs of one label, alike or not).
  std::size_t graphs = 0;
  std::size_t raised = 0;  ///< of those, the ones whose bound rose above the stored one
};

/// Raises each result's lower_bound_s to this build's bound of its workload on its config's
/// hardware (for_each_file_config). Throws core::InputError naming the file when it records
/// no config or not a result's, or when a config, its hardware profile or a workload's
/// graph cannot be loaded.
BoundRefresh recompute_lower_bounds(ResultsFile& file);

/// One sentence for under the tables: which gopt recomputed the bounds, and on how many
/// workloads they rose.
[[nodiscard]] std::string bound_refresh_note(const BoundRefresh& refresh);

}  // namespace gopt::experiments
