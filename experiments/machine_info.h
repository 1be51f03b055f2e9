// Facts about the machine and the moment a command runs, recorded in results files and
// measured hardware profiles (provenance).
#pragma once

#include <string>

namespace gopt::experiments {

/// Now, ISO 8601 in UTC ("2026-11-22T01:30:00Z").
[[nodiscard]] std::string utc_now();
/// This machine's host name ("unknown" when it cannot be read).
[[nodiscard]] std::string host_name();
/// "<host>: <CPU model> (<N> logical CPUs)", from /proc/cpuinfo where available.
[[nodiscard]] std::string machine_description();

}  // namespace gopt::experiments
