#include "experiments/tables/bound_refresh.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/errors.h"
#include "datasets/workload_registry.h"
#include "experiments/config/config.h"
#include "experiments/results/version.h"
#include "experiments/run/runner.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/lower_bounds.h"

namespace gopt::experiments {

std::string config_yaml_of(const ResultsFile& file, const RunResult& result) {
  const auto& m = file.metadata;
  if (m.config_yaml.empty()) return "";
  const std::string& hash = result.provenance.config_hash;
  if (hash.empty() || m.provenance.config_hash == hash) return m.config_yaml;
  for (const auto& run : m.history) {
    if (run.provenance.config_hash == hash) {
      return run.config_yaml.empty() ? m.config_yaml : run.config_yaml;
    }
  }
  return "";
}

FileConfigSetup::FileConfigSetup(const ResultsFile& file, const std::string& config_yaml)
    : config(parse_config(config_yaml, file.path + " (its config)",
                          std::filesystem::path(file.metadata.config_source).parent_path())),
      cluster(hardware::load_profile(config.hardware)),
      cost(hardware::make_cost_model(cluster)) {
  datasets::register_builtin_workloads(workloads);
}

void for_each_file_config(
    ResultsFile& file, const std::string& consequence,
    const std::function<void(const FileConfigSetup&, const std::vector<RunResult*>&)>& visit) {
  if (file.metadata.config_yaml.empty()) {
    throw core::InputError(file.path, "/metadata",
                           "records no config to rebuild the graphs from; " + consequence);
  }
  std::vector<std::string> configs{file.metadata.config_yaml};  // first seen, first visited
  std::vector<std::vector<RunResult*>> groups(1);
  for (auto& r : file.results) {
    const std::string yaml = config_yaml_of(file, r);
    if (yaml.empty()) {
      throw core::InputError(file.path, "/results/" + r.key.text(),
                             "ran under a config (hash " + r.provenance.config_hash +
                                 ") the file does not record; " + consequence);
    }
    auto at =
        static_cast<std::size_t>(std::find(configs.begin(), configs.end(), yaml) - configs.begin());
    if (at == configs.size()) {
      configs.push_back(yaml);
      groups.emplace_back();
    }
    groups[at].push_back(&r);
  }
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (groups[i].empty()) continue;
    const FileConfigSetup setup(file, configs[i]);
    visit(setup, groups[i]);
  }
}

BoundRefresh recompute_lower_bounds(ResultsFile& file) {
  BoundRefresh refresh;
  std::set<std::string> raised, recomputed;
  for_each_file_config(
      file, "the bounds cannot be recomputed",
      [&](const FileConfigSetup& setup, const std::vector<RunResult*>& results) {
        std::map<std::string, double> bound;  // by workload label, for these results
        for (const RunResult* r : results) bound.emplace(r->key.workload, 0.0);
        for (const auto& w : setup.config.workloads) {
          const auto it = bound.find(w.name);
          if (it == bound.end()) continue;
          const core::CompiledGraph graph = compile_workload(w, setup.workloads);
          it->second = simulator::compute_lower_bounds(graph, setup.cluster, *setup.cost).best_s();
          recomputed.insert(w.name);
          ++refresh.graphs;
        }
        for (RunResult* r : results) {
          const double b = bound[r->key.workload];
          if (b > r->lower_bound_s * (1 + 1e-12)) {
            r->lower_bound_s = b;
            raised.insert(r->key.workload);
          }
        }
      });
  refresh.raised = raised.size();
  refresh.workloads = recomputed.size();  // a workload of several configs counts once
  return refresh;
}

std::string bound_refresh_note(const BoundRefresh& refresh) {
  return "Lower bounds recomputed from the file's config by gopt " + std::string(version()) +
         " (revision " + std::string(git_revision()) + ") for " +
         std::to_string(refresh.workloads) + " workloads" +
         (refresh.graphs > refresh.workloads
              ? " (" + std::to_string(refresh.graphs) +
                    " graphs, one per config of the file's results that names it)"
              : std::string()) +
         ", above the stored bound on " + std::to_string(refresh.raised) +
         "; each result's bound is the larger of the two.";
}

}  // namespace gopt::experiments
