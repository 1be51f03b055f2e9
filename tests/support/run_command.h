// Runs a command line through the shell and captures its exit status and output, for
// tests of the `gopt` executable.
#pragma once

#include <string>

namespace gopt::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// Runs `command` with /bin/sh; stdout and stderr are captured separately.
[[nodiscard]] CommandResult run_command(const std::string& command);

}  // namespace gopt::testing
