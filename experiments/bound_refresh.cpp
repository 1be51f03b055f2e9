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

BoundRefresh recompute_lower_bounds(ResultsFile& file) {
  const auto& m = file.metadata;
  if (m.config_yaml.empty()) {
    throw core::InputError(file.path, "/metadata",
                           "records no config to rebuild the graphs from; the bounds cannot "
                           "be recomputed");
  }
  const auto base = std::filesystem::path(m.config_source).parent_path();
  const ExperimentConfig config = parse_config(m.config_yaml, file.path + " (its config)", base);
  const hardware::Cluster cluster = hardware::load_profile(config.hardware);
  const auto cost = hardware::make_cost_model(cluster);
  datasets::WorkloadRegistry registry;
  datasets::register_builtin_workloads(registry);

  std::map<std::string, double> bound;  // by workload label, for the results' workloads
  for (const auto& r : file.results) bound.emplace(r.key.workload, 0.0);
  BoundRefresh refresh;
  for (const auto& w : config.workloads) {
    const auto it = bound.find(w.name);
    if (it == bound.end()) continue;
    const core::CompiledGraph graph = compile_workload(w, registry);
    it->second = simulator::compute_lower_bounds(graph, cluster, *cost).best_s();
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
