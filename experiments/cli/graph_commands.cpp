// `gopt graph info|validate GRAPH`, `gopt graph list`, `gopt graph generate NAME` and
// `gopt graph import MODEL.onnx`. GRAPH is a suite workload name or a graph file
// (datasets::load_graph).
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/compiled_graph.h"
#include "core/graph_io.h"
#include "core/graph_summary.h"
#include "core/strings.h"
#include "datasets/onnx_importer.h"
#include "datasets/workload_registry.h"
#include "experiments/cli/cli.h"
#include "experiments/config/config.h"
#include "experiments/run/runner.h"

namespace gopt::experiments {
namespace {

// "a -> b -> ... -> y -> z" with at most `keep` names at each end.
std::string describe_path(const core::CompiledGraph& graph, const std::vector<core::NodeId>& path,
                          std::size_t keep = 3) {
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path.size() > 2 * keep + 1 && i == keep) {
      out += " -> ... (" + std::to_string(path.size() - 2 * keep) + " more)";
      i = path.size() - keep - 1;
      continue;
    }
    if (i > 0) out += " -> ";
    out += graph.node_names()[static_cast<std::size_t>(path[i])];
  }
  return out;
}

datasets::LoadOptions load_options(const std::vector<std::string>& sets, std::int64_t batch) {
  datasets::LoadOptions options;
  options.onnx_batch = batch;
  for (const auto& s : sets) datasets::parse_override(s, options.overrides);
  return options;
}

int print_info(const std::string& file, const datasets::WorkloadRegistry& registry,
               const std::vector<std::string>& sets, std::int64_t batch, bool as_json,
               std::size_t top_types, CliContext& ctx) {
  auto graph =
      core::CompiledGraph::compile(datasets::load_graph(file, registry, load_options(sets, batch)));
  auto s = core::summarize(graph);
  if (as_json) {
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["family"] = s.family;
    j["nodes"] = s.num_nodes;
    j["edges"] = s.num_edges;
    j["control_edges"] = s.num_control_edges;
    j["total_flops"] = s.total_flops;
    j["param_bytes"] = s.total_param_bytes;
    j["output_bytes"] = s.total_output_bytes;
    j["edge_bytes"] = s.total_edge_bytes;
    j["longest_path_ops"] = s.longest_path.size();
    j["heaviest_path_flops"] = s.heaviest_path_flops;
    j["ops_by_type"] = nlohmann::ordered_json::object();
    for (const auto& [type, count] : s.ops_by_type) j["ops_by_type"][type] = count;
    j["ops_by_kind"] = nlohmann::ordered_json::object();
    for (const auto& [kind, count] : s.ops_by_kind) j["ops_by_kind"][kind] = count;
    ctx.out << j.dump(2) << "\n";
    return kExitOk;
  }
  auto& out = ctx.out;
  out << "graph:          " << s.name;
  if (!s.family.empty()) out << " (family " << s.family << ")";
  out << "\n"
      << (registry.contains(file) ? "workload:       " : "file:           ") << file << "\n";
  out << "nodes:          " << s.num_nodes << "\n";
  out << "edges:          " << s.num_edges << " (" << s.num_control_edges << " control)\n";
  out << "total FLOPs:    " << core::format_flops(s.total_flops) << "\n";
  out << "parameters:     " << core::format_bytes(static_cast<double>(s.total_param_bytes)) << "\n";
  out << "activations:    " << core::format_bytes(static_cast<double>(s.total_output_bytes))
      << " (sum of op outputs)\n";
  out << "edge traffic:   " << core::format_bytes(static_cast<double>(s.total_edge_bytes))
      << " (sum over edges)\n";
  out << "longest path:   " << s.longest_path.size()
      << " ops: " << describe_path(graph, s.longest_path) << "\n";
  out << "heaviest path:  " << core::format_flops(s.heaviest_path_flops) << " over "
      << s.heaviest_path.size() << " ops: " << describe_path(graph, s.heaviest_path) << "\n";
  out << "ops by kind:   ";
  for (const auto& [kind, count] : s.ops_by_kind) out << " " << kind << "=" << count;
  out << "\nops by type (" << s.ops_by_type.size() << " types):\n";
  std::size_t shown = 0;
  for (const auto& [type, count] : s.ops_by_type) {
    if (top_types > 0 && shown++ == top_types) {
      out << "  ... " << (s.ops_by_type.size() - top_types) << " more (use --types 0)\n";
      break;
    }
    out << "  " << type << std::string(type.size() < 28 ? 28 - type.size() : 1, ' ') << count
        << "\n";
  }
  return kExitOk;
}

