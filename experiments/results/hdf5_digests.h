// Content digests of what the results file holds (internal to the HDF5 reader and writer,
// experiments/results/hdf5_read.cpp and hdf5_write.cpp): FNV-1a (64-bit) over a result's, a running
// job's and the run metadata's values as written. HDF5 checksums its metadata (with the
// libver bounds the sink writes with) but not raw data or the global heap of
// variable-length strings; the digests catch damage there, which would otherwise read
// back as wrong numbers or names. Changing what enters a digest makes existing files read
// as damaged: fields added later enter only when present.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/results/result_sink.h"

namespace gopt::experiments::h5 {

/// The digest of a result (its attribute `digest`).
[[nodiscard]] std::uint64_t result_digest(const RunResult& r);
/// The digest of a running job (its attribute `digest`).
[[nodiscard]] std::uint64_t running_digest(const RunningJob& j);
/// The digest of a measurement (its attribute `digest`).
[[nodiscard]] std::uint64_t measurement_digest(const Measurement& m);
/// The digest of the file's run metadata (the root attribute `metadata_digest`).
[[nodiscard]] std::uint64_t metadata_digest(const RunMetadata& m);

/// The file's run history as its root attribute `history` holds it: a JSON list of runs.
[[nodiscard]] std::string history_json(const std::vector<RunRecord>& history);

}  // namespace gopt::experiments::h5
