#include <sstream>
#include <string>
#include <string_view>

#include "agents/registry.h"
#include "core/errors.h"
#include "datasets/workload_registry.h"
#include "experiments/config/config.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_targets.h"

namespace gopt::fuzz {

Outcome check_experiment_yaml(const std::uint8_t* data, std::size_t size) {
  static const agents::AgentRegistry registry = [] {
    agents::AgentRegistry r;
    agents::register_builtin_agents(r);
    return r;
  }();
  static const datasets::WorkloadRegistry workloads = [] {
    datasets::WorkloadRegistry r;
    datasets::register_builtin_workloads(r);
    return r;
  }();
  const std::string text(as_text(data, size));
  experiments::ConfigLoadOptions options;
  options.with_agent_registry(&registry).with_workload_registry(&workloads);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#set ", 0) == 0) options.overrides.push_back(line.substr(5));
  }
  experiments::ExperimentConfig config;
  Outcome outcome = accept_or_reject(
      [&] { config = experiments::parse_config(text, "fuzz.yaml", GOPT_TEST_DATA_DIR, options); });
  if (outcome == Outcome::kRejected) return outcome;
  // Every option of an accepted config passes the checks agent creation makes.
  for (const auto& a : config.agents) {
    const auto& info = registry.info(a.type);
    agents::AgentOptions resolved(a.type, info.options, a.options, "fuzz.yaml");
    if (info.check_options) info.check_options(resolved);
    require(a.budget.max_steps >= 1 && a.budget.max_samples >= 1 && a.budget.max_seconds > 0,
            "agent '" + a.name + "': a budget that is not positive");
  }
  require(!config.seeds.empty() && !config.workloads.empty() && !config.agents.empty(),
          "an accepted config with nothing to run");
  return outcome;
}

}  // namespace gopt::fuzz
