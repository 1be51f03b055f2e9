// Helpers shared by placement agents.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/compiled_graph.h"
#include "core/units.h"

namespace gopt::agents {

/// Makes a placement respect colocation groups: every op of a group goes to the device of
/// the group's lowest-id op (TensorFlow colocates a variable with its update ops; the
/// variable is created first). Ops without a group keep their device.
void apply_colocation(const core::CompiledGraph& graph, std::vector<core::DeviceId>& placement);

/// What makes ops one scope unit, the part of a model a researcher moves whole: {0, top-level
/// name scope, layer, branch} for an op with a layer attribute outside attention scopes (an
/// encoder or decoder LSTM layer, a Transformer block, a WaveNet layer; in a multi-branch
/// cell each branch, an Inception branch or an AmoebaNet combination, is a unit, and the
/// cell's ops outside its branches another, branch -1), {1, two-level name scope, 0, -1}
/// otherwise (`decoder/attention`, `encoder/embedding`, or the op's own name when it has no
/// scope). Gradient ops (`gradients/...`) join the unit of the op they differentiate. GO's
/// decision units and the search reference's scope moves.
using ScopeUnitKey = std::tuple<int, std::string, std::int64_t, std::int32_t>;
[[nodiscard]] ScopeUnitKey scope_unit_key(const core::CompiledGraph& graph, core::NodeId v);

/// The backward ops whose every path ends in update ops, by node id (1: such an op): the
/// weight gradients (a MatMul's dW, their sums over time steps), which nothing on the chain
/// of input gradients waits for, so that they can run beside it.
[[nodiscard]] std::vector<char> weight_gradient_tail(const core::CompiledGraph& graph);

/// The ops of every scope unit of `graph` (scope_unit_key), each list in node order, the
/// units in the order of their keys.
[[nodiscard]] std::vector<std::vector<core::NodeId>> scope_units(const core::CompiledGraph& graph);

}  // namespace gopt::agents