// The workloads of an experiment config, as the suite table: each graph generated with the
// config's `set:` overrides (docs/workloads.md "Real-hardware sizes").
int list_config_workloads(const std::string& config_path,
                          const datasets::WorkloadRegistry& registry, CliContext& ctx) {
  const ExperimentConfig config = load_config(config_path);
  ctx.out << "| workload | graph | nodes | edges | FLOPs per step | parameters | parameter bytes "
             "(with optimizer slots) | set |\n";
  ctx.out << "|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& w : config.workloads) {
    std::vector<std::string> set;
    for (const auto& [key, value] : w.overrides) set.push_back(key + "=" + value);
    ctx.out << "| " << w.name << " | " << w.graph << " | "
            << datasets::size_cells_markdown(load_workload(w, registry)) << " | "
            << core::join(set, " ") << " |\n";
  }
  return kExitOk;
}

int list_workloads(const datasets::WorkloadRegistry& registry, bool markdown, bool verbose,
                   CliContext& ctx) {
  if (markdown) {
    ctx.out << datasets::suite_table_markdown(registry);
    return kExitOk;
  }
  for (const auto& w : registry.list()) {
    ctx.out << w.name << std::string(w.name.size() < 18 ? 18 - w.name.size() : 1, ' ')
            << w.description << "\n";
    if (!verbose) continue;
    for (const auto& h : w.hyperparameters) {
      ctx.out << "    " << h.name << "=" << h.default_string() << "  " << h.description << " ("
              << h.allowed() << ")\n";
    }
  }
  return kExitOk;
}

void write_graph(const core::Graph& g, const std::string& out, bool pretty, CliContext& ctx) {
  core::write_graph_file(g, out, pretty);
  auto s = core::summarize(core::CompiledGraph::compile(g));
  ctx.out << out << ": " << g.name() << ", " << s.num_nodes << " nodes, " << s.num_edges
          << " edges, " << core::format_flops(s.total_flops) << ", parameters "
          << core::format_bytes(static_cast<double>(s.total_param_bytes)) << "\n";
}

// The help of a GRAPH argument.
constexpr const char* kGraphHelp =
    "Graph: a suite workload name (see `gopt graph list`) or a graph file (gopt-graph JSON "
    "or .onnx)";

using Registry = std::shared_ptr<datasets::WorkloadRegistry>;

// `gopt graph info GRAPH`.
void add_info_command(CLI::App& graph, CliContext& context, const Registry& registry) {
  struct InfoArgs {
    std::string file;
    std::vector<std::string> sets;
    std::int64_t batch = 0;
    bool json = false;
    std::size_t types = 20;
  };
  auto info_args = std::make_shared<InfoArgs>();
  auto* info = graph.add_subcommand(
      "info", "Print a graph's size, total FLOPs, parameter bytes, ops by type and longest path");
  info->add_option("GRAPH", info_args->file, kGraphHelp)->required();
  info->add_option("--set", info_args->sets, "Override a workload hyperparameter: key=value");
  info->add_option("--batch", info_args->batch, "Batch size for a dynamic ONNX input dimension")
      ->check(positive_number());
  info->add_flag("--json", info_args->json, "Print one JSON object instead of text");
  info->add_option("--types", info_args->types, "Op types to list, most frequent first (0: all)")
      ->capture_default_str();
  info->callback([&context, info_args, registry] {
    context.action = [&context, info_args, registry] {
      return print_info(info_args->file, *registry, info_args->sets, info_args->batch,
                        info_args->json, info_args->types, context);
    };
  });
}

// `gopt graph validate GRAPH`.
void add_validate_graph_command(CLI::App& graph, CliContext& context, const Registry& registry) {
  struct ValidateArgs {
    std::string file;
    std::vector<std::string> sets;
    std::int64_t batch = 0;
  };
  auto validate_args = std::make_shared<ValidateArgs>();
  auto* validate = graph.add_subcommand(
      "validate", "Check a graph: format, fields, names, sizes, acyclicity (exit 1 if bad)");
  validate->add_option("GRAPH", validate_args->file, kGraphHelp)->required();
  validate->add_option("--set", validate_args->sets,
                       "Override a workload hyperparameter: key=value");
  validate
      ->add_option("--batch", validate_args->batch, "Batch size for a dynamic ONNX input dimension")
      ->check(positive_number());
  validate->callback([&context, validate_args, registry] {
    context.action = [&context, validate_args, registry] {
      auto g = datasets::load_graph(validate_args->file, *registry,
                                    load_options(validate_args->sets, validate_args->batch));
      context.out << validate_args->file << ": ok (" << g.num_nodes() << " nodes, " << g.num_edges()
                  << " edges)\n";
      return kExitOk;
    };
  });
}

