// The simplest baselines: TensorFlow's single-device default, round-robin and uniformly
// random placement. All keep the default (topological FIFO) schedule and no fusion.
#pragma once

#include <cstdint>

#include "agents/registry.h"

namespace gopt::agents {

/// Every option of `single_device`.
struct SingleDeviceOptions {
  DeviceId device = 0;  ///< the device that runs every op (it must exist in the cluster)
};

/// Every option of `random`.
struct RandomOptions {
  std::uint64_t seed = 0;  ///< mixed with the problem seed
};

/// Registers `single_device`, `round_robin` and `random`.
void register_simple_agents(AgentRegistry& registry);

}  // namespace gopt::agents
