// The simplest baselines: TensorFlow's single-device default, round-robin and uniformly
// random placement. All keep the default (topological FIFO) schedule and no fusion.
#pragma once

#include "agents/registry.h"

namespace gopt::agents {

/// Registers `single_device`, `round_robin` and `random`.
void register_simple_agents(AgentRegistry& registry);

}  // namespace gopt::agents
