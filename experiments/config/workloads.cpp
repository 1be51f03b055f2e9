// The `workloads:` section of an experiment config (ConfigParser, experiments/config/parser.h):
// each entry a suite name or a mapping with its graph, suite hyperparameters (`set:`), ONNX
// import settings and its role in a generalization experiment; graphs are resolved against
// the workload registry or the config's folder, labels checked for uniqueness.
#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "core/strings.h"
#include "datasets/workload_registry.h"
#include "experiments/config/parser.h"

namespace gopt::experiments::config_yaml {
namespace {

const std::vector<std::string> kWorkloadKeys = {"name", "graph",    "set",
                                                "onnx", "held_out", "pretrain_validation"};

}  // namespace

void ConfigParser::parse_workloads(const YAML::Node& list, ExperimentConfig& c) {
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
      if (!read_workload_mapping(n, field, w, graph_node)) continue;
    } else {
      r_.problem(n, field, "expected a suite name or a mapping with 'graph', found " + describe(n));
      continue;
    }
    if (w.graph.empty()) continue;
    check_graph(graph_node, n, field, w);
    if (!label_workload(n, field, w, labels)) continue;
    c.workloads.push_back(std::move(w));
  }
}

// A workload given as a mapping; false when it has no graph. `graph_node` is rebound to the
// graph's node.
bool ConfigParser::read_workload_mapping(const YAML::Node& n, const std::string& field,
                                         WorkloadConfig& w, YAML::Node& graph_node) {
  r_.check_keys(n, field, kWorkloadKeys);
  if (auto g = n["graph"]) {
    graph_node.reset(g);
    if (auto s = r_.string(g, field + ".graph")) w.graph = *s;
  } else {
    r_.problem(n, field + ".graph",
               "missing required key 'graph' (a suite name, a graph file or an .onnx file)");
    return false;
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
  return true;
}

// The workload's label: its `name`, else the suite name or the graph file's stem; false
// when it is not a valid label or is in `labels` already.
bool ConfigParser::label_workload(const YAML::Node& n, const std::string& field, WorkloadConfig& w,
                                  std::set<std::string>& labels) {
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
    return false;
  }
  if (!labels.insert(w.name).second) {
    r_.problem(n, field + ".name",
               "workload name '" + w.name + "' is used twice (give each a distinct 'name')");
    return false;
  }
  return true;
}

// A suite workload with its `set:` hyperparameters, else a graph file (resolved against the
// config's folder).
void ConfigParser::check_graph(const YAML::Node& graph_node, const YAML::Node& entry,
                               const std::string& field, WorkloadConfig& w) {
  const std::string graph_field = entry.IsMap() ? field + ".graph" : field;
  // The ONNX importer's settings; any other graph would load without them.
  if (entry.IsMap() && entry["onnx"] && std::filesystem::path(w.graph).extension() != ".onnx") {
    r_.problem(key_node(entry, "onnx"), field + ".onnx",
               "'onnx' applies to .onnx files only, and '" + w.graph + "' is not one");
  }
  if (workload_registry_.contains(w.graph)) {
    check_suite_overrides(entry, field, w);
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
                   "' (no such workload" + core::did_you_mean(w.graph, workload_registry_.names()) +
                   ", and no file " + path + "); suite: " + core::join(workload_registry_.names()));
    return;
  }
  w.graph = path;
}

// Each `set:` hyperparameter of a suite workload against the suite's: its name, choices or
// integer range.
void ConfigParser::check_suite_overrides(const YAML::Node& entry, const std::string& field,
                                         const WorkloadConfig& w) {
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
      r_.problem(at, f, "expected an integer in " + spec->allowed() + ", found '" + value + "'");
    }
  }
}

}  // namespace gopt::experiments::config_yaml
