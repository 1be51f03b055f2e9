// Loading an experiment config: the YAML text, the --set overrides applied to its tree, and
// the top-level keys, hardware and seeds (ConfigParser::parse, which reads the workloads in
// workloads.cpp and the agents in agents.cpp; experiments/config/parser.h).
#include "experiments/config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "agents/registry.h"
#include "core/strings.h"
#include "datasets/workload_registry.h"
#include "experiments/config/parser.h"
#include "hardware/profile.h"

namespace gopt::experiments {

std::string ConfigProblem::text() const {
  std::string s;
  if (!where.empty()) s += where + ": ";
  if (!field.empty()) s += field + ": ";
  return s + message;
}

namespace {

std::string problems_text(const std::vector<ConfigProblem>& problems) {
  if (problems.size() == 1) return problems[0].text();
  std::string s = std::to_string(problems.size()) + " problems in the config:";
  for (const auto& p : problems) s += "\n  " + p.text();
  return s;
}

}  // namespace

ConfigError::ConfigError(const std::string& source, std::vector<ConfigProblem> problems)
    // Each problem already names the file, so the message does not repeat `source` when
    // there is a single problem.
    : core::InputError(problems.size() == 1 ? "" : source, "", problems_text(problems)),
      problems_(std::move(problems)) {}

Override parse_override(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos) {
    throw core::InputError("--set", assignment,
                           "expected path.to.key=value (e.g. agents.hdp.budget.steps=20), "
                           "found no '='");
  }
  Override o;
  o.text = assignment;
  o.value = assignment.substr(eq + 1);
  std::string path = assignment.substr(0, eq);
  if (path.empty()) {
    throw core::InputError("--set", assignment, "expected a key path before '=', found none");
  }
  std::size_t start = 0;
  while (true) {
    auto dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) {
      throw core::InputError("--set", assignment,
                             "empty component in key path '" + path + "' (expected a.b.c)");
    }
    o.path.push_back(part);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return o;
}

namespace {

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The label a list entry is addressed by in --set: its `name`, else the scalar itself.
std::string entry_name(const YAML::Node& entry) {
  if (entry.IsScalar()) return entry.Scalar();
  if (entry.IsMap() && entry["name"] && entry["name"].IsScalar()) return entry["name"].Scalar();
  return "";
}

// Applies one override below `node`; returns the field path it touched ("agents[1].budget").
// `node` is a handle (yaml-cpp nodes share their data), so assignments change the tree.
std::string apply_at(YAML::Node node, const Override& o, const YAML::Node& value, std::size_t i,
                     const std::string& field) {
  const std::string& key = o.path[i];
  const bool last = i + 1 == o.path.size();
  if (node.IsSequence()) {
    std::size_t index = node.size();
    if (is_index(key)) {
      index = static_cast<std::size_t>(std::strtoull(key.c_str(), nullptr, 10));
    } else {
      std::vector<std::string> names;
      for (std::size_t k = 0; k < node.size(); ++k) {
        auto n = entry_name(node[k]);
        if (n == key) index = k;
        if (!n.empty()) names.push_back(n);
      }
      if (index == node.size()) {
        throw core::InputError("--set", o.text,
                               "'" + field + "' has no entry named '" + key + "'" +
                                   core::did_you_mean(key, names) +
                                   (names.empty() ? "" : "; entries: " + core::join(names)));
      }
    }
    if (index >= node.size()) {
      throw core::InputError(
          "--set", o.text,
          "'" + field + "' has " + std::to_string(node.size()) + " entries, found index " + key);
    }
    std::string sub = field + "[" + std::to_string(index) + "]";
    if (last) {
      node[index] = value;
      return sub;
    }
    if (node[index].IsScalar()) {
      // `- hdp` shorthand: expand to a mapping so that a field can be set below it.
      YAML::Node expanded(YAML::NodeType::Map);
      expanded["name"] = node[index].Scalar();
      node[index] = expanded;
    }
    return apply_at(node[index], o, value, i + 1, sub);
  }
  if (!node.IsMap() && !node.IsNull()) {
    throw core::InputError("--set", o.text,
                           "'" + field + "' is a single value, cannot set '" + key + "' below it");
  }
  std::string sub = field.empty() ? key : field + "." + key;
  if (last) {
    node[key] = value;
    return sub;
  }
  if (!node[key] || node[key].IsNull()) node[key] = YAML::Node(YAML::NodeType::Map);
  return apply_at(node[key], o, value, i + 1, sub);
}

std::string yaml_error_text(const YAML::Exception& e) {
  return e.msg;  // without yaml-cpp's own "yaml-cpp: error at line ..." prefix
}

}  // namespace

