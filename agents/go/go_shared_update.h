// One PPO update on several graphs at once (GoOptions::graphs_per_update), the gradient
// averaged over them, and the way data-parallel members split it: member r samples,
// simulates and backpropagates the graphs ("slots") j with j % size == r. Each slot draws
// from its own generator, seeded from the agent's random stream, so a slot's samples do not
// depend on which member takes it. The members exchange their slots' evaluations, reward
// references and new best decisions, so that every member's environments count the same
// samples and keep the same best decisions; then, each epoch, the per-slot gradients, which
// every member sums in slot order (each value sent by one member, zeros by the others: the
// sums are exact). Every member takes the same Adam step, the one a learner alone takes.
#pragma once

#include <vector>

#include "agents/go/go_checkpoint.h"
#include "agents/go/go_ppo.h"
#include "agents/learner_group.h"
#include "core/rng.h"

namespace gopt::agents::go {

/// One update on `slots` (every member passes the same tasks in the same order); `group`
/// null: alone. The stats' mean step time is over every slot's valid samples.
[[nodiscard]] PpoStepStats shared_update(TrainedPolicy& trained, core::Rng& rng,
                                         const PpoOptions& options,
                                         const std::vector<PpoTask*>& slots, LearnerGroup* group);

}  // namespace gopt::agents::go
