// The one grammar of values (core/strings.h, docs/config.md "Values") read from YAML nodes,
// and the one way a YAML problem names its place: shared by the experiment config reader
// and the hardware profile reader, so that a value means the same in a config and in a
// profile and both report "file:line:column: field: what was expected, found 'text'".
//
//   if (auto v = yaml_integer(node)) ...      // "16" yes; "1e3", "1.0" no (as in a config)
//   throw InputError(yaml_where(file, node), field, "expected ..., found " + yaml_describe(node));
#pragma once

#include <cstdint>
#include <optional>
#include <string>

// yaml-cpp stays out of core's headers: callers that hold nodes include it themselves.
namespace YAML {
class Node;
struct Mark;
}  // namespace YAML

namespace gopt::core {

/// A scalar node's text read with parse_integer; std::nullopt for a node that is not a
/// scalar (missing, null, a list, a mapping) or text parse_integer refuses ("1e3", "1.0").
[[nodiscard]] std::optional<std::int64_t> yaml_integer(const YAML::Node& node);

/// A scalar node's text read with parse_number; std::nullopt otherwise ("inf", "0x10").
[[nodiscard]] std::optional<double> yaml_number(const YAML::Node& node);

/// A scalar node's text read with parse_bool; std::nullopt otherwise ("y", "maybe").
[[nodiscard]] std::optional<bool> yaml_bool(const YAML::Node& node);

/// A node for messages: "nothing" (missing or null), "a list", "a mapping" or its text in
/// quotes ("'1e3'").
[[nodiscard]] std::string yaml_describe(const YAML::Node& node);

/// "source:line:column" (1-based) of a node read from a file; `source` alone for a node
/// without a position (missing, or created rather than read).
[[nodiscard]] std::string yaml_where(const std::string& source, const YAML::Node& node);

/// "source:line:column" of a position yaml-cpp reports (a YAML::Exception's mark);
/// `source` alone when it has none.
[[nodiscard]] std::string yaml_where(const std::string& source, const YAML::Mark& mark);

}  // namespace gopt::core
