#include "tests/support/run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gopt::testing {

CommandResult run_command(const std::string& command) {
  static int counter = 0;
  auto err_path =
      std::filesystem::temp_directory_path() /
      ("gopt_test_stderr_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  CommandResult result;
  std::string full = command + " 2>" + err_path.string();
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return result;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) result.out.append(buf, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  result.err = ss.str();
  std::filesystem::remove(err_path);
  return result;
}

}  // namespace gopt::testing
