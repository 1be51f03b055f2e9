#include "experiments/bound_refresh.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/errors.h"
#include "datasets/workload_registry.h"
#include "experiments/config.h"
#include "experiments/runner.h"
#include "experiments/version.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/lower_bounds.h"

namespace gopt::experiments {

namespace {

// The file's config, or an InputError saying what cannot be done without one.
ExperimentConfig file_config(const ResultsFile& file, const std::string& consequence) {
  const auto& m = file.metadata;
  if (m.config_yaml.empty()) {
    throw core::InputError(file.path, "/metadata",
                           "records no config to rebuild the graphs from; " + consequence);
  }
  const auto base = std::filesystem::path(m.config_source).parent_path();
  return parse_config(m.config_yaml, file.path + " (its config)", base);
}

}  // namespace

FileConfigSetup::FileConfigSetup(const ResultsFile& file, const std::string& consequence)
    : config(file_config(file, consequence)),
      cluster(hardware::load_profile(config.hardware)),
      cost(hardware::make_cost_model(cluster)) {
  datasets::register_builtin_workloads(workloads);
}

BoundRefresh recompute_lower_bounds(ResultsFile& file) {
  const FileConfigSetup setup(file, "the bounds cannot be recomputed");
  const auto& config = setup.config;

  std::map<std::string, double> bound;  // by workload label, for the results' workloads
  for (const auto& r : file.results) bound.emplace(r.key.workload, 0.0);
  BoundRefresh refresh;
  for (const auto& w : config.workloads) {
    const auto it = bound.find(w.name);
    if (it == bound.end()) continue;
    const core::CompiledGraph graph = compile_workload(w, setup.workloads);
    it->second = simulator::compute_lower_bounds(graph, setup.cluster, *setup.cost).best_s();
    ++refresh.workloads;
  }
  std::set<std::string> raised;
  for (auto& r : file.results) {
    const double b = bound[r.key.workload];
    if (b > r.lower_bound_s * (1 + 1e-12)) {
      r.lower_bound_s = b;
      raised.insert(r.key.workload);
    }
  }
  refresh.raised = raised.size();
  return refresh;
}

std::string bound_refresh_note(const BoundRefresh& refresh) {
  return "Lower bounds recomputed from the file's config by gopt " + std::string(version()) +
         " (revision " + std::string(git_revision()) + ") for " +
         std::to_string(refresh.workloads) + " workloads, above the stored bound on " +
         std::to_string(refresh.raised) + "; each result's bound is the larger of the two.";
}

}  // namespace gopt::experiments
