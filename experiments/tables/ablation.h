// An ablation page: one agent's results with a change against the same agent's (or
// another's) without it, workload by workload over the seeds both have, from two results
// files (or one). `gopt ablation WITH.h5 WITHOUT.h5 --agent NAME --out PAGE.md` writes it,
// so that docs cite a generated comparison instead of figures copied by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/results/results_file.h"

namespace gopt::agents {
class AgentRegistry;
}

namespace gopt::experiments {

/// What an agent of a results file reads from other agents of the same file (go_finetune
/// reads go_pretrain's policy).
struct Upstream {
  std::vector<std::string> agents;   ///< their labels
  std::vector<std::string> options;  ///< the reader's options that name their files
};

/// One side of an ablation: a results file and the agent label whose rows it compares.
struct AblationSide {
  const ResultsFile* file = nullptr;
  std::string agent;
  /// The agents whose artifacts `agent`'s jobs read: their options are compared too, so
  /// that a page of a change in pretraining says what changed, and the options naming
  /// their files are not (they differ with the files' places). upstream_of() finds them.
  Upstream upstream = {};
};

/// What `agent`'s results in `file` read, as the runner plans it (experiments/run/plan.h): for
/// each artifact kind that `agent`'s type consumes and whose option its config leaves
/// unset, the agent of the file whose type produces that kind and whose job comes first.
/// Empty for an agent that reads nothing, or one the file has no result of.
[[nodiscard]] Upstream upstream_of(const ResultsFile& file, const std::string& agent,
                                   const agents::AgentRegistry& registry);

/// One workload of an ablation, over the seeds both sides have.
struct AblationRow {
  std::string workload;
  std::vector<std::uint64_t> seeds;
  double without_s = 0;  ///< mean step time over `seeds`, seconds
  double with_s = 0;
  /// Each seed's step times, in the order of `seeds` (the spread a mean change sits in).
  std::vector<double> without_by_seed_s;
  std::vector<double> with_by_seed_s;
  std::vector<bool> oom_by_seed;  ///< a result of either side at that seed ran out of memory
  bool oom = false;            ///< a result of either side ran out of memory (no change computed)
  double without_samples = 0;  ///< mean simulations per result
  double with_samples = 0;
};

/// The rows, in the order of the workloads in `with`'s file; workloads without a common
/// seed are left out. Throws InputError naming a file that has no result of its agent.
[[nodiscard]] std::vector<AblationRow> ablation_rows(const AblationSide& with,
                                                     const AblationSide& without);

/// The page: both sides' provenance (file, experiment, revisions, the options that differ
/// between the two agents and between their upstream agents, pair by pair; absolute paths
/// reduced to file names), the rows with each workload's change of the means and its
/// change seed by seed, and a summary line (the geometric mean change and how many
/// workloads are faster, level within 0.5%, slower).
/// `regenerate` is the command that makes the page again. With `registry`, an option that
/// one side's results do not record (it came after their run) and the other's record at
/// its default is listed on a row of its own instead of among the differences: most
/// options keep the behaviour before them as their default, but not every one (zero-shot's
/// `granularity` did not), so the reader sees them either way.
[[nodiscard]] std::string render_ablation(const AblationSide& with, const AblationSide& without,
                                          const std::string& regenerate,
                                          const agents::AgentRegistry* registry = nullptr);

}  // namespace gopt::experiments
