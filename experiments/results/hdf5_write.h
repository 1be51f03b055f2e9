// Writing the results file's groups and attributes (internal to experiments/results/hdf5_sink.cpp;
// the schema: docs/results-format.md): a result's group under /results, a running job's
// under /running, the run's metadata and history on the root. Each group's `complete`
// attribute is written last, so a group a killed run left half-written is not read as one.
// The sink applies these to a copy of the file that it renames into place.
#pragma once

#include <hdf5.h>

#include <string>

#include "experiments/results/result_sink.h"

namespace gopt::experiments::h5 {

/// Writes one result group under `results` (replacing one with the same key).
void write_result_group(const std::string& file, hid_t results, const RunResult& r);

/// Writes a running job's group under /running of `root` (replacing its previous one).
void write_running_group(const std::string& file, hid_t root, const RunningJob& j);

/// Writes a measurement's group under /measured of `root` (replacing one with the same key).
void write_measured_group(const std::string& file, hid_t root, const Measurement& m);

/// Removes the running jobs that will write `key` (their result is in the file now).
void remove_running(const std::string& file, hid_t root, const ResultKey& key);

/// Removes every running job: an earlier run left them (stopped, failed or killed) and they
/// are this run's to do.
void remove_all_running(const std::string& file, hid_t root);

/// Records the run `m` on the root: a file an earlier run began keeps that run's facts (a
/// new one, or one whose first run was killed before writing them, takes this run's), the
/// run joins the file's history (with its config when it differs from the first run's), and
/// the metadata digest is rewritten.
void write_run_metadata(const std::string& file, hid_t root, const RunMetadata& m);

}  // namespace gopt::experiments::h5
