#include "agents/registry.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iomanip>
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
  }
  return "a value";
}

bool parse_int(const std::string& text, std::int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_double(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_bool(const std::string& text, bool* out) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") {
    *out = true;
    return true;
  }
  if (text == "false" || text == "0" || text == "no" || text == "off") {
    *out = false;
    return true;
  }
  return false;
}

bool well_typed(OptionType type, const std::string& text) {
  std::int64_t i = 0;
  double d = 0;
  bool b = false;
  switch (type) {
    case OptionType::kInt:
      return parse_int(text, &i);
    case OptionType::kDouble:
      return parse_double(text, &d);
    case OptionType::kBool:
      return parse_bool(text, &b);
    case OptionType::kString:
      return true;
  }
  return false;
}

std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out << std::setprecision(12) << v;
  return out.str();
}

}  // namespace

std::string option_number_text(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

std::string option_range_text(const OptionSpec& spec) {
  if (spec.type != OptionType::kInt && spec.type != OptionType::kDouble) return "";
  if (std::isinf(spec.min_value) && std::isinf(spec.max_value)) return "";
  if (spec.min_value <= kMinSeedOption && spec.max_value >= kMaxSeedOption) return "[-2^63, 2^63)";
  return (std::isinf(spec.min_value) ? "(" : "[") + number_text(spec.min_value) + ", " +
         number_text(spec.max_value) + (std::isinf(spec.max_value) ? ")" : "]");
}

std::string option_value_problem(const OptionSpec& spec, const std::string& value) {
  if (!well_typed(spec.type, value)) {
    return std::string("expected ") + type_name(spec.type) + ", found '" + value + "'";
  }
  double v = 0;
  if (spec.type == OptionType::kInt) {
    std::int64_t i = 0;
    parse_int(value, &i);
    v = static_cast<double>(i);
  } else if (spec.type == OptionType::kDouble) {
    parse_double(value, &v);
  } else {
    return "";
  }
  if (v < spec.min_value || v > spec.max_value) {
    return std::string("expected ") + type_name(spec.type) + " in " + option_range_text(spec) +
           ", found '" + value + "'";
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
  std::int64_t v = 0;
  GOPT_ASSERT(parse_int(raw(name), &v), "option " + name + " is not an integer");
  return v;
}

double AgentOptions::get_double(const std::string& name) const {
  double v = 0;
  GOPT_ASSERT(parse_double(raw(name), &v), "option " + name + " is not a number");
  return v;
}

bool AgentOptions::get_bool(const std::string& name) const {
  bool v = false;
  GOPT_ASSERT(parse_bool(raw(name), &v), "option " + name + " is not a boolean");
  return v;
}

const std::string& AgentOptions::get_string(const std::string& name) const { return raw(name); }

void AgentRegistry::add(AgentInfo info) {
  if (contains(info.name)) throw std::logic_error("agent registered twice: " + info.name);
  for (const auto& spec : info.options) {
    GOPT_ASSERT(option_value_problem(spec, spec.default_value).empty(),
                "default of " + info.name + "." + spec.name + " does not parse or is out of range");
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

}  // namespace gopt::agents
