#include "agents/registry.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/errors.h"
#include "core/strings.h"

namespace gopt::agents {
namespace {

const char* type_name(OptionType type) {
  switch (type) {
    case OptionType::kInt:
      return "an integer";
    case OptionType::kDouble:
      return "a number";
    case OptionType::kBool:
      return "true or false";
    case OptionType::kString:
      return "a string";
    case OptionType::kList:
      return "a comma-separated list";
  }
  return "a value";
}

std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out << std::setprecision(12) << v;
  return out.str();
}

std::string quoted(const std::string& value) { return "'" + value + "'"; }

// Why `value` is not one of a string option's choices, or a list of them; "" when it is.
std::string choice_problem(const OptionSpec& spec, const std::string& value) {
  const auto allowed = [&](const std::string& item) {
    return spec.choices.empty() ||
           std::find(spec.choices.begin(), spec.choices.end(), item) != spec.choices.end();
  };
  if (spec.type == OptionType::kString) {
    if (allowed(value)) return "";
    return "expected one of " + core::join(spec.choices) + ", found " + quoted(value) +
           core::did_you_mean(value, spec.choices);
  }
  const auto items = option_list_items(value);
  const bool ok = !items.empty() && std::all_of(items.begin(), items.end(), allowed);
  if (ok) return "";
  return std::string("expected a comma-separated list") +
         (spec.choices.empty() ? " of names" : " of " + core::join(spec.choices)) + ", found " +
         quoted(value);
}

}  // namespace

std::string option_number_text(double value) { return core::number_text(value); }

const char* option_type_name(OptionType type) {
  switch (type) {
    case OptionType::kInt:
      return "int";
    case OptionType::kDouble:
      return "float";
    case OptionType::kBool:
      return "bool";
    case OptionType::kString:
      return "string";
    case OptionType::kList:
      return "list";
  }
  return "string";
}

std::vector<std::string> option_list_items(const std::string& value) {
  std::vector<std::string> items;
  std::string item;
  std::istringstream in(value);
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string option_range_text(const OptionSpec& spec) {
  if (spec.type != OptionType::kInt && spec.type != OptionType::kDouble) return "";
  if (std::isinf(spec.min_value) && std::isinf(spec.max_value)) return "";
  if (spec.min_value <= kMinSeedOption && spec.max_value >= kMaxSeedOption) return "[-2^63, 2^63)";
  return (std::isinf(spec.min_value) ? "(" : "[") + number_text(spec.min_value) + ", " +
         number_text(spec.max_value) + (std::isinf(spec.max_value) ? ")" : "]");
}

std::string option_value_problem(const OptionSpec& spec, const std::string& value) {
  double v = 0;
  switch (spec.type) {
    case OptionType::kInt: {
      const auto i = core::parse_integer(value);
      if (!i) return "expected an integer, found " + quoted(value);
      v = static_cast<double>(*i);
      break;
    }
    case OptionType::kDouble: {
      const auto d = core::parse_number(value);
      if (!d) return "expected a number, found " + quoted(value);
      v = *d;
      break;
    }
    case OptionType::kBool:
      if (core::parse_bool(value)) return "";
      return "expected " + std::string(core::kBoolText) + ", found " + quoted(value);
    case OptionType::kString:
    case OptionType::kList:
      return choice_problem(spec, value);
  }
  if (v < spec.min_value || v > spec.max_value) {
    return std::string("expected ") + type_name(spec.type) + " in " + option_range_text(spec) +
           ", found " + quoted(value);
  }
  return "";
}

AgentOptions::AgentOptions(const std::string& agent, const std::vector<OptionSpec>& specs,
                           const std::map<std::string, std::string>& given,
                           const std::string& source)
    : agent_(agent), source_(source) {
  std::vector<std::string> names;
  for (const auto& spec : specs) {
    names.push_back(spec.name);
    values_[spec.name] = spec.default_value;
  }
  for (const auto& [key, value] : given) {
    const OptionSpec* spec = nullptr;
    for (const auto& s : specs) {
      if (s.name == key) spec = &s;
    }
    std::string where = "agents." + agent + "." + key;
    if (!spec) {
      throw core::InputError(source, where,
                             "unknown option" + core::did_you_mean(key, names) +
                                 (names.empty() ? "; '" + agent + "' takes no options"
                                                : "; valid options: " + core::join(names)));
    }
    if (auto problem = option_value_problem(*spec, value); !problem.empty()) {
      throw core::InputError(source, where, problem);
    }
    values_[key] = value;
  }
}

void AgentOptions::reject(const std::string& name, const std::string& problem) const {
  throw core::InputError(source_, "agents." + agent_ + "." + name,
                         problem + ", found '" + raw(name) + "'");
}

const std::string& AgentOptions::raw(const std::string& name) const {
  auto it = values_.find(name);
  GOPT_ASSERT(it != values_.end(), "agent '" + agent_ + "' reads undeclared option " + name);
  return it->second;
}

std::int64_t AgentOptions::get_int(const std::string& name) const {
  const auto v = core::parse_integer(raw(name));
  GOPT_ASSERT(v.has_value(), "option " + name + " is not an integer");
  return *v;
}

double AgentOptions::get_double(const std::string& name) const {
  const auto v = core::parse_number(raw(name));
  GOPT_ASSERT(v.has_value(), "option " + name + " is not a number");
  return *v;
}

bool AgentOptions::get_bool(const std::string& name) const {
  const auto v = core::parse_bool(raw(name));
  GOPT_ASSERT(v.has_value(), "option " + name + " is not a boolean");
  return *v;
}

const std::string& AgentOptions::get_string(const std::string& name) const { return raw(name); }

std::vector<std::string> AgentOptions::get_list(const std::string& name) const {
  return option_list_items(raw(name));
}

void AgentRegistry::add(AgentInfo info) {
  if (contains(info.name)) throw std::logic_error("agent registered twice: " + info.name);
  for (const auto& spec : info.options) {
    if (auto problem = option_value_problem(spec, spec.default_value); !problem.empty()) {
      throw std::logic_error("default of " + info.name + "." + spec.name + ": " + problem);
    }
  }
  if (info.check_options) {
    try {
      info.check_options(AgentOptions(info.name, info.options, {}));
    } catch (const core::InputError& e) {
      throw std::logic_error("the defaults of " + info.name + " break a rule: " + e.what());
    }
  }
  agents_.push_back(std::move(info));
}

bool AgentRegistry::contains(const std::string& name) const {
  for (const auto& a : agents_) {
    if (a.name == name) return true;
  }
  return false;
}

std::vector<std::string> AgentRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& a : agents_) out.push_back(a.name);
  return out;
}

