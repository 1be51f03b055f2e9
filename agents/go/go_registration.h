// The options each GO agent runs with when a config sets none. The registry's option lists
// (`gopt agents`) are generated from these (go_registration.cpp), so a test or tool that
// builds a GO agent directly gets what `gopt run` runs:
//
//   auto agent = make_go_agent(go_agent_defaults("go_one"));  // the registry's go_one
#pragma once

#include <string>

#include "agents/go/go_agent.h"

namespace gopt::agents::go {

/// The options of GO agent `agent` (go_one, go_pretrain, go_finetune, go_zero_shot or a
/// multi-task variant) with every option at its default: GoOptions{}, which is go_one's
/// (its self-imitation and oversize learning rate included), with what the agent changes
/// (mode, name, the search learning rate, no self-imitation, its tasks). Throws
/// std::invalid_argument for a name that is not a GO agent.
[[nodiscard]] GoOptions go_agent_defaults(const std::string& agent);

}  // namespace gopt::agents::go
