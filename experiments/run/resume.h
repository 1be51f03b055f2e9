// What `gopt run --resume` keeps of a results file and what it runs again: every finished
// result is kept except those `--redo` names (an agent, `AGENT`, or one agent on one
// workload, `WORKLOAD:AGENT`), which run again and replace the file's as each is written.
// A redo that stopped continues with the same command: the results this very build (a clean
// revision) already made under this config are kept. A run that does not resume its file
// starts its jobs over, so the training snapshots beside the file are stale.
//
//   Redo redo{args.redo};
//   redo.check(config, args.config);                      // InputError on a typo
//   auto again = redo.done_already(config, file.results);  // before the sink opens the file
//   RunnerOptions().with_done(redo.kept(sink.existing(), again));
#pragma once

#include <set>
#include <string>
#include <vector>

#include "experiments/config/config.h"
#include "experiments/results/result_sink.h"

namespace gopt::experiments {

/// The `--redo` entries of a run (empty: nothing runs again).
struct Redo {
  std::vector<std::string> entries;

  /// Throws InputError (naming `config_path`, field `agents` or `workloads`) when an entry
  /// names an agent or workload the config lacks: a typo would silently redo nothing.
  void check(const ExperimentConfig& config, const std::string& config_path) const;
  /// Whether an entry names the result: its agent, or its agent on its workload.
  [[nodiscard]] bool names(const ResultKey& key) const;
  /// The results among `results` (a resumed file's) that this build, at a clean revision,
  /// made under `config`: a redo keeps them although it names them. Empty without entries
  /// or at an unknown or dirty revision.
  [[nodiscard]] std::set<ResultKey> done_already(const ExperimentConfig& config,
                                                 const std::vector<RunResult>& results) const;
  /// The results of a resumed file that the run skips: `existing` less those an entry
  /// names, unless `done_already` holds them.
  [[nodiscard]] std::vector<ResultKey> kept(std::vector<ResultKey> existing,
                                            const std::set<ResultKey>& done_already) const;
};

/// Removes the training snapshots in `dir` (RunnerOptions::snapshot_dir), then `dir`: a
/// run that does not resume its file starts its jobs over. Missing files are not an error.
void remove_snapshots(const std::string& dir);

}  // namespace gopt::experiments
