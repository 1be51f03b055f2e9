// Reader and the helpers of experiments/config/parser.h: where a problem is (file:line:column
// or the --set argument that set the value) and the typed reads of scalars.
#include <algorithm>

#include "core/strings.h"
#include "core/yaml_values.h"
#include "experiments/config/parser.h"

namespace gopt::experiments::config_yaml {
namespace {

// "agents[1].budget" is under "agents[1]" and under "agents", not under "agent".
bool under(const std::string& field, const std::string& prefix) {
  if (field.compare(0, prefix.size(), prefix) != 0) return false;
  return field.size() == prefix.size() || field[prefix.size()] == '.' ||
         field[prefix.size()] == '[';
}

}  // namespace

std::string describe(const YAML::Node& node) { return core::yaml_describe(node); }

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

void Reader::problem(const YAML::Node& node, const std::string& field, const std::string& message) {
  problems_.push_back({where(node, field), field, message});
}

std::string Reader::where(const YAML::Node& node, const std::string& field) const {
  const bool has_mark = node && node.Mark().line >= 0;
  for (const auto& [path, arg] : overridden_) {
    // A value set by --set, or a mapping --set created on the way to it (no mark).
    if (under(field, path) || (!has_mark && under(path, field))) return "--set " + arg;
  }
  return core::yaml_where(source_, node);
}

void Reader::check_keys(const YAML::Node& map, const std::string& field,
                        const std::vector<std::string>& allowed,
                        const std::map<std::string, std::string>& retired) {
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

bool Reader::expect_map(const YAML::Node& node, const std::string& field) {
  if (node.IsMap()) return true;
  problem(node, field, "expected a mapping (key: value lines), found " + describe(node));
  return false;
}

std::optional<std::string> Reader::string(const YAML::Node& node, const std::string& field,
                                          bool allow_empty) {
  if (!node.IsScalar() || (!allow_empty && node.Scalar().empty())) {
    problem(node, field, "expected a string, found " + describe(node));
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<std::int64_t> Reader::integer(const YAML::Node& node, const std::string& field,
                                            std::int64_t min_value, const std::string& expected,
                                            std::int64_t max_value) {
  const auto v = core::yaml_integer(node);
  if (v && *v >= min_value && *v <= max_value) return v;
  problem(node, field, "expected " + expected + ", found " + describe(node));
  return std::nullopt;
}

std::optional<double> Reader::number(const YAML::Node& node, const std::string& field,
                                     const std::string& expected) {
  const auto v = core::yaml_number(node);
  if (v && *v > 0) return v;
  problem(node, field, "expected " + expected + ", found " + describe(node));
  return std::nullopt;
}

// The one boolean grammar of configs, agent options and hardware profiles (core::parse_bool).
std::optional<bool> Reader::boolean(const YAML::Node& node, const std::string& field) {
  if (auto v = core::yaml_bool(node)) return v;
  problem(node, field, "expected " + std::string(core::kBoolText) + ", found " + describe(node));
  return std::nullopt;
}

}  // namespace gopt::experiments::config_yaml
