#include "experiments/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "agents/registry.h"
#include "core/strings.h"
#include "datasets/workload_registry.h"
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

// "agents[1].budget" is under "agents[1]" and under "agents", not under "agent".
bool under(const std::string& field, const std::string& prefix) {
  if (field.compare(0, prefix.size(), prefix) != 0) return false;
  return field.size() == prefix.size() || field[prefix.size()] == '.' ||
         field[prefix.size()] == '[';
}

std::string describe(const YAML::Node& node) {
  if (!node || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "'" + node.Scalar() + "'";
}

// Collects problems with their locations while reading the YAML tree.
class Reader {
 public:
  Reader(std::string source, std::vector<std::pair<std::string, std::string>> overridden)
      : source_(std::move(source)), overridden_(std::move(overridden)) {}

  void problem(const YAML::Node& node, const std::string& field, const std::string& message) {
    problems_.push_back({where(node, field), field, message});
  }
  [[nodiscard]] const std::vector<ConfigProblem>& problems() const { return problems_; }

  std::string where(const YAML::Node& node, const std::string& field) const {
    const bool has_mark = node && node.Mark().line >= 0;
    for (const auto& [path, arg] : overridden_) {
      // A value set by --set, or a mapping --set created on the way to it (no mark).
      if (under(field, path) || (!has_mark && under(path, field))) return "--set " + arg;
    }
    std::string w = source_;
    if (node && node.Mark().line >= 0) {
      w +=
          ":" + std::to_string(node.Mark().line + 1) + ":" + std::to_string(node.Mark().column + 1);
    }
    return w;
  }

  // Reports keys of `map` not in `allowed`, with a did-you-mean; a `retired` key with the
  // reason it is no longer taken.
  void check_keys(const YAML::Node& map, const std::string& field,
                  const std::vector<std::string>& allowed,
                  const std::map<std::string, std::string>& retired = {}) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : describe(it->first);
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string sub = field.empty() ? key : field + "." + key;
      if (auto r = retired.find(key); r != retired.end()) {
        problem(it->first, sub, r->second);
        continue;
      }
      problem(it->first, sub,
              "unknown key '" + key + "'" + core::did_you_mean(key, allowed) +
                  "; expected one of: " + core::join(allowed));
    }
  }

  bool expect_map(const YAML::Node& node, const std::string& field) {
    if (node.IsMap()) return true;
    problem(node, field, "expected a mapping (key: value lines), found " + describe(node));
    return false;
  }

  std::optional<std::string> string(const YAML::Node& node, const std::string& field,
                                    bool allow_empty = false) {
    if (!node.IsScalar() || (!allow_empty && node.Scalar().empty())) {
      problem(node, field, "expected a string, found " + describe(node));
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<std::int64_t> integer(
      const YAML::Node& node, const std::string& field, std::int64_t min_value,
      const std::string& expected,
      std::int64_t max_value = std::numeric_limits<std::int64_t>::max()) {
    if (node.IsScalar()) {
      const auto v = core::parse_integer(node.Scalar());
      if (v && *v >= min_value && *v <= max_value) return v;
    }
    problem(node, field, "expected " + expected + ", found " + describe(node));
    return std::nullopt;
  }

  std::optional<double> number(const YAML::Node& node, const std::string& field,
                               const std::string& expected) {
    if (node.IsScalar()) {
      const auto v = core::parse_number(node.Scalar());
      if (v && *v > 0) return v;
    }
    problem(node, field, "expected " + expected + ", found " + describe(node));
    return std::nullopt;
  }

  // The one boolean grammar of configs and agent options (core::parse_bool).
  std::optional<bool> boolean(const YAML::Node& node, const std::string& field) {
    if (node.IsScalar()) {
      if (auto v = core::parse_bool(node.Scalar())) return v;
    }
    problem(node, field, "expected " + std::string(core::kBoolText) + ", found " + describe(node));
    return std::nullopt;
  }

 private:
  std::string source_;
  std::vector<std::pair<std::string, std::string>> overridden_;  // field path, --set argument
  std::vector<ConfigProblem> problems_;
};

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
const std::vector<std::string> kWorkloadKeys = {"name", "graph",    "set",
                                                "onnx", "held_out", "pretrain_validation"};
const std::vector<std::string> kAgentKeys = {"name", "agent", "options", "budget"};
const std::vector<std::string> kBudgetKeys = {"steps", "samples", "seconds"};
const std::vector<std::string> kTables = {"placement", "generalization", "multitask", "validation"};

// The key node of `key` in `map` (for messages pointing at a key rather than its value).
YAML::Node key_node(const YAML::Node& map, const std::string& key) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return it->first;
  }
  return map;
}

