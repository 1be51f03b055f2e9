// `gopt agents`: every registered agent with its description and options; `gopt agents
// inspect`: how a trained GO policy's placement distribution varies over a graph's ops.
#include <CLI/CLI.hpp>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "agents/go/go_inspect.h"
#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "core/strings.h"
#include "datasets/workload_registry.h"
#include "experiments/cli/cli.h"
#include "hardware/profile.h"

namespace gopt::experiments {
namespace {

// " in [1, 64]", " in {human_expert, single_device}", " of {placement, fusion}" or "".
std::string allowed_text(const agents::OptionSpec& o) {
  const std::string range = agents::option_range_text(o);
  if (!range.empty()) return " in " + range;
  if (o.choices.empty()) return "";
  return (o.type == agents::OptionType::kList ? " of {" : " in {") + core::join(o.choices) + "}";
}

int list_agents(bool as_json, bool ranges, CliContext& ctx) {
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
  if (ranges) {
    ctx.out << agents::option_range_table(registry);
    return kExitOk;
  }
  if (as_json) {
    auto out = nlohmann::ordered_json::array();
    for (const auto& a : registry.agents()) {
      nlohmann::ordered_json j;
      j["name"] = a.name;
      j["description"] = a.description;
      j["learner"] = a.learner;
      j["options"] = nlohmann::ordered_json::array();
      for (const auto& o : a.options) {
        j["options"].push_back({{"name", o.name},
                                {"type", agents::option_type_name(o.type)},
                                {"default", o.default_value},
                                {"range", agents::option_range_text(o)},
                                {"choices", o.choices},
                                {"description", o.description}});
      }
      out.push_back(std::move(j));
    }
    ctx.out << out.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& a : registry.agents()) {
    ctx.out << a.name << (a.learner ? "  [learner]" : "") << "\n    " << a.description << "\n";
    for (const auto& o : a.options) {
      ctx.out << "      " << o.name << " (" << agents::option_type_name(o.type) << allowed_text(o)
              << ", default " << o.default_value << "): " << o.description << "\n";
    }
  }
  return kExitOk;
}

struct InspectArgs {
  std::string file;
  std::string graph;
  std::string hardware = "p100x4_pcie";
  bool json = false;
};

int inspect_policy(const InspectArgs& args, CliContext& ctx) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  const auto graph = core::CompiledGraph::compile(datasets::load_graph(args.graph, workloads, {}));
  const auto cluster = hardware::load_profile(args.hardware);
  const auto spread = agents::go::placement_spread(args.file, graph, cluster.num_devices());
  if (args.json) {
    nlohmann::ordered_json j;
    j["file"] = args.file;
    j["graph"] = args.graph;
    j["ops"] = graph.num_nodes();
    j["updates"] = spread.updates;
    j["options"] = spread.options;
    j["mean_probability"] = spread.mean_probability;
    j["logit_spread"] = spread.logit_spread;
    j["argmax_ops"] = spread.argmax_ops;
    if (spread.unit_gate_mean) {
      j["unit_gate_mean"] = *spread.unit_gate_mean;
      j["ops_following_unit"] = *spread.ops_following_unit;
    }
    ctx.out << j.dump(2) << "\n";
    return kExitOk;
  }
  ctx.out << args.file << ": " << spread.updates << " updates (" << spread.options << ")\n"
          << args.graph << ", " << graph.num_nodes() << " ops, " << cluster.num_devices()
          << " devices of " << args.hardware << "\n"
          << "device  mean probability  logit std over ops  ops where most likely\n";
  for (std::size_t d = 0; d < spread.mean_probability.size(); ++d) {
    ctx.out << std::setw(6) << d << std::setw(18) << std::setprecision(4)
            << spread.mean_probability[d] << std::setw(20) << std::setprecision(3)
            << spread.logit_spread[d] << std::setw(23) << spread.argmax_ops[d] << "\n";
  }
  if (spread.unit_gate_mean) {
    ctx.out << "unit gate: mean " << std::setprecision(3) << *spread.unit_gate_mean << ", "
            << std::setprecision(3) << 100.0 * *spread.ops_following_unit
            << "% of ops weigh their unit's distribution above their own\n";
  }
  return kExitOk;
}

}  // namespace

void add_agents_command(CLI::App& app, CliContext& context) {
  auto json = std::make_shared<bool>(false);
  auto ranges = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("agents", "List every agent with its description and options");
  cmd->add_flag("--json", *json, "Print a JSON array instead of text");
  cmd->add_flag("--ranges", *ranges,
                "Print every numeric option's range as the Markdown table of docs/agents.md");
  cmd->callback([&context, json, ranges, cmd] {
    if (cmd->get_subcommands().empty()) {
      context.action = [&context, json, ranges] { return list_agents(*json, *ranges, context); };
    }
  });

  auto args = std::make_shared<InspectArgs>();
  auto* inspect = cmd->add_subcommand(
      "inspect",
      "How a trained GO policy's placement distribution varies over the ops of a graph: per "
      "device its mean probability, the std of its logit over ops (about 0: the policy "
      "ignores the op it places) and the ops where it is most likely");
  inspect->add_option("file", args->file, "A GO checkpoint (go_pretrain) or training snapshot")
      ->required();
  inspect->add_option("--graph", args->graph, "Graph: a suite name or a graph file")->required();
  inspect->add_option("--hardware", args->hardware, "Hardware profile (its device count)")
      ->capture_default_str();
  inspect->add_flag("--json", args->json, "Print one JSON object");
  inspect->callback([&context, args] {
    context.action = [&context, args] { return inspect_policy(*args, context); };
  });
}

}  // namespace gopt::experiments
