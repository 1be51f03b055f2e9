// `gopt agents`: every registered agent with its description and options.
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "agents/registry.h"
#include "experiments/cli.h"

namespace gopt::experiments {
namespace {

const char* type_text(agents::OptionType type) {
  switch (type) {
    case agents::OptionType::kInt:
      return "int";
    case agents::OptionType::kDouble:
      return "float";
    case agents::OptionType::kBool:
      return "bool";
    case agents::OptionType::kString:
      return "string";
  }
  return "?";
}

int list_agents(bool as_json, CliContext& ctx) {
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
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
                                {"type", type_text(o.type)},
                                {"default", o.default_value},
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
      ctx.out << "      " << o.name << " (" << type_text(o.type) << ", default " << o.default_value
              << "): " << o.description << "\n";
    }
  }
  return kExitOk;
}

}  // namespace

void add_agents_command(CLI::App& app, CliContext& context) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("agents", "List every agent with its description and options");
  cmd->add_flag("--json", *json, "Print a JSON array instead of text");
  cmd->callback([&context, json] {
    context.action = [&context, json] { return list_agents(*json, context); };
  });
}

}  // namespace gopt::experiments