namespace config_yaml {
namespace {

const std::vector<std::string> kTopKeys = {"name",   "description", "table",   "hardware",
                                           "seed",   "seeds",       "repeats", "workloads",
                                           "agents", "output"};
// Keys that configs once took but `gopt run` has never acted on, with where that work is
// done: rejected with this reason rather than accepted and ignored.
const std::map<std::string, std::string> kRetiredTopKeys = {
    {"validation",
     "`gopt run` does not measure on real hardware, so configs take no 'validation' section; "
     "measure decisions on a backend with `gopt validate --profile PROFILE.yaml --backend "
     "cpu|cuda` (docs/hardware-backend.md): a validation needs the measured profile of the "
     "machine it runs on (from `gopt calibrate`), which a config's simulated 'hardware' is not"},
};
const std::vector<std::string> kTables = {"placement", "generalization", "multitask", "validation"};
constexpr std::int64_t kMaxRepeats = 10000;

}  // namespace

void ConfigParser::parse(const YAML::Node& root, ExperimentConfig& c) {
  if (!r_.expect_map(root, "")) return;
  r_.check_keys(root, "", kTopKeys, kRetiredTopKeys);

  if (auto n = root["name"]) {
    if (auto s = r_.string(n, "name")) {
      if (valid_label(*s)) {
        c.name = *s;
      } else {
        r_.problem(n, "name", "expected letters, digits, '_', '-' or '.', found '" + *s + "'");
      }
    }
  } else {
    r_.problem(root, "name", "missing required key 'name' (the experiment's name)");
  }
  if (auto n = root["description"]) {
    if (auto s = r_.string(n, "description", true)) c.description = *s;
  }
  if (auto n = root["table"]) {
    if (auto s = r_.string(n, "table")) {
      if (std::find(kTables.begin(), kTables.end(), *s) == kTables.end()) {
        r_.problem(n, "table",
                   "expected one of " + core::join(kTables) + ", found '" + *s + "'" +
                       core::did_you_mean(*s, kTables));
      } else {
        c.table = *s;
      }
    }
  }
  parse_hardware(root, c);
  parse_seeds(root, c);
  if (auto n = root["workloads"]) {
    parse_workloads(n, c);
  } else {
    r_.problem(root, "workloads", "missing required key 'workloads' (a list of graphs)");
  }
  if (auto n = root["agents"]) {
    parse_agents(n, c);
  } else {
    r_.problem(root, "agents", "missing required key 'agents' (a list of agents)");
  }
  if (!validation_workloads_.empty() && !any_training_set_agent(c)) check_validation_users();
  if (auto n = root["output"]) {
    if (auto s = r_.string(n, "output")) c.output = *s;
  } else if (!c.name.empty()) {
    c.output = "results/" + c.name + ".h5";
  }
}

// Whether an agent of `c` trains on the training set and so reads validation workloads
// (agents::WorkloadScope::kTrainingSet, declared in the registry).
bool ConfigParser::any_training_set_agent(const ExperimentConfig& c) const {
  return std::any_of(c.agents.begin(), c.agents.end(), [&](const AgentConfig& a) {
    return agent_registry_.contains(a.type) &&
           agent_registry_.info(a.type).artifacts.workloads == agents::WorkloadScope::kTrainingSet;
  });
}

// Validation workloads in a config whose agents do not read them: a problem at the first.
void ConfigParser::check_validation_users() {
  std::vector<std::string> readers;
  for (const auto& info : agent_registry_.agents()) {
    if (info.artifacts.workloads == agents::WorkloadScope::kTrainingSet) {
      readers.push_back(info.name);
    }
  }
  const auto& [node, field] = validation_workloads_.front();
  const std::string names = core::join(readers);
  r_.problem(
      node, field + ".pretrain_validation",
      "only " + names + " uses validation graphs, and this config has no " + names + " agent");
}

void ConfigParser::parse_hardware(const YAML::Node& root, ExperimentConfig& c) {
  auto n = root["hardware"];
  if (!n) {
    r_.problem(root, "hardware",
               "missing required key 'hardware' (a profile name such as p100x4_pcie, or a "
               "path to a profile .yaml)");
    return;
  }
  auto s = r_.string(n, "hardware");
  if (!s) return;
  std::string value = *s;
  auto ends_with = [&](const std::string& suffix) {
    return value.size() > suffix.size() &&
           value.compare(value.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  bool looks_like_path =
      value.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml");
  if (looks_like_path) value = resolve_path(value);
  try {
    (void)hardware::resolve_profile_path(value);
    c.hardware = value;
  } catch (const core::InputError& e) {
    r_.problem(n, "hardware", e.problem());
    return;
  }
  // Its device count, for the agents' checks against the cluster (a profile that does
  // not load is a problem here rather than when the run starts).
  try {
    devices_ = hardware::load_profile(value).num_devices();
  } catch (const core::InputError& e) {
    r_.problem(n, "hardware", e.what());
  }
}

void ConfigParser::parse_seeds(const YAML::Node& root, ExperimentConfig& c) {
  auto seeds = root["seeds"];
  auto seed = root["seed"];
  auto repeats = root["repeats"];
  if (seeds && (seed || repeats)) {
    r_.problem(seeds, "seeds", "give either 'seeds' (a list) or 'seed' with 'repeats', found both");
    return;
  }
  if (seeds) {
    if (!seeds.IsSequence() || seeds.size() == 0) {
      r_.problem(seeds, "seeds",
                 "expected a non-empty list of non-negative integers, found " + describe(seeds));
      return;
    }
    std::set<std::uint64_t> seen;
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      std::string field = "seeds[" + std::to_string(i) + "]";
      if (auto v = r_.integer(seeds[i], field, 0, "a non-negative integer")) {
        auto u = static_cast<std::uint64_t>(*v);
        if (!seen.insert(u).second) {
          r_.problem(seeds[i], field, "seed " + std::to_string(u) + " is listed twice");
        }
        c.seeds.push_back(u);
      }
    }
    return;
  }
  std::int64_t base = 0;
  std::int64_t count = 1;
  if (seed) {
    if (auto v = r_.integer(seed, "seed", 0, "a non-negative integer")) base = *v;
  }
  // Seeds are jobs: a run of more than kMaxRepeats of each is not meant (32147483648 ran
  // the process out of memory building the list; found by fuzz_experiment_yaml).
  if (repeats) {
    if (auto v =
            r_.integer(repeats, "repeats", 1,
                       "a positive integer up to " + std::to_string(kMaxRepeats), kMaxRepeats)) {
      count = *v;
    }
  }
  if (base > std::numeric_limits<std::int64_t>::max() - count) {
    r_.problem(seed, "seed", "seed + repeats must stay below 2^63");
    return;
  }
  for (std::int64_t i = 0; i < count; ++i) c.seeds.push_back(static_cast<std::uint64_t>(base + i));
}

std::string ConfigParser::resolve_path(const std::string& value) const {
  std::filesystem::path p(value);
  if (p.is_absolute()) return value;
  return (base_dir_ / p).lexically_normal().string();
}

}  // namespace config_yaml

ExperimentConfig parse_config(std::string_view text, const std::string& source,
                              const std::filesystem::path& base_dir,
                              const ConfigLoadOptions& options) {
  agents::AgentRegistry builtin_agents;
  datasets::WorkloadRegistry builtin_workloads;
  const agents::AgentRegistry* agent_registry = options.agent_registry;
  const datasets::WorkloadRegistry* workload_registry = options.workload_registry;
  if (!agent_registry) {
    agents::register_builtin_agents(builtin_agents);
    agent_registry = &builtin_agents;
  }
  if (!workload_registry) {
    datasets::register_builtin_workloads(builtin_workloads);
    workload_registry = &builtin_workloads;
  }

  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    std::string where = source;
    if (e.mark.line >= 0) {
      where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    }
    throw ConfigError(source, {{where, "", "not valid YAML: " + yaml_error_text(e)}});
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);

