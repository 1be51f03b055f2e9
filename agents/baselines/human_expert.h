// The human-expert baseline ("HP" in the GO paper): per-family placement rules from the
// device-placement literature, driven by the node metadata the workload generators write
// (family, layer, branch). See human_expert.cpp for each rule and its source.
#pragma once

#include <memory>

#include "agents/registry.h"

namespace gopt::agents {

/// A human_expert agent without going through a registry (tf_default places with it).
[[nodiscard]] std::unique_ptr<Agent> make_human_expert_agent();

/// Registers `human_expert`.
void register_human_expert(AgentRegistry& registry);

}  // namespace gopt::agents
