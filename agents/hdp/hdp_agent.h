// The HDP agent: Hierarchical Device Placement (Mirhoseini et al., ICLR 2018) trained with
// REINFORCE on the simulator. Defaults follow the paper: grouper hidden size 64, groups =
// min(256, 20 x devices), reward -sqrt(step time), invalid or out-of-memory placements
// scored as a 100 s step (reward -10), an exponential-moving-average baseline (decay 0.9),
// Adam with exponential learning-rate decay, gradient clipping at 1.0, and logit noise
// early in training. One deviation: the learning rate defaults to 0.01, not the paper's
// 0.1. With Adam, 0.1 saturated the softmaxes within ten updates and collapsed every
// run we tried onto a single device (tests/agents/hdp_test.cpp has the problem);
// `learning_rate: 0.1` restores the paper's value.
#pragma once

#include <cstdint>

#include "agents/registry.h"

namespace gopt::agents::hdp {

/// Every HDP option, with its default. The registry's option list is generated from it.
struct HdpOptions {
  std::int64_t groups = 0;  ///< 0: min(256, 20 x devices), as the paper
  std::int64_t grouper_hidden = 64;
  std::int64_t placer_hidden = 128;
  std::int64_t device_embedding = 32;
  std::int64_t samples_per_step = 4;   ///< placements sampled per policy update
  double learning_rate = 0.01;         ///< paper: 0.1 (see above)
  double lr_decay = 0.96;              ///< multiplied into the learning rate ...
  std::int64_t lr_decay_steps = 50;    ///< ... every this many updates
  double grad_clip = 1.0;              ///< max global gradient norm
  double baseline_decay = 0.9;         ///< EMA of the reward
  double invalid_step_time_s = 100.0;  ///< step time charged to OOM placements
  double logit_noise = 0.5;            ///< std of Gaussian noise added to logits at step 0 ...
  std::int64_t noise_steps = 100;      ///< ... decaying linearly to 0 over this many updates
  std::uint64_t seed = 0;              ///< mixed with the problem seed
};

/// Registers `hdp`.
void register_hdp(AgentRegistry& registry);

}  // namespace gopt::agents::hdp
