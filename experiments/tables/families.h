// The table families of `gopt table` (internal to experiments/tables/tables.cpp, which picks the
// ones a results file has data for), each built from the file's Grid
// (experiments/tables/grid.h) and implemented in a file of its own: placement and bounds
// (placement.cpp), multi-task (multitask.cpp), convergence
// (convergence.cpp), simulator validation (validation.cpp) and running jobs
// (running.cpp).
#pragma once

#include <string>
#include <vector>

#include "experiments/tables/grid.h"
#include "experiments/tables/tables.h"

namespace gopt::experiments::tables {

/// Table 1 (and Table 2 on held-out graphs): step times of `workloads`, and the best learned
/// agent's improvement over each non-learning baseline, with an average row.
[[nodiscard]] Table placement_table(const Grid& g, const std::vector<std::string>& workloads,
                                    std::string id, std::string title);

/// Lower bounds and optimality gaps of `workloads`: the bound recorded with the results
/// (simulator/lower_bounds.h), the basic one, each agent's step time over the bound and the
/// best step time any agent found over it. `fused`: the decisions may fuse, and beat the
/// bound.
[[nodiscard]] Table bounds_table(const Grid& g, const std::vector<std::string>& workloads,
                                 std::string id, std::string title, bool fused);

/// Table 3: step times of the two references, every other agent's step-time reduction
/// relative to each (TensorFlow's default: an agent of type tf_default, or one labelled
/// tf_default in older files; the unoptimised single GPU: the first single_device agent),
/// and multi-task GO against the best single-task and the best two-task GO variant on the
/// same workload. An average row follows when there is more than one workload.
[[nodiscard]] Table multitask_table(const Grid& g);

/// Convergence: for every agent with a learning curve, the simulations it took to reach
/// three targets, per seed, averaged over the seeds that reached them: HDP's final best of
/// the same seed (the paper's measure), the human expert's step time, and 5% above the best
/// baseline of that seed (the fastest non-GO agent).
[[nodiscard]] Table convergence_table(const Grid& g);

/// Measured against simulated step time per case (results written by `gopt validate`),
/// with the summary statistics of hardware/validation.h in the notes.
[[nodiscard]] Table validation_table(const ResultsFile& file);

/// Results' decisions executed on a real backend (`gopt measure`): `measured`, per workload
/// and agent the simulated and measured step time (means over the measured seeds) and the
/// simulator's error, with the statistics of hardware/validation.h in the notes; and
/// `measured_winners`, per workload whether the simulated winner is the measured one,
/// Kendall's tau between the two orders of agents and, with GO agents, the best GO agent
/// against the best baseline in each world. Only the first, with a pointer to `gopt
/// measure`, when nothing was measured.
[[nodiscard]] std::vector<Table> measured_tables(const ResultsFile& file, const Grid& g);

/// Jobs that were training when the file was last written, with their curves so far.
[[nodiscard]] Table running_table(const ResultsFile& file);

}  // namespace gopt::experiments::tables
