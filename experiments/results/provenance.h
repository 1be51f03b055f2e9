// Facts about the machine and the moment a command runs, recorded in results files and
// measured hardware profiles (provenance).
#pragma once

#include <string>
#include <vector>

#include "experiments/results/result_sink.h"

namespace gopt::experiments {

/// Now, ISO 8601 in UTC ("2026-11-22T01:30:00Z").
[[nodiscard]] std::string utc_now();
/// This machine's host name ("unknown" when it cannot be read).
[[nodiscard]] std::string host_name();
/// "<host>: <CPU model> (<N> logical CPUs)", from /proc/cpuinfo where available.
[[nodiscard]] std::string machine_description();
/// The libraries whose versions can change results or files: "LibTorch 1.13.0; HDF5 1.10.8"
/// (LibTorch as built against, HDF5 as loaded).
[[nodiscard]] std::string library_versions();
/// This process's provenance for results of the config text `resolved_config` run by
/// `command` (CliContext::command_line): gopt's version and revision, this host, the
/// library versions, the config's hash and `cpu_numerics` (what the learned agents' CPU
/// arithmetic ran on; "" where no agent learns).
[[nodiscard]] Provenance process_provenance(const std::string& resolved_config,
                                            const std::string& command,
                                            const std::string& cpu_numerics);

/// A warning for continuing `results` (the results file `path`'s) in a process whose CPU
/// code paths are `current`, when no learner result of the file ran on them: the learners'
/// new results would not be comparable with the file's (docs/agents.md "Determinism and
/// CPU code paths"). It names the file's most common paths and the environment that forces
/// them. "" when there is nothing to warn about.
[[nodiscard]] std::string cpu_path_warning(const std::string& path,
                                           const std::vector<RunResult>& results,
                                           const std::string& current);

}  // namespace gopt::experiments
