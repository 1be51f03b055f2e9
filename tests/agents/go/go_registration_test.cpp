// GO's agents in the registry (agents/go/go_registration.h): each runs with what
// `gopt agents` lists for it, and GoOptions{} is go_one's defaults (issue #29: defaults in
// one place).
#include "agents/go/go_registration.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "agents/registry.h"
#include "agents/search/annealing.h"

namespace gopt::agents::go {
namespace {

// GoOptions{} is go_one's defaults; the other GO agents change what the registry lists for
// them, and go_agent_defaults gives what each runs with.
TEST(GoRegistrationTest, DefaultsAreOneStructAndWhatTheListingShows) {
  AgentRegistry r;
  register_builtin_agents(r);
  auto listed = [&](const std::string& agent, const std::string& option) {
    for (const auto& o : r.info(agent).options) {
      if (o.name == option) return o.default_value;
    }
    return std::string("(none)");
  };
  const GoOptions plain;
  const GoOptions one = go_agent_defaults("go_one");
  EXPECT_EQ(one.ppo.imitation_coef, plain.ppo.imitation_coef);
  EXPECT_EQ(one.oversize_learning_rate, plain.oversize_learning_rate);
  EXPECT_EQ(one.ppo.learning_rate, plain.ppo.learning_rate);
  EXPECT_EQ(listed("go_one", "imitation_coef"), "0.3");
  EXPECT_EQ(listed("go_one", "oversize_learning_rate"), "0.003");
  EXPECT_EQ(listed("go_one", "learning_rate"), "0.0003");
  for (const char* agent : {"go_pretrain", "go_finetune", "go_multitask"}) {
    const GoOptions g = go_agent_defaults(agent);
    EXPECT_EQ(g.ppo.imitation_coef, 0) << agent;
    EXPECT_EQ(listed(agent, "imitation_coef"), "0") << agent;
    EXPECT_EQ(option_number_text(g.ppo.learning_rate), listed(agent, "learning_rate")) << agent;
  }
  EXPECT_EQ(go_agent_defaults("go_finetune").ppo.learning_rate, kSearchLearningRate);
  EXPECT_EQ(go_agent_defaults("go_multitask").oversize_learning_rate, 0);
  EXPECT_TRUE(go_agent_defaults("go_multitask").base);
  EXPECT_THROW((void)go_agent_defaults("hdp"), std::invalid_argument);
  // annealing reports one curve step per GO update's simulations by default.
  EXPECT_EQ(search::kGoSamplesPerUpdate,
            one.ppo.samples_per_step + (one.ppo.evaluate_greedy ? 1 : 0));
}

}  // namespace
}  // namespace gopt::agents::go
