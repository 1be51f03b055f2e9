// The simplest baselines: TensorFlow's single-device default, round-robin and uniformly
// random placement. All keep the default (topological FIFO) schedule and no fusion.
#pragma once

#include <cstdint>

#include "agents/registry.h"
#include "core/options.h"

namespace gopt::agents {

/// Every option of `single_device`.
struct SingleDeviceOptions {
  GOPT_OPTION(DeviceId, device,
              0)  ///< the device that runs every op (it must exist in the cluster)
};

/// Every option of `random`.
struct RandomOptions {
  GOPT_OPTION(std::uint64_t, seed, 0)  ///< mixed with the problem seed
};

/// Registers `single_device`, `round_robin` and `random`.
void register_simple_agents(AgentRegistry& registry);

}  // namespace gopt::agents
