// The reading of an experiment config's YAML tree (internal to experiments/config/config.cpp and
// the units beside it): Reader collects every problem with its file:line:column, and
// ConfigParser fills an ExperimentConfig section by section: the top-level keys, hardware
// and seeds (config.cpp), the workloads (workloads.cpp) and the agents
// (agents.cpp). Reader and the helpers are in reader.cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agents/registry.h"
#include "experiments/config/config.h"

namespace gopt::experiments::config_yaml {

/// A node for messages: "nothing", "a list", "a mapping" or its text in quotes
/// (core::yaml_describe, as hardware profiles say it).
[[nodiscard]] std::string describe(const YAML::Node& node);

/// The key node of `key` in `map` (for messages pointing at a key rather than its value);
/// `map` itself when it has no such key.
[[nodiscard]] YAML::Node key_node(const YAML::Node& map, const std::string& key);

/// Whether `s` is a label of results and tables: letters, digits, '_', '-' or '.'.
[[nodiscard]] bool valid_label(const std::string& s);

/// Collects problems with their locations while reading the YAML tree. A value set by --set
/// is located at its --set argument, anything else at source:line:column.
class Reader {
 public:
  /// `overridden`: the field paths --set touched ("agents[1].budget") and their arguments.
  Reader(std::string source, std::vector<std::pair<std::string, std::string>> overridden)
      : source_(std::move(source)), overridden_(std::move(overridden)) {}

  void problem(const YAML::Node& node, const std::string& field, const std::string& message);
  [[nodiscard]] const std::vector<ConfigProblem>& problems() const { return problems_; }
  [[nodiscard]] std::string where(const YAML::Node& node, const std::string& field) const;

  /// Reports keys of `map` not in `allowed`, with a did-you-mean; a `retired` key with the
  /// reason it is no longer taken.
  void check_keys(const YAML::Node& map, const std::string& field,
                  const std::vector<std::string>& allowed,
                  const std::map<std::string, std::string>& retired = {});
  bool expect_map(const YAML::Node& node, const std::string& field);

  // Each reads a value in the one grammar of configs and hardware profiles
  // (core::yaml_integer, yaml_number, yaml_bool over core::parse_integer, parse_number,
  // parse_bool), or reports a problem and returns std::nullopt.
  std::optional<std::string> string(const YAML::Node& node, const std::string& field,
                                    bool allow_empty = false);
  std::optional<std::int64_t> integer(
      const YAML::Node& node, const std::string& field, std::int64_t min_value,
      const std::string& expected,
      std::int64_t max_value = std::numeric_limits<std::int64_t>::max());
  /// A number > 0.
  std::optional<double> number(const YAML::Node& node, const std::string& field,
                               const std::string& expected);
  std::optional<bool> boolean(const YAML::Node& node, const std::string& field);

 private:
  std::string source_;
  std::vector<std::pair<std::string, std::string>> overridden_;  // field path, --set argument
  std::vector<ConfigProblem> problems_;
};

/// Fills an ExperimentConfig from the YAML tree, reporting problems to the Reader; the
/// agents' options are checked against their registry entries and the hardware's cluster.
class ConfigParser {
 public:
  ConfigParser(Reader& reader, const std::filesystem::path& base_dir,
               const agents::AgentRegistry& agents, const datasets::WorkloadRegistry& workloads)
      : r_(reader), base_dir_(base_dir), agent_registry_(agents), workload_registry_(workloads) {}

  void parse(const YAML::Node& root, ExperimentConfig& c);

 private:
  // The top-level sections (config.cpp).
  [[nodiscard]] bool any_training_set_agent(const ExperimentConfig& c) const;
  void check_validation_users();
  void parse_hardware(const YAML::Node& root, ExperimentConfig& c);
  void parse_seeds(const YAML::Node& root, ExperimentConfig& c);
  [[nodiscard]] std::string resolve_path(const std::string& value) const;

  // The workloads (workloads.cpp).
  void parse_workloads(const YAML::Node& list, ExperimentConfig& c);
  bool read_workload_mapping(const YAML::Node& n, const std::string& field, WorkloadConfig& w,
                             YAML::Node& graph_node);
  bool label_workload(const YAML::Node& n, const std::string& field, WorkloadConfig& w,
                      std::set<std::string>& labels);
  void check_graph(const YAML::Node& graph_node, const YAML::Node& entry, const std::string& field,
                   WorkloadConfig& w);
  void check_suite_overrides(const YAML::Node& entry, const std::string& field,
                             const WorkloadConfig& w);

  // The agents (agents.cpp).
  void parse_agents(const YAML::Node& list, ExperimentConfig& c);
  bool parse_options(const YAML::Node& o, const std::string& field, const agents::AgentInfo* info,
                     AgentConfig& a);
  void check_cluster(const YAML::Node& n, const std::string& field, const agents::AgentInfo& info,
                     const AgentConfig& a);
  std::optional<std::string> option_text(const YAML::Node& node, const std::string& field,
                                         const agents::OptionSpec* spec);
  bool check_option_type(const YAML::Node& node, const std::string& field,
                         const agents::OptionSpec& spec, const std::string& value);
  void parse_budget(const YAML::Node& b, const std::string& field, const agents::AgentInfo* info,
                    AgentConfig& a);
  void parse_reward(const YAML::Node& w, const std::string& field, const agents::AgentInfo& info,
                    AgentConfig& a);

  Reader& r_;
  std::filesystem::path base_dir_;
  const agents::AgentRegistry& agent_registry_;
  const datasets::WorkloadRegistry& workload_registry_;
  std::int64_t devices_ = 0;  // the hardware profile's devices (0: no profile loaded)
  // The `pretrain_validation: true` nodes and their fields, checked against the agents.
  std::vector<std::pair<YAML::Node, std::string>> validation_workloads_;
};

}  // namespace gopt::experiments::config_yaml
