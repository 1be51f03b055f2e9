#include "experiments/results/provenance.h"

#include <hdf5.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <thread>

#include "agents/cpu_numerics.h"
#include "experiments/results/version.h"

namespace gopt::experiments {

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string machine_description() {
  std::string model = "unknown CPU";
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(colon + 2);
      break;
    }
  }
  return host_name() + ": " + model + " (" + std::to_string(std::thread::hardware_concurrency()) +
         " logical CPUs)";
}

std::string library_versions() {
  unsigned major = 0, minor = 0, release = 0;
  std::string hdf5 = "unknown";
  if (H5get_libversion(&major, &minor, &release) >= 0) {
    hdf5 = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  }
  return std::string("LibTorch ") + TORCH_VERSION + "; HDF5 " + hdf5;
}

Provenance process_provenance(const std::string& resolved_config, const std::string& command,
                              const std::string& cpu_numerics) {
  Provenance p;
  p.gopt_version = std::string(version());
  p.git_revision = std::string(git_revision());
  p.host = host_name();
  p.cpu_numerics = cpu_numerics;
  p.libraries = library_versions();
  p.command = command;
  p.config_hash = config_hash(resolved_config);
  return p;
}

std::string cpu_path_warning(const std::string& path, const std::vector<RunResult>& results,
                             const std::string& current) {
  std::map<std::string, int> paths;
  for (const auto& r : results) {
    if (r.learner && !r.provenance.cpu_numerics.empty()) ++paths[r.provenance.cpu_numerics];
  }
  if (paths.empty() || current.empty() || paths.count(current) > 0) return "";
  const auto most = std::max_element(
      paths.begin(), paths.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  std::string warning =
      "gopt: warning: " + path + ": its learners' results ran on CPU code paths '" + most->first +
      "' (" + std::to_string(most->second) + " results), this process runs on '" + current +
      "'; the learners' new results will not be comparable with them (docs/agents.md "
      "\"Determinism and CPU code paths\")";
  const std::string environment = agents::cpu_numerics_environment(most->first);
  if (!environment.empty()) warning += "; to continue on the file's paths, run with " + environment;
  return warning + "\n";
}

}  // namespace gopt::experiments
