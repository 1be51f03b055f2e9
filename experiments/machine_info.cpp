#include "experiments/machine_info.h"

#include <hdf5.h>
#include <torch/version.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#include "experiments/version.h"

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

}  // namespace gopt::experiments
