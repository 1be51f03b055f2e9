// The HDF5 results file (schema: docs/results-format.md): a ResultSink that writes each
// finished result as its own group and flushes the file, so a run killed at any moment
// leaves a readable file holding everything finished so far; and the reader used by
// `gopt table`, `--resume` and the tests.
//
//   Hdf5Sink sink("results/quickstart.h5", Hdf5SinkOptions().mode(OpenMode::kResume));
//   for (const auto& key : sink.existing()) skip(key);
//   sink.begin(metadata);
//   sink.write(result);                       // durable when this returns
//   ResultsFile file = read_results_file("results/quickstart.h5");   // InputError if bad
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/result_sink.h"

namespace gopt::experiments {

/// The value of the root attribute `format` of every gopt results file.
inline constexpr std::string_view kResultsFormatName = "gopt-results";
/// The schema version this build writes (root attribute `format_version`). Version 2 added
/// provenance (per result and the file's run history); `--resume` continues only files of
/// this version.
inline constexpr std::int64_t kResultsFormatVersion = 2;
/// The oldest schema version this build reads (`gopt table`, read_results_file).
inline constexpr std::int64_t kOldestReadResultsFormatVersion = 1;

/// What to do with an existing file.
enum class OpenMode {
  kCreate,     ///< a new file; an existing one is an InputError (nothing is overwritten)
  kOverwrite,  ///< replace an existing file
  kResume,     ///< keep the complete results of an existing gopt file (or create one)
};

struct Hdf5SinkOptions {
  OpenMode open_mode = OpenMode::kCreate;

  Hdf5SinkOptions& mode(OpenMode m) {
    open_mode = m;
    return *this;
  }
};

/// Writes results to an HDF5 file. Thread-safe: every HDF5 call holds one mutex (Debian's
/// HDF5 is built without thread safety). HDF5 errors become core::Error/InputError
/// messages naming the file; HDF5's own error printing is turned off.
class Hdf5Sink final : public ResultSink {
 public:
  /// Opens or creates `path` (creating parent directories). Throws InputError when the
  /// file exists in kCreate mode, or in kResume mode is not a gopt results file of
  /// kResultsFormatVersion (the message names the file's version and this one).
  Hdf5Sink(std::filesystem::path path, Hdf5SinkOptions options = {});
  ~Hdf5Sink() override;

  /// Complete results found in the file when it was opened (kResume); incomplete ones
  /// (a run killed while writing) were removed.
  [[nodiscard]] const std::vector<ResultKey>& existing() const;
  /// The resolved config stored in a resumed file ("" for a new file).
  [[nodiscard]] const std::string& existing_config() const;
  [[nodiscard]] const std::filesystem::path& path() const;

  /// Writes the file attributes of its first run (a resumed file keeps its own), appends the
  /// run to the file's history, removes the running jobs an earlier run left (this run
  /// does them), flushes.
  void begin(const RunMetadata& metadata) override;
  /// Writes one result group (replacing one with the same key), marks it complete, removes
  /// the running job that wrote it, flushes.
  void write(const RunResult& result) override;
  /// Writes a job's learning curve so far under /running (replacing its previous one).
  void update_running(const RunningJob& job) override;
  /// Closes the file; later writes are errors. Called by the destructor too.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A results file read back.
struct ResultsFile {
  std::string path;
  std::int64_t format_version = kResultsFormatVersion;  ///< the schema version it was written in
  /// The first run's facts, and every run into the file in `history` (empty in version 1).
  RunMetadata metadata;
  std::vector<RunResult> results;  ///< complete results, in config (job) order
  std::int64_t incomplete = 0;     ///< groups a killed run left half-written (ignored)
  /// Jobs that were training when the file was last written (/running): a run in
  /// progress, or one that stopped or was killed before their results.
  std::vector<RunningJob> running;
};

/// Reads a results file (without taking HDF5's file lock, so a file that a running
/// `gopt run` is writing can be read). Throws InputError naming the file when it does
/// not exist, is not HDF5, is truncated, is not a gopt results file or is of a format
/// version outside kOldestReadResultsFormatVersion..kResultsFormatVersion.
[[nodiscard]] ResultsFile read_results_file(const std::filesystem::path& path);

/// The HDF5 group name of a result under /results ("wavenet_2:hdp:1").
[[nodiscard]] std::string result_group_name(const ResultKey& key);

}  // namespace gopt::experiments
