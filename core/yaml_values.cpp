#include "core/yaml_values.h"

#include <yaml-cpp/yaml.h>

#include "core/strings.h"

namespace gopt::core {

std::optional<std::int64_t> yaml_integer(const YAML::Node& node) {
  if (!node.IsDefined() || !node.IsScalar()) return std::nullopt;
  return parse_integer(node.Scalar());
}

std::optional<double> yaml_number(const YAML::Node& node) {
  if (!node.IsDefined() || !node.IsScalar()) return std::nullopt;
  return parse_number(node.Scalar());
}

std::optional<bool> yaml_bool(const YAML::Node& node) {
  if (!node.IsDefined() || !node.IsScalar()) return std::nullopt;
  return parse_bool(node.Scalar());
}

std::string yaml_describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "'" + node.Scalar() + "'";
}

std::string yaml_where(const std::string& source, const YAML::Node& node) {
  // Mark() throws on a missing node (a lookup of an absent key), so ask IsDefined first.
  if (!node.IsDefined()) return source;
  return yaml_where(source, node.Mark());
}

std::string yaml_where(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

}  // namespace gopt::core