const AgentInfo& AgentRegistry::info(const std::string& name, const std::string& source) const {
  for (const auto& a : agents_) {
    if (a.name == name) return a;
  }
  throw core::InputError(source, "agent '" + name + "'",
                         "unknown agent" + core::did_you_mean(name, names()) +
                             "; valid agents: " + core::join(names()));
}

std::unique_ptr<Agent> AgentRegistry::create(const std::string& name,
                                             const std::map<std::string, std::string>& options,
                                             const std::string& source) const {
  const AgentInfo& entry = info(name, source);
  AgentOptions resolved(name, entry.options, options, source);
  if (entry.check_options) entry.check_options(resolved);
  return entry.factory(resolved);
}

void AgentRegistry::declare_artifacts(const std::string& name, AgentArtifacts artifacts) {
  auto it = std::find_if(agents_.begin(), agents_.end(),
                         [&](const AgentInfo& a) { return a.name == name; });
  if (it == agents_.end()) throw std::logic_error("artifacts declared for unknown agent " + name);
  for (const auto* specs : {&artifacts.produces, &artifacts.consumes}) {
    for (const auto& spec : *specs) {
      const bool carried = std::any_of(it->options.begin(), it->options.end(), [&](const auto& o) {
        return o.name == spec.option && o.type == OptionType::kString;
      });
      if (!carried) {
        throw std::logic_error("agent " + name + " passes its " + spec.kind + " through '" +
                               spec.option + "', which is not a string option");
      }
    }
  }
  it->artifacts = std::move(artifacts);
}

std::unique_ptr<TransferableAgent> AgentRegistry::create_transferable(
    const std::string& name, const std::map<std::string, std::string>& options,
    const std::string& source) const {
  auto agent = create(name, options, source);
  auto* transferable = dynamic_cast<TransferableAgent*>(agent.get());
  if (transferable == nullptr) throw core::Error("agent '" + name + "' cannot train on a set");
  agent.release();
  return std::unique_ptr<TransferableAgent>(transferable);
}

std::string option_range_table(const AgentRegistry& registry) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> rows;  // agents
  for (const auto& a : registry.agents()) {
    for (const auto& o : a.options) {
      if (o.type == OptionType::kInt || o.type == OptionType::kDouble) {
        rows[{o.name, option_range_text(o)}].push_back(a.name);
      }
    }
  }
  std::ostringstream out;
  out << "| option | range | agents |\n|---|---|---|\n";
  for (const auto& [key, agents] : rows) {
    const std::size_t shown = std::min<std::size_t>(agents.size(), 3);
    std::string names = core::join(
        std::vector<std::string>(agents.begin(), agents.begin() + static_cast<long>(shown)));
    if (agents.size() > shown) names += " and " + std::to_string(agents.size() - shown) + " more";
    out << "| `" << key.first << "` | " << key.second << " | " << names << " |\n";
  }
  return out.str();
}

}  // namespace gopt::agents
