// Reading the results file back (internal to experiments/results/hdf5_sink.cpp, whose header
// declares the public read_results_file; the schema: docs/results-format.md): the format
// and version check, the run metadata and history, each result and running job, every
// value checked against its digest.
#pragma once

#include <hdf5.h>

#include <string>

#include "experiments/results/result_sink.h"

namespace gopt::experiments::h5 {

/// The run metadata on the root `f` of `file`: the first run's facts and the history of
/// every run into the file. Attributes a run killed before writing them are empty; a
/// metadata digest that does not match is an InputError (the file is damaged).
[[nodiscard]] RunMetadata read_metadata(const std::string& file, hid_t f);

}  // namespace gopt::experiments::h5
