#include "agents/go/go_agent.h"

#include "agents/baselines/tf_default.h"
#include "agents/go/go_learner.h"

namespace gopt::agents::go {

DecisionBase tf_default_base(const Problem& problem, bool single_device) {
  DecisionBase base;
  base.decision.placement = tf_default_placement(problem, single_device);
  base.xla_fusion = true;
  return base;
}

std::unique_ptr<Agent> make_go_agent(const GoOptions& options) {
  switch (options.mode) {
    case GoMode::kOne:
      return make_go_one(options);
    case GoMode::kPretrain:
      return make_go_pretrain(options);
    case GoMode::kFinetune:
      return make_go_finetune(options);
    case GoMode::kZeroShot:
      return make_go_zero_shot(options);
  }
  return make_go_one(options);
}

}  // namespace gopt::agents::go
