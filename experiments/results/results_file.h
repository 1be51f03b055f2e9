// The HDF5 results file read back (schema: docs/results-format.md): its format name and
// versions, and the reader used by `gopt table`, `--resume`, the tables and the tests. The
// writer is experiments/results/hdf5_sink.h.
//
//   ResultsFile file = read_results_file("results/quickstart.h5");   // InputError if bad
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/results/result_sink.h"

namespace gopt::experiments {

/// The value of the root attribute `format` of every gopt results file.
inline constexpr std::string_view kResultsFormatName = "gopt-results";
/// The schema version this build writes (root attribute `format_version`). Version 2 added
/// provenance (per result and the file's run history); `--resume` continues only files of
/// this version.
inline constexpr std::int64_t kResultsFormatVersion = 2;
/// The minor version this build writes (root attribute `format_minor_version`, the writer
/// that created the file, and the same attribute on each result, the writer of that row).
/// A minor version only adds fields, so every reader of the version reads it; a file or row
/// without the attribute is minor 0. What each one added (docs/results-format.md, "Format
/// versions"):
///
///   2.0  provenance, budgets, the run history
///   2.1  best_improvements: each sample that improved a learner's best
///   2.2  /measured: results' decisions executed on a real backend (`gopt measure`)
///   2.3  /measured/*/step_times_s: every timed step of a measurement
///   2.4  /measured/*: fused_groups, fused_ops, fused_loop_ops (fusion executed)
///   2.5  reward, reward_executions: learners trained on measured rewards
inline constexpr std::int64_t kResultsFormatMinorVersion = 5;
/// The oldest schema version this build reads (`gopt table`, read_results_file).
inline constexpr std::int64_t kOldestReadResultsFormatVersion = 1;

/// A results file read back.
struct ResultsFile {
  std::string path;
  std::int64_t format_version = kResultsFormatVersion;  ///< the schema version it was written in
  std::int64_t format_minor_version = 0;  ///< of the writer that created it (0: not recorded)
  /// The first run's facts, and every run into the file in `history` (empty in version 1).
  RunMetadata metadata;
  std::vector<RunResult> results;  ///< complete results, in config (job) order
  std::int64_t incomplete = 0;     ///< groups a killed run left half-written (ignored)
  /// Jobs that were training when the file was last written (/running): a run in
  /// progress, or one that stopped or was killed before their results.
  std::vector<RunningJob> running;
  /// Results' decisions executed on a real backend (/measured, `gopt measure`), in key
  /// order; at most one per result.
  std::vector<Measurement> measurements;

  /// The measurement of `key`'s decision, or nullptr.
  [[nodiscard]] const Measurement* measurement(const ResultKey& key) const;
};

/// Reads a results file (without taking HDF5's file lock, so a file that a running
/// `gopt run` is writing can be read). Throws InputError naming the file when it does
/// not exist, is not HDF5, is truncated, is not a gopt results file or is of a format
/// version outside kOldestReadResultsFormatVersion..kResultsFormatVersion.
[[nodiscard]] ResultsFile read_results_file(const std::filesystem::path& path);

/// The HDF5 group name of a result under /results ("wavenet_2:hdp:1").
[[nodiscard]] std::string result_group_name(const ResultKey& key);

}  // namespace gopt::experiments
