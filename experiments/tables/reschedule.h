// Every result's placement re-simulated in critical-path order: `gopt table RESULTS.h5
// --schedule critical_path`. A placement-only agent's step time includes the order in
// which the executor runs ready ops (topological rank, TensorFlow's), which no placement
// chooses; replacing every decision's priorities by critical-path list scheduling on its
// own placement (agents::critical_path_priorities) shows what each placement is worth when
// the order is good, and so how much of a gap between two agents is the order's.
//
//   ResultsFile file = read_results_file("results/table1_placement.h5");
//   const Reschedule done = reschedule_critical_path(file);
//   std::cout << reschedule_note(done) << "\n";
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "experiments/results/results_file.h"

namespace gopt::experiments {

/// Tables that read the recorded learning curves, which a re-simulation does not change:
/// left out of re-simulated tables and pages.
inline const std::vector<std::string> kRecordedOnlyTables = {"convergence"};

/// What reschedule_critical_path did.
struct Reschedule {
  std::size_t workloads = 0;  ///< workload labels whose graphs were rebuilt (each once)
  std::size_t results = 0;    ///< results re-simulated
};

/// Replaces each result's step time, OOM, traffic and per-device figures by a simulation of
/// its decision (placement and fusion as recorded) with critical-path priorities, on the
/// file's hardware and workloads. Learning curves and improvements keep the recorded times.
/// Throws core::InputError naming the file when it records no config, when the config,
/// its hardware or a workload cannot be loaded, or when it holds measured results
/// (`gopt validate`: those measure the decision's own order).
Reschedule reschedule_critical_path(ResultsFile& file);

/// One sentence for under the tables: which gopt re-simulated how many results, and what
/// the tables still show as recorded.
[[nodiscard]] std::string reschedule_note(const Reschedule& done);

/// What resimulate_measurements did.
struct Resimulation {
  std::string hardware;          ///< the profile simulated on: its name
  std::size_t workloads = 0;     ///< workload labels whose graphs were rebuilt
  std::size_t measurements = 0;  ///< measurements whose simulated time was replaced
};

/// `gopt table RESULTS.h5 --resimulate [--hardware PROFILE]`: replaces the simulated time
/// beside every measurement (`gopt measure`) by a simulation of the same decision, as
/// recorded, with this gopt on `hardware` (a profile name or file; "" : the file's hardware),
/// so that the measured tables show a cost model's or a profile's error on the decisions
/// measured, without measuring again. Results and their other tables keep the recorded
/// times. Throws core::InputError naming the file when it records no config, a config or
/// workload cannot be loaded, a rebuilt workload has another op count than its results, or
/// `hardware` cannot be loaded or has another device count than the file's.
Resimulation resimulate_measurements(ResultsFile& file, const std::string& hardware);

/// One sentence for under the tables: which gopt re-simulated how many measurements on
/// which hardware.
[[nodiscard]] std::string resimulation_note(const Resimulation& done);

}  // namespace gopt::experiments
