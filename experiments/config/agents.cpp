// The `agents:` section of an experiment config (ConfigParser, experiments/config/parser.h):
// each entry an agent name or a mapping with its registry type, options and training budget,
// checked as the registry checks them when it creates the agent (types, ranges, rules between
// options, the config's cluster), so that a bad value stops the run before any job starts.
#include <algorithm>
#include <set>

#include "core/strings.h"
#include "experiments/config/parser.h"

namespace gopt::experiments::config_yaml {
namespace {

const std::vector<std::string> kAgentKeys = {"name", "agent", "options", "budget", "reward"};
const std::vector<std::string> kBudgetKeys = {"steps", "samples", "seconds"};

}  // namespace

void ConfigParser::parse_agents(const YAML::Node& list, ExperimentConfig& c) {
  if (!list.IsSequence() || list.size() == 0) {
    r_.problem(list, "agents",
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
      r_.problem(n, field, "expected an agent name or a mapping with 'name', found " + describe(n));
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
      if (auto w = n["reward"]) parse_reward(w, field + ".reward", *info, a);
    }
    if (options_valid) check_cluster(n, field, *info, a);
    c.agents.push_back(std::move(a));
  }
}

// Reads and checks an agent's options; false when one of them is a problem.
bool ConfigParser::parse_options(const YAML::Node& o, const std::string& field,
                                 const agents::AgentInfo* info, AgentConfig& a) {
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
        r_.problem(it->first, f,
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
void ConfigParser::check_cluster(const YAML::Node& n, const std::string& field,
                                 const agents::AgentInfo& info, const AgentConfig& a) {
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
std::optional<std::string> ConfigParser::option_text(const YAML::Node& node,
                                                     const std::string& field,
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
bool ConfigParser::check_option_type(const YAML::Node& node, const std::string& field,
                                     const agents::OptionSpec& spec, const std::string& value) {
  auto problem = agents::option_value_problem(spec, value);
  if (!problem.empty()) r_.problem(node, field, problem);
  return problem.empty();
}

void ConfigParser::parse_reward(const YAML::Node& w, const std::string& field,
                                const agents::AgentInfo& info, AgentConfig& a) {
  const auto value = r_.string(w, field);
  if (!value) return;
  if (*value != "simulated" && *value != "measured") {
    r_.problem(w, field,
               "expected 'simulated' (the simulator times each sample) or 'measured' (each "
               "sample runs on this machine's backend), found '" +
                   *value + "'");
    return;
  }
  if (*value == "measured" && !info.learner) {
    r_.problem(w, field,
               "agent '" + a.type +
                   "' does not learn, so it samples nothing to measure (remove 'reward'; "
                   "`gopt measure` executes its decision)");
    return;
  }
  a.reward = *value;
}

void ConfigParser::parse_budget(const YAML::Node& b, const std::string& field,
                                const agents::AgentInfo* info, AgentConfig& a) {
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

}  // namespace gopt::experiments::config_yaml
