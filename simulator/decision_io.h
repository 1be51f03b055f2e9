// Decision files: the JSON format that stores a placement / priority / fusion decision for
// one graph (docs/decision-format.md), and the simple placements the CLI offers by name.
//
//   Decision d = read_decision_file("best.json", graph, cluster);  // validated
//   Decision rr; rr.placement = round_robin_placement(graph, cluster.num_devices());
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/compiled_graph.h"
#include "core/decision.h"
#include "hardware/cluster.h"

namespace gopt::simulator {

inline constexpr std::string_view kDecisionFormatName = "gopt-decision";
inline constexpr int kDecisionFormatVersion = 1;

/// Parses a decision for `graph` on `cluster`. Each of "placement", "priority", "fusion"
/// is optional and is either an array with one entry per op (in node id order) or an
/// object mapping node names to values (ops left out take the field's default).
/// Placement entries are device indices or device names. The result is validated; every
/// error names `source`, the field and the op.
[[nodiscard]] core::Decision parse_decision_json(std::string_view text, const std::string& source,
                                                 const core::CompiledGraph& graph,
                                                 const hardware::Cluster& cluster);

/// Reads and parses a decision file (see parse_decision_json).
[[nodiscard]] core::Decision read_decision_file(const std::filesystem::path& path,
                                                const core::CompiledGraph& graph,
                                                const hardware::Cluster& cluster);

/// Serialises a decision; `by_name` writes objects keyed by node name instead of arrays.
[[nodiscard]] std::string to_decision_json(const core::Decision& decision,
                                           const core::CompiledGraph& graph, bool by_name = false);

/// Op v on device v % num_devices.
[[nodiscard]] std::vector<core::DeviceId> round_robin_placement(const core::CompiledGraph& graph,
                                                                core::DeviceId num_devices);

}  // namespace gopt::simulator
