// The workload suite: named graph generators (the GO paper's 14 graphs and their
// families), their hyperparameters with defaults and allowed ranges, and the one function
// every command taking `--graph` uses to turn its argument into a Graph.
//
//   WorkloadRegistry registry;
//   register_builtin_workloads(registry);
//   core::Graph g = registry.generate("gnmt_8", {{"seq_len", "30"}});
//   core::Graph h = load_graph("model.onnx", registry);   // a suite name or a file path
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/options.h"

namespace gopt::datasets {

/// key=value overrides of hyperparameters, as given with `--set key=value`.
using Overrides = std::map<std::string, std::string>;

/// One hyperparameter a workload exposes: an integer in [min_value, max_value], or, when
/// `choices` is non-empty, one of those strings.
struct HyperparameterSpec {
  std::string name;
  std::string description;  ///< with its unit, e.g. "LSTM hidden units per layer"
  std::int64_t default_value = 0;
  std::int64_t min_value = 0;
  std::int64_t max_value = 0;
  std::vector<std::string> choices;
  std::string default_choice;

  /// "1024" or "adam": the default as it is written on the command line.
  [[nodiscard]] std::string default_string() const;
  /// "[16, 8192]" or "one of adam, sgd".
  [[nodiscard]] std::string allowed() const;
};

/// Resolved hyperparameter values of one generation: defaults with overrides applied and
/// checked. Generators read them by name.
class HyperparameterValues {
 public:
  HyperparameterValues(std::string workload, const std::vector<HyperparameterSpec>& specs,
                       const Overrides& overrides);
  /// The integer value of `name` (a GOPT_ASSERT failure if `name` is not an integer spec).
  [[nodiscard]] std::int64_t integer(const std::string& name) const;
  [[nodiscard]] const std::string& choice(const std::string& name) const;
  /// Every value as a string, for graph attributes and reports.
  [[nodiscard]] const std::map<std::string, std::string>& all() const { return strings_; }

 private:
  std::map<std::string, std::int64_t> integers_;
  std::map<std::string, std::string> strings_;
};

/// A named, described workload.
struct WorkloadInfo {
  std::string name;         ///< "gnmt_8"
  std::string family;       ///< "gnmt"
  std::string description;  ///< one line for `gopt graph list`
  std::vector<HyperparameterSpec> hyperparameters;
};

/// Named generators, registered explicitly (no static registration).
class WorkloadRegistry {
 public:
  using Generator = std::function<core::Graph(const HyperparameterValues&)>;

  /// Adds a workload; throws std::logic_error if the name is taken.
  void add(WorkloadInfo info, Generator generator);
  [[nodiscard]] bool contains(const std::string& name) const;
  /// Workloads in registration order.
  [[nodiscard]] std::vector<WorkloadInfo> list() const;
  [[nodiscard]] std::vector<std::string> names() const;
  /// The workload's description; throws core::InputError listing the valid names.
  [[nodiscard]] const WorkloadInfo& info(const std::string& name) const;
  /// Generates a workload with overrides applied. Throws core::InputError for an unknown
  /// workload (listing the valid ones), an unknown key (listing the valid keys) or a value
  /// outside the allowed range (naming key and range). The graph is validated, named after
  /// the workload and carries every hyperparameter as a graph attribute.
  [[nodiscard]] core::Graph generate(const std::string& name,
                                     const Overrides& overrides = {}) const;

 private:
  struct Entry {
    WorkloadInfo info;
    Generator generator;
  };
  std::vector<Entry> entries_;
};

/// Registers the 14 suite graphs (rnnlm_{2,4,8}, gnmt_{2,4,8}, transformer_xl_{2,4,8},
/// inception_v3, amoebanet, wavenet_{2,4,5}).
void register_builtin_workloads(WorkloadRegistry& registry);

/// Parses "key=value" (from `--set`) into `overrides`; throws core::InputError naming the
/// argument when there is no '=' or the key is empty.
void parse_override(const std::string& assignment, Overrides& overrides);

/// Options for load_graph on ONNX files.
struct LoadOptions {
  GOPT_OPTION(Overrides, overrides, {})     ///< hyperparameters, when the argument is a suite name
  GOPT_OPTION(std::int64_t, onnx_batch, 0)  ///< batch size for dynamic ONNX dimensions (0: none)
  GOPT_OPTION(bool, onnx_training, false)   ///< add gradient and update ops to imported ONNX models
};

/// Resolves a `--graph` argument: a suite workload name (generated with
/// `options.overrides`), else a path to a graph file (`.onnx` files are imported, anything
/// else is read as gopt-graph JSON). Throws core::InputError when it is neither, naming the
/// argument and listing the suite names.
[[nodiscard]] core::Graph load_graph(const std::string& name_or_path,
                                     const WorkloadRegistry& registry,
                                     const LoadOptions& options = {});

/// Markdown table of the suite (name, family, nodes, edges, FLOPs, parameter bytes,
/// default hyperparameters), generating every workload with its defaults. This is the
/// table in docs/workloads.md (`gopt graph list --markdown`).
[[nodiscard]] std::string suite_table_markdown(const WorkloadRegistry& registry);

/// The size cells of a markdown table row for `g` (nodes | edges | FLOPs per step |
/// parameters | parameter bytes), as the suite table has them.
[[nodiscard]] std::string size_cells_markdown(const core::Graph& g);

}  // namespace gopt::datasets
