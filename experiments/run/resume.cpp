// What a resumed run keeps and runs again (experiments/run/resume.h).
#include "experiments/run/resume.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/errors.h"
#include "core/strings.h"
#include "experiments/results/version.h"

namespace gopt::experiments {

void Redo::check(const ExperimentConfig& config, const std::string& config_path) const {
  std::vector<std::string> agents;
  for (const auto& a : config.agents) agents.push_back(a.name);
  std::vector<std::string> workloads;
  for (const auto& w : config.workloads) workloads.push_back(w.name);
  for (const auto& entry : entries) {
    const auto colon = entry.find(':');
    const std::string agent = colon == std::string::npos ? entry : entry.substr(colon + 1);
    if (std::find(agents.begin(), agents.end(), agent) == agents.end()) {
      throw core::InputError(config_path, "agents",
                             "--redo " + entry + ": the config has no agent named '" + agent +
                                 "' (" + core::join(agents, ", ") + ")");
    }
    if (colon == std::string::npos) continue;
    const std::string workload = entry.substr(0, colon);
    if (std::find(workloads.begin(), workloads.end(), workload) == workloads.end()) {
      throw core::InputError(config_path, "workloads",
                             "--redo " + entry + ": the config has no workload named '" + workload +
                                 "' (" + core::join(workloads, ", ") + ")");
    }
  }
}

bool Redo::names(const ResultKey& key) const {
  return std::any_of(entries.begin(), entries.end(), [&](const std::string& r) {
    return r == key.agent || r == key.workload + ":" + key.agent;
  });
}

std::set<ResultKey> Redo::done_already(const ExperimentConfig& config,
                                       const std::vector<RunResult>& results) const {
  std::set<ResultKey> done;
  const std::string revision(git_revision());
  if (entries.empty() || revision == "unknown" || revision.find("-dirty") != std::string::npos) {
    return done;
  }
  const std::string hash = config_hash(config.resolved_yaml);
  for (const auto& r : results) {
    if (r.provenance.git_revision == revision && r.provenance.config_hash == hash) {
      done.insert(r.key);
    }
  }
  return done;
}

std::vector<ResultKey> Redo::kept(std::vector<ResultKey> existing,
                                  const std::set<ResultKey>& done_already) const {
  existing.erase(
      std::remove_if(existing.begin(), existing.end(),
                     [&](const ResultKey& k) { return names(k) && done_already.count(k) == 0; }),
      existing.end());
  return existing;
}

// A flat folder the runner writes; no remove_all: see tests/support/files.h on the PyTorch
// wheels' std::filesystem.
void remove_snapshots(const std::string& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    files.push_back(it->path());
  }
  for (const auto& f : files) std::filesystem::remove(f, ec);
  std::filesystem::remove(dir, ec);
}

}  // namespace gopt::experiments
