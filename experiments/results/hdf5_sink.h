// The writer of the HDF5 results file (schema: docs/results-format.md; its reader is
// experiments/results/results_file.h): a ResultSink that writes each finished result as its
// own group and flushes the file, so a run killed at any moment leaves a readable file
// holding everything finished so far.
//
//   Hdf5Sink sink("results/quickstart.h5", Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
//   for (const auto& key : sink.existing()) skip(key);
//   sink.begin(metadata);
//   sink.write(result);                       // durable when this returns
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"
#include "experiments/results/result_sink.h"
#include "experiments/results/results_file.h"

namespace gopt::experiments {

/// What to do with an existing file.
enum class OpenMode {
  kCreate,     ///< a new file; an existing one is an InputError (nothing is overwritten)
  kOverwrite,  ///< replace an existing file
  kResume,     ///< keep the complete results of an existing gopt file (or create one)
};

struct Hdf5SinkOptions {
  GOPT_OPTION(OpenMode, open_mode, OpenMode::kCreate)
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
  /// Writes one result's measurement under /measured (replacing one with the same key),
  /// flushes. Needs no begin(): measuring adds to a file without starting a run in it.
  void write_measurement(const Measurement& measurement);
  /// Closes the file; later writes are errors. Called by the destructor too.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gopt::experiments
