// Helpers shared by placement agents.
#pragma once

#include <vector>

#include "core/compiled_graph.h"
#include "core/units.h"

namespace gopt::agents {

/// Makes a placement respect colocation groups: every op of a group goes to the device of
/// the group's lowest-id op (TensorFlow colocates a variable with its update ops; the
/// variable is created first). Ops without a group keep their device.
void apply_colocation(const core::CompiledGraph& graph, std::vector<core::DeviceId>& placement);

}  // namespace gopt::agents
