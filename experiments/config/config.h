// Experiment configs: the YAML file a researcher writes to run (workload, agent, seed)
// combinations on one hardware profile (schema and examples: docs/config.md). Loading
// validates everything and reports every problem at once, each with file:line:column.
//
//   ConfigLoadOptions options;
//   options.with_overrides({"agents.hdp.budget.steps=20", "seeds=[1,2]"});
//   ExperimentConfig config = load_config("experiments/configs/quickstart.yaml", options);
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agent.h"
#include "core/errors.h"
#include "core/options.h"

namespace gopt::agents {
class AgentRegistry;
}
namespace gopt::datasets {
class WorkloadRegistry;
}

namespace gopt::experiments {

/// One workload of an experiment.
struct WorkloadConfig {
  std::string name;   ///< label in results and tables, unique in the config
  std::string graph;  ///< suite name, or a graph/ONNX file path (resolved, see docs)
  std::map<std::string, std::string> overrides;  ///< suite hyperparameters (`set:`)
  std::int64_t onnx_batch = 0;  ///< batch size for dynamic ONNX dimensions (0: none)
  bool onnx_training = false;   ///< add gradient and update ops to ONNX models
  bool held_out = false;        ///< a held-out graph of a generalization experiment
  /// A validation graph of a generalization experiment: go_pretrain picks the checkpoint
  /// on it (model selection); no job runs on it and it has no rows.
  bool pretrain_validation = false;
};

/// One agent of an experiment.
struct AgentConfig {
  std::string name;  ///< label in results and tables, unique in the config
  std::string type;  ///< registry name ("hdp")
  std::map<std::string, std::string> options;  ///< agent options as text
  agents::TrainBudget budget;                  ///< learners only
  /// Where a learner's samples take their step times: "simulated" (the simulator) or
  /// "measured" (executed on this machine's backend, experiments/run/measured_reward.h).
  std::string reward = "simulated";
};

/// A loaded, validated experiment.
struct ExperimentConfig {
  std::string name;                 ///< experiment name
  std::string description;          ///< free text
  std::string table = "placement";  ///< paper table: placement, generalization, multitask,
                                    ///< validation
  std::string hardware;             ///< profile name or resolved path
  std::vector<std::uint64_t> seeds;
  std::vector<WorkloadConfig> workloads;
  std::vector<AgentConfig> agents;
  std::string output;                  ///< results file (relative to the working directory)
  std::string source;                  ///< the config file
  std::string resolved_yaml;           ///< the config after --set overrides, as YAML text
  std::vector<std::string> overrides;  ///< the --set arguments applied
};

/// One problem found while loading a config.
struct ConfigProblem {
  std::string where;    ///< "file:line:column", or "--set ARG" for overridden values
  std::string field;    ///< "agents[1].budget.steps"
  std::string message;  ///< what was expected and what was found
  [[nodiscard]] std::string text() const;  ///< "where: field: message"
};

/// Every problem of a config, reported at once. what() lists them one per line.
class ConfigError : public core::InputError {
 public:
  ConfigError(const std::string& source, std::vector<ConfigProblem> problems);
  [[nodiscard]] const std::vector<ConfigProblem>& problems() const { return problems_; }

 private:
  std::vector<ConfigProblem> problems_;
};

/// A parsed `--set path.to.key=value`: path components ("agents", "hdp", "budget",
/// "steps"; a list is indexed by position or by its entries' `name`) and the value as YAML
/// text ("20", "[1, 2]", "{steps: 5}").
struct Override {
  std::vector<std::string> path;
  std::string value;
  std::string text;  ///< the argument as given
};

/// Parses one `--set` argument. Throws InputError (source "--set") when there is no '=',
/// the path is empty or a component is empty.
[[nodiscard]] Override parse_override(const std::string& assignment);

/// How to load a config. Registries default to the built-in agents and workloads.
struct ConfigLoadOptions {
  GOPT_OPTION(std::vector<std::string>, overrides, {})  ///< `--set` arguments, applied in order
  GOPT_OPTION(const agents::AgentRegistry*, agent_registry, nullptr)
  GOPT_OPTION(const datasets::WorkloadRegistry*, workload_registry, nullptr)
};

/// Reads and validates a config file. Relative graph paths are resolved against the
/// config's directory. Throws ConfigError listing every problem, or InputError when the
/// file cannot be read or is not YAML.
[[nodiscard]] ExperimentConfig load_config(const std::filesystem::path& file,
                                           const ConfigLoadOptions& options = {});

/// Parses config text; `source` names it in messages, `base_dir` resolves relative paths.
[[nodiscard]] ExperimentConfig parse_config(std::string_view text, const std::string& source,
                                            const std::filesystem::path& base_dir,
                                            const ConfigLoadOptions& options = {});

}  // namespace gopt::experiments