// `gopt graph list`.
void add_list_command(CLI::App& graph, CliContext& context, const Registry& registry) {
  struct ListArgs {
    bool markdown = false;
    bool verbose = false;
    std::string config;
  };
  auto list_args = std::make_shared<ListArgs>();
  auto* list = graph.add_subcommand("list", "List the workload suite, one line per graph");
  list->add_flag("--markdown", list_args->markdown,
                 "Generate every workload and print the docs/workloads.md size table");
  list->add_flag("-v,--verbose", list_args->verbose,
                 "Also list each workload's hyperparameters, defaults and allowed ranges");
  list->add_option("--config", list_args->config,
                   "Instead of the suite, the workloads of this experiment config, generated\n"
                   "with its overrides, as a markdown size table")
      ->excludes("--verbose");
  list->callback([&context, list_args, registry] {
    context.action = [&context, list_args, registry] {
      if (!list_args->config.empty()) {
        return list_config_workloads(list_args->config, *registry, context);
      }
      return list_workloads(*registry, list_args->markdown, list_args->verbose, context);
    };
  });
}

// `gopt graph generate NAME -o FILE`.
void add_generate_command(CLI::App& graph, CliContext& context, const Registry& registry) {
  struct GenerateArgs {
    std::string name;
    std::vector<std::string> sets;
    std::string out;
    bool pretty = false;
  };
  auto gen_args = std::make_shared<GenerateArgs>();
  auto* generate = graph.add_subcommand(
      "generate", "Generate a suite workload's training graph and write it as a graph file");
  generate->add_option("NAME", gen_args->name, "Workload name (see `gopt graph list`)")->required();
  generate->add_option("--set", gen_args->sets,
                       "Override a hyperparameter: key=value (see `gopt graph list -v`)");
  generate->add_option("-o,--out", gen_args->out, "Output graph file (gopt-graph JSON)")
      ->required();
  generate->add_flag("--pretty", gen_args->pretty, "Indent the JSON");
  generate->callback([&context, gen_args, registry] {
    context.action = [&context, gen_args, registry] {
      datasets::Overrides overrides;
      for (const auto& s : gen_args->sets) datasets::parse_override(s, overrides);
      auto g = registry->generate(gen_args->name, overrides);
      write_graph(g, gen_args->out, gen_args->pretty, context);
      return kExitOk;
    };
  });
}

// `gopt graph import MODEL -o FILE`.
void add_import_command(CLI::App& graph, CliContext& context) {
  struct ImportArgs {
    std::string model;
    std::string out;
    std::int64_t batch = 0;
    bool training = false;
    std::string optimizer = "adam";
    bool pretty = false;
  };
  auto import_args = std::make_shared<ImportArgs>();
  auto* import = graph.add_subcommand(
      "import", "Import an ONNX model as a graph file (shapes, FLOPs, bytes, parameters)");
  import->add_option("MODEL", import_args->model, "ONNX model file (.onnx)")->required();
  import->add_option("-o,--out", import_args->out, "Output graph file (gopt-graph JSON)")
      ->required();
  import
      ->add_option("--batch", import_args->batch,
                   "Batch size for a dynamic leading input dimension")
      ->check(positive_number());
  import->add_flag("--training", import_args->training,
                   "Add gradient and optimizer update ops (a training step)");
  import->add_option("--optimizer", import_args->optimizer, "Update ops with --training")
      ->check(CLI::IsMember({"adam", "sgd"}))
      ->capture_default_str();
  import->add_flag("--pretty", import_args->pretty, "Indent the JSON");
  import->callback([&context, import_args] {
    context.action = [&context, import_args] {
      datasets::OnnxImportOptions options;
  options.batch = import_args->batch;
  options.training = import_args->training;
  options.optimizer = *datasets::optimizer_from_string(import_args->optimizer);
  auto result = datasets::import_onnx(import_args->model, options);
  if (!result.warning.empty()) context.err << "gopt: " << result.warning << "\n";
  write_graph(result.graph, import_args->out, import_args->pretty, context);
  return kExitOk;
};
}  // namespace
);
}  // namespace gopt::experiments

}  // namespace

void add_graph_commands(CLI::App& app, CliContext& context) {
  auto* graph =
      app.add_subcommand("graph", "Generate, import, inspect and check computation graphs");
  graph->require_subcommand(1);
  // The workload suite, shared by every graph command (created here: no globals).
  auto registry = std::make_shared<datasets::WorkloadRegistry>();
  datasets::register_builtin_workloads(*registry);
  add_info_command(*graph, context, registry);
  add_validate_graph_command(*graph, context, registry);
  add_list_command(*graph, context, registry);
  add_generate_command(*graph, context, registry);
  add_import_command(*graph, context);
}

}  // namespace gopt::experiments
