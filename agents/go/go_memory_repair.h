// Zero-shot's memory repair: a greedy GO placement that runs out of memory, moved into
// memory by handing the ops the policy is least sure of from the full devices to the device
// with the most room. Not learning: a few simulations of re-placements guided by the
// policy's log-probabilities (go_zero_shot, and pretraining's model selection, which scores
// the zero-shot placements of its validation graphs).
#pragma once

#include <cstdint>

#include "agents/environment.h"
#include "agents/go/go_decision.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"

namespace gopt::agents::go {

/// What memory_fitting_decision() did.
struct MemoryRepair {
  std::int64_t simulations = 0;  ///< decisions simulated, the greedy one included
  std::int64_t moved_ops = 0;    ///< ops whose device differs from the greedy placement
  bool fits = false;             ///< the returned decision fits in memory
};

/// The greedy decision of `policy` for `env`'s problem, moved into memory when it does not
/// fit. Ops move in the groups sampling moves together (the decision units with unit
/// decisions; else a layer attribute, else a block of `block` consecutive positions,
/// capped as in sampling, exploration_block_size). While the simulated
/// placement runs out of memory, each device over its capacity hands over the groups the
/// policy is least sure of there (smallest mean margin of log p(device) over the best device
/// with room) to the device with the most room, until its estimated peak is 10% under its
/// capacity (peak bytes per byte of op weight, parameter + output bytes, as on the full
/// device). At most `max_repairs` re-placements, each one simulation on `env` (a sample).
/// Returns the first decision that fits, or the greedy one when none did. Other tasks
/// (scheduling, fusion) keep their greedy actions.
[[nodiscard]] core::Decision memory_fitting_decision(GoPolicy& policy, const GraphTensors& tensors,
                                                     Environment& env, const DecisionBase& base,
                                                     std::int64_t max_repairs, std::int64_t block,
                                                     MemoryRepair* report = nullptr);

}  // namespace gopt::agents::go
