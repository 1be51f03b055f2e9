// The agent registry: creates agents by name with validated options, and lists them with
// their descriptions and options (`gopt agents`). Registration is explicit
// (register_builtin_agents), never through static constructors (STYLE.md point 5).
//
//   AgentRegistry registry;
//   register_builtin_agents(registry);
//   auto agent = registry.create("random", {{"seed", "3"}});   // InputError if unknown
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/agent.h"

namespace gopt::agents {

enum class OptionType {
  kInt,
  kDouble,
  kBool,
  kString,
  kList,  ///< comma-separated names ("placement,fusion"), at least one
};

/// One option an agent accepts. Values travel as text (from YAML or the command line)
/// and are checked against `type`, the range [min_value, max_value] (numbers only) and
/// `choices` (strings and lists) when a config loads and when the agent is created, in the
/// one grammar of core::parse_bool, parse_integer and parse_number (docs/config.md
/// "Values"). Every numeric option has a finite range: one that bounds the work a job can
/// ask for (layers, samples, epochs), so that a typo cannot crash the process or run for
/// ever. Agents generate their specs from their options struct (agents/option_fields.h)
/// rather than write them by hand.
///
///   {"heads", OptionType::kInt, "2", "attention heads", 1, 64}
struct OptionSpec {
  OptionSpec() = default;
  OptionSpec(std::string option_name, OptionType option_type, std::string default_text,
             std::string what, double min = -std::numeric_limits<double>::infinity(),
             double max = std::numeric_limits<double>::infinity())
      : name(std::move(option_name)),
        type(option_type),
        default_value(std::move(default_text)),
        description(std::move(what)),
        min_value(min),
        max_value(max) {}

  std::string name;
  OptionType type = OptionType::kString;
  std::string default_value;
  std::string description;  ///< says the unit and where the default comes from
  double min_value = -std::numeric_limits<double>::infinity();  ///< inclusive
  double max_value = std::numeric_limits<double>::infinity();   ///< inclusive
  /// Strings: the values allowed; lists: the names allowed. Empty: any.
  std::vector<std::string> choices;
};

/// The range of seed options: any 64-bit integer.
inline constexpr double kMinSeedOption = -9223372036854775808.0;
inline constexpr double kMaxSeedOption = 9223372036854775807.0;

/// Why `value` is not valid for `spec` ("expected an integer in [1, 64], found '0'"), or
/// "" when it is.
[[nodiscard]] std::string option_value_problem(const OptionSpec& spec, const std::string& value);

/// "[1, 64]", "[0, inf)" or "" (no range, strings and booleans), for listings.
[[nodiscard]] std::string option_range_text(const OptionSpec& spec);

/// A number as an option's default value is written ("0.001", "1e-05", "64"):
/// core::number_text, so that the default `gopt agents` lists is the value that runs.
[[nodiscard]] std::string option_number_text(double value);

/// An option type's name in listings and the Python module: "int", "float", "bool",
/// "string" or "list".
[[nodiscard]] const char* option_type_name(OptionType type);

/// The names of a list option's value ("placement, fusion" -> {"placement", "fusion"}):
/// split at commas, spaces around each name dropped, empty names skipped.
[[nodiscard]] std::vector<std::string> option_list_items(const std::string& value);

/// An agent's options: every spec'd option with its given or default value, typed.
class AgentOptions {
 public:
  /// Checks `given` against `specs`. Throws InputError naming `source` and
  /// `agents.<agent>.<option>` for an unknown option (listing the valid ones, with a
  /// did-you-mean) or a value of the wrong type, out of range or not among the choices.
  AgentOptions(const std::string& agent, const std::vector<OptionSpec>& specs,
               const std::map<std::string, std::string>& given, const std::string& source = "");

  [[nodiscard]] std::int64_t get_int(const std::string& name) const;
  [[nodiscard]] double get_double(const std::string& name) const;
  [[nodiscard]] bool get_bool(const std::string& name) const;
  [[nodiscard]] const std::string& get_string(const std::string& name) const;
  [[nodiscard]] std::vector<std::string> get_list(const std::string& name) const;
  /// Throws InputError naming the source and `agents.<agent>.<name>`: `problem` (what was
  /// expected), then the value given. For rules between options that ranges cannot express.
  [[noreturn]] void reject(const std::string& name, const std::string& problem) const;
  /// Every option's value as text, for results files.
  [[nodiscard]] const std::map<std::string, std::string>& values() const { return values_; }