  std::vector<std::pair<std::string, std::string>> overridden;
  std::vector<ConfigProblem> override_problems;
  for (const auto& arg : options.overrides) {
    try {
      Override o = parse_override(arg);
      YAML::Node value;
      try {
        value = YAML::Load(o.value);
      } catch (const YAML::Exception& e) {
        throw core::InputError("--set", arg, "the value is not valid YAML: " + yaml_error_text(e));
      }
      overridden.emplace_back(apply_at(root, o, value, 0, ""), arg);
    } catch (const core::InputError& e) {
      override_problems.push_back({"--set " + arg, "", e.problem()});
    }
  }
  if (!override_problems.empty()) throw ConfigError(source, override_problems);

  ExperimentConfig config;
  config.source = source;
  config.overrides = options.overrides;
  config_yaml::Reader reader(source, overridden);
  config_yaml::ConfigParser(reader, base_dir, *agent_registry, *workload_registry)
      .parse(root, config);
  if (!reader.problems().empty()) throw ConfigError(source, reader.problems());

  YAML::Emitter emitter;
  emitter << root;
  config.resolved_yaml = std::string(emitter.c_str()) + "\n";
  return config;
}

ExperimentConfig load_config(const std::filesystem::path& file, const ConfigLoadOptions& options) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw core::InputError(
        file.string(), "",
        "cannot open the config file (" + std::string(std::strerror(errno)) + ")");
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto base = file.parent_path();
  if (base.empty()) base = ".";
  return parse_config(text.str(), file.string(), base, options);
}

}  // namespace gopt::experiments
