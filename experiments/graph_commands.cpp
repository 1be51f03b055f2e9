// `gopt graph info FILE` and `gopt graph validate FILE`.
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/compiled_graph.h"
#include "core/graph_io.h"
#include "core/graph_summary.h"
#include "experiments/cli.h"

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

int print_info(const std::string& file, bool as_json, std::size_t top_types, CliContext& ctx) {
  auto graph = core::CompiledGraph::compile(core::read_graph_file(file));
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
  out << "\nfile:           " << file << "\n";
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

}  // namespace

void add_graph_commands(CLI::App& app, CliContext& context) {
  auto* graph = app.add_subcommand("graph", "Inspect and check computation graph files");
  graph->require_subcommand(1);

  struct InfoArgs {
    std::string file;
    bool json = false;
    std::size_t types = 20;
  };
  auto info_args = std::make_shared<InfoArgs>();
  auto* info = graph->add_subcommand(
      "info", "Print a graph's size, total FLOPs, parameter bytes, ops by type and longest path");
  info->add_option("FILE", info_args->file, "Graph file (gopt-graph JSON)")->required();
  info->add_flag("--json", info_args->json, "Print one JSON object instead of text");
  info->add_option("--types", info_args->types, "Op types to list, most frequent first (0: all)")
      ->capture_default_str();
  info->callback([&context, info_args] {
    context.action = [&context, info_args] {
      return print_info(info_args->file, info_args->json, info_args->types, context);
    };
  });

  auto validate_file = std::make_shared<std::string>();
  auto* validate = graph->add_subcommand(
      "validate", "Check a graph file: format, fields, names, sizes, acyclicity (exit 1 if bad)");
  validate->add_option("FILE", *validate_file, "Graph file (gopt-graph JSON)")->required();
  validate->callback([&context, validate_file] {
    context.action = [&context, validate_file] {
      auto g = core::read_graph_file(*validate_file);
      context.out << *validate_file << ": ok (" << g.num_nodes() << " nodes, " << g.num_edges()
                  << " edges)\n";
      return kExitOk;
    };
  });
}

}  // namespace gopt::experiments