bool valid_label(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

class ConfigParser {
 public:
  ConfigParser(Reader& reader, const std::filesystem::path& base_dir,
               const agents::AgentRegistry& agents, const datasets::WorkloadRegistry& workloads)
      : r_(reader), base_dir_(base_dir), agent_registry_(agents), workload_registry_(workloads) {}

  void parse(const YAML::Node& root, ExperimentConfig& c) {
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

 private:
  // Whether an agent of `c` trains on the training set and so reads validation workloads
  // (agents::WorkloadScope::kTrainingSet, declared in the registry).
  bool any_training_set_agent(const ExperimentConfig& c) const {
    return std::any_of(c.agents.begin(), c.agents.end(), [&](const AgentConfig& a) {
      return agent_registry_.contains(a.type) && agent_registry_.info(a.type).artifacts.workloads ==
                                                     agents::WorkloadScope::kTrainingSet;
    });
  }

  // Validation workloads in a config whose agents do not read them: a problem at the first.
  void check_validation_users() {
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

  void parse_hardware(const YAML::Node& root, ExperimentConfig& c) {
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

  static constexpr std::int64_t kMaxRepeats = 10000;

  void parse_seeds(const YAML::Node& root, ExperimentConfig& c) {
    auto seeds = root["seeds"];
    auto seed = root["seed"];
    auto repeats = root["repeats"];
    if (seeds && (seed || repeats)) {
      r_.problem(seeds, "seeds",
                 "give either 'seeds' (a list) or 'seed' with 'repeats', found both");
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
    for (std::int64_t i = 0; i < count; ++i)
      c.seeds.push_back(static_cast<std::uint64_t>(base + i));
  }

  std::string resolve_path(const std::string& value) const {
    std::filesystem::path p(value);
    if (p.is_absolute()) return value;
    return (base_dir_ / p).lexically_normal().string();
  }

  void parse_workloads(const YAML::Node& list, ExperimentConfig& c) {
    if (!list.IsSequence() || list.size() == 0) {
      r_.problem(list, "workloads",
                 "expected a non-empty list of workloads (suite names or mappings), found " +
                     describe(list));
      return;
    }
    std::set<std::string> labels;
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string field = "workloads[" + std::to_string(i) + "]";
      const YAML::Node n = list[i];
      WorkloadConfig w;
      YAML::Node graph_node;  // rebound with reset(): assignment would alias yaml-cpp nodes
      graph_node.reset(n);
      if (n.IsScalar()) {
        w.graph = n.Scalar();
      } else if (n.IsMap()) {
        r_.check_keys(n, field, kWorkloadKeys);
        if (auto g = n["graph"]) {
          graph_node.reset(g);
          if (auto s = r_.string(g, field + ".graph")) w.graph = *s;
        } else {
          r_.problem(n, field + ".graph",
                     "missing required key 'graph' (a suite name, a graph file or an .onnx file)");
          continue;
        }
        if (auto s = n["set"]) {
          if (r_.expect_map(s, field + ".set")) {
            for (auto it = s.begin(); it != s.end(); ++it) {
              std::string key = it->first.Scalar();
              if (auto v = r_.string(it->second, field + ".set." + key)) w.overrides[key] = *v;
            }
          }
        }
        if (auto o = n["onnx"]) {
          if (r_.expect_map(o, field + ".onnx")) {
            r_.check_keys(o, field + ".onnx", {"batch", "training"});
            if (auto b = o["batch"]) {
              if (auto v = r_.integer(b, field + ".onnx.batch", 0, "a non-negative integer")) {
                w.onnx_batch = *v;
              }
            }
            if (auto t = o["training"]) {
              if (auto v = r_.boolean(t, field + ".onnx.training")) w.onnx_training = *v;
            }
          }
        }
        if (auto h = n["held_out"]) {
          if (auto v = r_.boolean(h, field + ".held_out")) w.held_out = *v;
        }
        if (auto h = n["pretrain_validation"]) {
          if (auto v = r_.boolean(h, field + ".pretrain_validation")) {
            w.pretrain_validation = *v;
            if (w.pretrain_validation && w.held_out) {
              r_.problem(h, field + ".pretrain_validation",
                         "a workload is a held-out graph or a validation graph, not both");
            }
            if (w.pretrain_validation) validation_workloads_.emplace_back(h, field);
          }
        }
      } else {
        r_.problem(n, field,
                   "expected a suite name or a mapping with 'graph', found " + describe(n));
        continue;
      }
      if (w.graph.empty()) continue;
      check_graph(graph_node, n, field, w);
      if (n.IsMap() && n["name"]) {
        if (auto s = r_.string(n["name"], field + ".name")) w.name = *s;
      } else {
        w.name = std::filesystem::path(w.graph).stem().string();
        if (workload_registry_.contains(w.graph)) w.name = w.graph;
      }
      if (!valid_label(w.name)) {
        r_.problem(n, field + ".name",
                   "expected a label of letters, digits, '_', '-' or '.', found '" + w.name +
                       "' (give the workload a 'name')");
        continue;
      }
      if (!labels.insert(w.name).second) {
        r_.problem(n, field + ".name",
                   "workload name '" + w.name + "' is used twice (give each a distinct 'name')");
        continue;
      }
      c.workloads.push_back(std::move(w));
    }
  }

  void check_graph(const YAML::Node& graph_node, const YAML::Node& entry, const std::string& field,
                   WorkloadConfig& w) {
    const std::string graph_field = entry.IsMap() ? field + ".graph" : field;
    // The ONNX importer's settings; any other graph would load without them.
    if (entry.IsMap() && entry["onnx"] && std::filesystem::path(w.graph).extension() != ".onnx") {
      r_.problem(key_node(entry, "onnx"), field + ".onnx",
                 "'onnx' applies to .onnx files only, and '" + w.graph + "' is not one");
    }
    if (workload_registry_.contains(w.graph)) {
      const auto& info = workload_registry_.info(w.graph);
      std::vector<std::string> keys;
      for (const auto& h : info.hyperparameters) keys.push_back(h.name);
      for (const auto& given : w.overrides) {
        // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
        const std::string& key = given.first;
        const std::string& value = given.second;
        YAML::Node at = entry["set"][key];
        std::string f = field + ".set." + key;
        auto spec = std::find_if(info.hyperparameters.begin(), info.hyperparameters.end(),
                                 [&](const auto& h) { return h.name == key; });
        if (spec == info.hyperparameters.end()) {
          r_.problem(key_node(entry["set"], key), f,
                     "workload '" + w.graph + "' has no hyperparameter '" + key + "'" +
                         core::did_you_mean(key, keys) + "; valid: " + core::join(keys));
          continue;
        }
        if (!spec->choices.empty()) {
          if (std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end()) {
            r_.problem(at, f, "expected " + spec->allowed() + ", found '" + value + "'");
          }
          continue;
        }
        const auto v = core::parse_integer(value);
        if (!v || *v < spec->min_value || *v > spec->max_value) {
          r_.problem(at, f,
                     "expected an integer in " + spec->allowed() + ", found '" + value + "'");
        }
      }
      return;
    }
    if (!w.overrides.empty()) {
      r_.problem(entry["set"], field + ".set",
                 "'set' applies to suite workloads only, and '" + w.graph + "' is not one");
    }
    std::string path = resolve_path(w.graph);
    std::error_code ec;  // a name too long for a path is "no such file", not an exception
    if (!std::filesystem::is_regular_file(path, ec)) {
      r_.problem(graph_node, graph_field,
                 "expected a suite workload name or a graph file, found '" + w.graph +
                     "' (no such workload" +
                     core::did_you_mean(w.graph, workload_registry_.names()) + ", and no file " +
                     path + "); suite: " + core::join(workload_registry_.names()));
      return;
    }
    w.graph = path;
  }

  void parse_agents(const YAML::Node& list, ExperimentConfig& c) {
    if (!list.IsSequence() || list.size() == 0) {
      r_.problem(
          list, "agents",
          "expected a non-empty list of agents (names or mappings), found " + describe(list));
      return;
    }
    const std::vector<std::string> known = agent_registry_.names();
    std::set<std::string> labels;
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string field = "agents[" + std::to_string(i) + "]";
      const YAML::Node n = list[i];
      AgentConfig a;
      YAML::Node type_node;
      type_node.reset(n);
      if (n.IsScalar()) {
        a.type = a.name = n.Scalar();
      } else if (n.IsMap()) {
        r_.check_keys(n, field, kAgentKeys);
        auto name = n["name"];
        auto type = n["agent"];
        if (!name && !type) {
          r_.problem(n, field + ".name", "missing required key 'name' (an agent such as hdp)");
          continue;
        }
        if (name) {
          if (auto s = r_.string(name, field + ".name")) a.name = *s;
        }
        if (type) {
          type_node.reset(type);
          if (auto s = r_.string(type, field + ".agent")) a.type = *s;
        } else {
          type_node.reset(name);
          a.type = a.name;
        }
        if (a.name.empty()) a.name = a.type;
      } else {
        r_.problem(n, field,
                   "expected an agent name or a mapping with 'name', found " + describe(n));
        continue;
      }
      if (a.type.empty()) continue;
      const std::string type_field = n.IsMap() && n["agent"] ? field + ".agent" : field + ".name";
      const agents::AgentInfo* info = nullptr;
      if (agent_registry_.contains(a.type)) {
        info = &agent_registry_.info(a.type);
      } else {
        r_.problem(type_node, type_field,
                   "unknown agent '" + a.type + "'" + core::did_you_mean(a.type, known) +
                       "; available: " + core::join(known));
        continue;
      }
      if (!valid_label(a.name)) {
        r_.problem(n, field + ".name",
                   "expected a label of letters, digits, '_', '-' or '.', found '" + a.name + "'");
        continue;
      }
      if (!labels.insert(a.name).second) {
        r_.problem(n, field + ".name",
                   "agent name '" + a.name +
                       "' is used twice (give the second one its own 'name' and set 'agent: " +
                       a.type + "')");
        continue;
      }
      bool options_valid = true;
      if (n.IsMap()) {
        if (auto o = n["options"]) options_valid = parse_options(o, field + ".options", info, a);
        if (auto b = n["budget"]) parse_budget(b, field + ".budget", info, a);
      }
      if (options_valid) check_cluster(n, field, *info, a);
      c.agents.push_back(std::move(a));
    }
  }

  // Reads and checks an agent's options; false when one of them is a problem.
  bool parse_options(const YAML::Node& o, const std::string& field, const agents::AgentInfo* info,
                     AgentConfig& a) {
    if (!r_.expect_map(o, field)) return false;
    std::vector<std::string> valid;
    if (info) {
      for (const auto& spec : info->options) valid.push_back(spec.name);
    }
    for (auto it = o.begin(); it != o.end(); ++it) {
      std::string key = it->first.Scalar();
      std::string f = field + "." + key;
      const agents::OptionSpec* spec = nullptr;
      if (info) {
        auto found = std::find_if(info->options.begin(), info->options.end(),
                                  [&](const auto& s) { return s.name == key; });
        if (found == info->options.end()) {
          r_.problem(
              it->first, f,
              "agent '" + a.type + "' has no option '" + key + "'" +
                  core::did_you_mean(key, valid) +
                  (valid.empty() ? "; it takes no options" : "; valid: " + core::join(valid)));
          continue;
        }
        spec = &*found;
      }
      auto value = option_text(it->second, f, spec);
      if (!value) continue;
      if (spec && !check_option_type(it->second, f, *spec, *value)) continue;
      a.options[key] = *value;
    }
    // Rules between options (GO: hidden a multiple of heads), once each value is valid: the
    // same check the registry makes before it creates the agent, so that a job cannot fail
    // on its options after others have run.
    if (a.options.size() != o.size()) return false;
    if (info && info->check_options) {
      try {
        info->check_options(agents::AgentOptions(a.type, info->options, a.options, ""));
      } catch (const core::InputError& e) {
        const std::string option = e.location().substr(e.location().rfind('.') + 1);
        const YAML::Node at = o[option] ? o[option] : o;
        r_.problem(at, field + "." + option, e.problem());
        return false;
      }
    }
    return true;
  }

  // The agent's options against the config's cluster (AgentInfo::check_cluster), given or
  // default: GO's max_devices and single_device's device, before any job starts.
  void check_cluster(const YAML::Node& n, const std::string& field, const agents::AgentInfo& info,
                     const AgentConfig& a) {
    if (!info.check_cluster || devices_ <= 0) return;
    try {
      info.check_cluster(agents::AgentOptions(a.type, info.options, a.options, ""), devices_);
    } catch (const core::InputError& e) {
      const std::string option = e.location().substr(e.location().rfind('.') + 1);
      const YAML::Node given = n.IsMap() && n["options"] ? n["options"][option] : YAML::Node();
      r_.problem(given ? given : n, field + ".options." + option,
                 e.problem() + (given ? "" : " (the default; set it in the agent's options)"));
    }
  }

  // An option's value as text: a scalar, or for a list option a YAML list of names too
  // ("[metis, heft]" is "metis,heft").
  std::optional<std::string> option_text(const YAML::Node& node, const std::string& field,
                                         const agents::OptionSpec* spec) {
    if (spec && spec->type == agents::OptionType::kList && node.IsSequence()) {
      std::vector<std::string> items;
      for (const auto& item : node) {
        if (!item.IsScalar()) {
          r_.problem(item, field, "expected a list of names, found " + describe(item));
          return std::nullopt;
        }
        items.push_back(item.Scalar());
      }
      return core::join(items, ",");
    }
    return r_.string(node, field, true);
  }

  // Type, range and choices (agents::OptionSpec), the same check the registry makes when it
  // creates the agent, so that a bad value stops the run before any job starts.
  bool check_option_type(const YAML::Node& node, const std::string& field,
                         const agents::OptionSpec& spec, const std::string& value) {
    auto problem = agents::option_value_problem(spec, value);
    if (!problem.empty()) r_.problem(node, field, problem);
    return problem.empty();
  }

  void parse_budget(const YAML::Node& b, const std::string& field, const agents::AgentInfo* info,
                    AgentConfig& a) {
    if (info && !info->learner) {
      r_.problem(b, field,
                 "agent '" + a.type + "' does not learn, so it takes no budget (remove 'budget')");
      return;
    }
    if (!r_.expect_map(b, field)) return;
    r_.check_keys(b, field, kBudgetKeys);
    if (auto s = b["steps"]) {
      if (auto v = r_.integer(s, field + ".steps", 1, "a positive integer (policy updates)")) {
        a.budget.max_steps = *v;
      }
    }
    if (auto s = b["samples"]) {
      if (auto v = r_.integer(s, field + ".samples", 1, "a positive integer (simulations)")) {
        a.budget.max_samples = *v;
      }
    }
    if (auto s = b["seconds"]) {
      if (auto v = r_.number(s, field + ".seconds", "a positive number of seconds")) {
        a.budget.max_seconds = *v;
      }
    }
  }

  Reader& r_;
  std::filesystem::path base_dir_;
  const agents::AgentRegistry& agent_registry_;
  const datasets::WorkloadRegistry& workload_registry_;
  std::int64_t devices_ = 0;  // the hardware profile's devices (0: no profile loaded)
  // The `pretrain_validation: true` nodes and their fields, checked against the agents.
  std::vector<std::pair<YAML::Node, std::string>> validation_workloads_;
};

std::string yaml_error_text(const YAML::Exception& e) {
  return e.msg;  // without yaml-cpp's own "yaml-cpp: error at line ..." prefix
}

}  // namespace

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
  Reader reader(source, overridden);
  ConfigParser(reader, base_dir, *agent_registry, *workload_registry).parse(root, config);
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
