// register_builtin_agents: the one list of every agent shipped with gopt.
#include "agents/baselines/human_expert.h"
#include "agents/baselines/list_scheduling.h"
#include "agents/baselines/partition_agents.h"
#include "agents/baselines/simple_agents.h"
#include "agents/baselines/tf_default.h"
#include "agents/go/go_agent.h"
#include "agents/hdp/hdp_agent.h"
#include "agents/registry.h"
#include "agents/search/annealing.h"

namespace gopt::agents {

void register_builtin_agents(AgentRegistry& registry) {
  register_simple_agents(registry);
  register_human_expert(registry);
  register_partition_agents(registry);
  register_list_scheduling_agents(registry);
  register_tf_default(registry);
  hdp::register_hdp(registry);
  go::register_go(registry);
  search::register_annealing(registry);
}

}  // namespace gopt::agents