 private:
  const std::string& raw(const std::string& name) const;
  std::string agent_;
  std::string source_;
  std::map<std::string, std::string> values_;
};

/// A file one agent's jobs write and another's read (a pretrained policy). The runner
/// passes its path through the agent option `option`: a consumer whose option is unset
/// reads the first producer's artifact of the same kind and seed, and a producer whose
/// option is unset writes "<results file without .h5>.<agent label>.seed<N><file_suffix>".
///
///   {"pretrained_policy", "checkpoint", ".ckpt"}
struct ArtifactSpec {
  std::string kind;         ///< what it is; a consumer reads a producer's of the same kind
  std::string option;       ///< the string option that receives the file's path
  std::string file_suffix;  ///< producers: the default file's extension
};

/// Which workloads of an experiment an agent's jobs cover.
enum class WorkloadScope {
  kEach,         ///< one job per workload (validation workloads excepted)
  kTrainingSet,  ///< one job per seed over every training workload (neither held out nor a
                 ///< validation workload), the validation workloads for model selection,
                 ///< one result row per training workload; the agent is a TransferableAgent
  kHeldOut,      ///< one job per held-out workload (per workload when none is held out)
};

/// What an agent's jobs produce and consume, and which workloads they cover: what the
/// runner's planner knows of an agent beyond its options (experiments/run/plan.h).
///
///   AgentArtifacts()
///       .produce({"pretrained_policy", "checkpoint", ".ckpt"})
///       .on(WorkloadScope::kTrainingSet)
struct AgentArtifacts {
  std::vector<ArtifactSpec> produces;
  std::vector<ArtifactSpec> consumes;
  WorkloadScope workloads = WorkloadScope::kEach;

  AgentArtifacts& produce(ArtifactSpec spec) {
    produces.push_back(std::move(spec));
    return *this;
  }
  AgentArtifacts& consume(ArtifactSpec spec) {
    consumes.push_back(std::move(spec));
    return *this;
  }
  AgentArtifacts& on(WorkloadScope scope) {
    workloads = scope;
    return *this;
  }
  /// A transfer-learning agent (it trains on the training set, or runs on held-out
  /// workloads): its results count as learned even when it does not train itself.
  [[nodiscard]] bool transfers() const { return workloads != WorkloadScope::kEach; }
};

/// A registered agent.
struct AgentInfo {
  using Factory = std::function<std::unique_ptr<Agent>(const AgentOptions&)>;
  using Check = std::function<void(const AgentOptions&)>;
  using ClusterCheck = std::function<void(const AgentOptions&, std::int64_t devices)>;

  AgentInfo() = default;
  AgentInfo(std::string agent_name, std::string what, bool learns, std::vector<OptionSpec> specs,
            Factory make, Check check = {})
      : name(std::move(agent_name)),
        description(std::move(what)),
        learner(learns),
        options(std::move(specs)),
        factory(std::move(make)),
        check_options(std::move(check)) {}

  std::string name;
  std::string description;  ///< one line; where the method comes from
  bool learner = false;
  std::vector<OptionSpec> options;
  Factory factory;
  /// Checks between options that ranges cannot express (GO: `hidden` a multiple of
  /// `heads`); throws InputError through AgentOptions::reject. Run when a config loads
  /// and before `factory`. Optional; agents described by OptionFields get theirs from it.
  Check check_options;
  /// Checks against the cluster a config runs on, of `devices` devices, what the options
  /// alone cannot (single_device's `device` exists, GO's `max_devices` covers it); throws
  /// InputError through AgentOptions::reject. Run when a config loads. Optional.
  ClusterCheck check_cluster;
  /// What its jobs produce and consume (AgentRegistry::declare_artifacts); none by default.
  AgentArtifacts artifacts;
  /// Its training can be shared by several ranks (Agent::set_learner_group): under `gopt
  /// run --data-parallel` every rank runs its jobs together.
  bool data_parallel = false;
};

class AgentRegistry {
 public:
  /// Adds an agent; throws std::logic_error (a programming error) on a duplicate name, or
  /// defaults that do not parse, are out of range or break check_options.
  void add(AgentInfo info);
  [[nodiscard]] bool contains(const std::string& name) const;
  /// The agent's entry; throws InputError listing the valid names for an unknown one.
  [[nodiscard]] const AgentInfo& info(const std::string& name,
                                      const std::string& source = "") const;
  /// Creates an agent; throws InputError for an unknown name or option, or a bad value.
  [[nodiscard]] std::unique_ptr<Agent> create(
      const std::string& name, const std::map<std::string, std::string>& options = {},
      const std::string& source = "") const;
  /// Declares what agent `name`'s jobs produce and consume. Throws std::logic_error (a
  /// programming error) for an unknown agent, or an artifact option that is not one of its
  /// string options.
  void declare_artifacts(const std::string& name, AgentArtifacts artifacts);
  /// Creates an agent that trains on a set of workloads (WorkloadScope::kTrainingSet);
  /// throws as create(), and core::Error when the agent cannot.
  [[nodiscard]] std::unique_ptr<TransferableAgent> create_transferable(
      const std::string& name, const std::map<std::string, std::string>& options = {},
      const std::string& source = "") const;
  /// Every agent in registration order.
  [[nodiscard]] const std::vector<AgentInfo>& agents() const { return agents_; }
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  std::vector<AgentInfo> agents_;
};

/// Every numeric option's range as a Markdown table, one row per option name and range,
/// sorted by name, with the agents that take it ("go_one, go_pretrain, go_placement and 6
/// more"): docs/agents.md "Option ranges" is this table of the built-in agents, and `gopt
/// agents --ranges` prints it.
[[nodiscard]] std::string option_range_table(const AgentRegistry& registry);

/// Registers every agent shipped with gopt.
void register_builtin_agents(AgentRegistry& registry);

}  // namespace gopt::agents
