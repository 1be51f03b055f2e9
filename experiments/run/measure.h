// Executing a results file's decisions on a real backend (`gopt measure`): the decision of
// every (workload, agent, seed) of a file whose hardware is a measured profile of this
// machine runs on the backend, and its measured step time goes into the file beside the
// simulated one (/measured, docs/results-format.md). Decisions of one workload are measured
// in interleaved rounds, so that a drift of the machine's load spreads over all of them;
// identical decisions (deterministic baselines over seeds) run once. Each result's
// measurement is written as soon as its workload's rounds end, so an interrupted or killed
// measure loses at most the workload in progress, and a second call continues.
//
//   MeasureSummary s = measure_results("results/table1_real_cpu.h5",
//                                      MeasureOptions().with_rounds(5).with_progress(&std::cerr));
#pragma once

#include <atomic>
#include <cstddef>
#include <iosfwd>
#include <string>

#include "core/options.h"
#include "hardware/backend/backend.h"
#include "hardware/cluster.h"

namespace gopt::experiments {

/// How `gopt measure` measures; defaults here and nowhere else.
struct MeasureOptions {
  /// The measured profile the file's hardware must be ("" : the file's own hardware, as its
  /// config names it). A different profile is refused: the simulated times are the file's.
  GOPT_OPTION(std::string, profile, "")
  /// "cpu" or "cuda"; "" : cpu for a profile of CPU workers (`gopt calibrate --backend cpu`),
  /// cuda otherwise.
  GOPT_OPTION(std::string, backend, "")
  GOPT_OPTION(int, rounds, 5)        ///< interleaved rounds, every decision once per round
  GOPT_OPTION(int, warmup_steps, 2)  ///< steps run and discarded before each round's timed ones
  GOPT_OPTION(int, timed_steps, 5)   ///< timed steps per decision and round
  /// Pin each device's worker to a CPU of its own (hardware::backend::BackendOptions).
  GOPT_OPTION(bool, pin_workers, hardware::backend::BackendOptions().pin_workers)
  /// Measure results that already have a measurement again (replacing it); otherwise they
  /// are kept and skipped.
  GOPT_OPTION(bool, remeasure, false)
  /// The command line recorded in each measurement's provenance.
  GOPT_OPTION(std::string, command, "")
  GOPT_OPTION(std::ostream*, progress, nullptr)  ///< a line per execution, when set
  /// Checked before every execution: when set, the workload in progress is abandoned
  /// (nothing of it written) and measure_results returns with `interrupted`.
  GOPT_OPTION(const std::atomic<bool>*, stop, nullptr)
};

/// What measure_results did.
struct MeasureSummary {
  std::size_t measured = 0;    ///< results measured and written by this call
  std::size_t kept = 0;        ///< results whose earlier measurement was kept (not remeasured)
  std::size_t executions = 0;  ///< distinct decisions executed (each `rounds` times)
  std::size_t workloads = 0;   ///< workloads with results measured by this call
  bool interrupted = false;    ///< MeasureOptions::stop was set
  double wall_s = 0;
};

struct ExperimentConfig;

/// The machine part of a profile's provenance ("host: CPU model (N logical CPUs)"): what
/// must be the same for a profile to describe this machine. The host name is left out,
/// since containers and rebuilt machines of one kind change it.
[[nodiscard]] std::string machine_kind(const std::string& machine);

/// The backend a profile's devices run on: "cpu" for CPU workers (`gopt calibrate --backend
/// cpu`), "cuda" otherwise.
[[nodiscard]] std::string backend_of(const hardware::Cluster& cluster);

/// Throws core::InputError naming `source` and its `hardware` when the results of `config`
/// could not be measured here (as measure_results refuses them), so that `gopt run
/// --measure` says so before it runs.
void check_measurable(const ExperimentConfig& config, const std::string& source,
                      const MeasureOptions& options = {});

/// Throws core::InputError naming `source` and the first agent with `reward: measured`
/// (field "agents.NAME.reward") when `config` has one and its hardware could not be
/// measured here (check_measurable), so that `gopt run` refuses it before it runs.
void check_measured_rewards(const ExperimentConfig& config, const std::string& source);

/// Measures the results of `path` (see the header comment). Throws core::InputError naming
/// the file, before anything runs, when it is not a results file of the format this gopt
/// writes, holds validation results (`gopt validate` measured them itself), records no
/// config, when its hardware is not a measured profile, was measured on another machine (CPU
/// model and count), or is not `options.profile`; hardware::backend::BackendUnavailable
/// when the backend cannot run here. A rebuilt workload whose graph does not match its
/// results (another op count) throws InputError when it is reached, the workloads measured
/// before it written.
MeasureSummary measure_results(const std::string& path, const MeasureOptions& options = {});

}  // namespace gopt::experiments
