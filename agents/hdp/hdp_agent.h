// The HDP agent: Hierarchical Device Placement (Mirhoseini et al., ICLR 2018) trained with
// REINFORCE on the simulator. Defaults follow the paper: grouper hidden size 64, groups =
// min(256, 20 x devices), reward -sqrt(step time), invalid or out-of-memory placements
// scored as a 100 s step (reward -10), an exponential-moving-average baseline (decay 0.9),
// Adam with exponential learning-rate decay, gradient clipping at 1.0, and logit noise
// early in training. Departures from the reference implementation (TensorFlow grappler's
// hierarchical_controller.py), each with an option restoring the reference value, are
// listed in docs/agents.md "hdp": the learning rate (0.01 and decay from the start, not
// 0.1 held for 400 updates: with Adam, 0.1 saturated the softmaxes within ten updates and
// collapsed every run we tried onto a single device, tests/agents/hdp/hdp_test.cpp), placer
// logits not bounded by tanh, noise that decays, and a baseline that starts at the first
// rewards instead of the OOM reward.
#pragma once

#include <cstdint>

#include "agents/registry.h"
#include "core/options.h"

namespace gopt::agents::hdp {

/// Every HDP option, with its default. The registry's option list is generated from it.
struct HdpOptions {
  GOPT_OPTION(std::int64_t, groups, 0)  ///< 0: min(256, 20 x devices), as the paper
  GOPT_OPTION(std::int64_t, grouper_hidden, 64)
  GOPT_OPTION(std::int64_t, placer_hidden, 128)
  GOPT_OPTION(std::int64_t, device_embedding, 32)
  GOPT_OPTION(std::int64_t, samples_per_step, 4)  ///< placements sampled per policy update
  GOPT_OPTION(double, learning_rate, 0.01)        ///< reference: 0.1 (see above)
  GOPT_OPTION(double, lr_decay, 0.96)  ///< multiplied into the learning rate (reference: 0.95)
  GOPT_OPTION(std::int64_t, lr_decay_steps, 50)    ///< ... every this many updates ...
  GOPT_OPTION(std::int64_t, lr_decay_start, 0)     ///< ... after this many (reference: 400)
  GOPT_OPTION(double, grad_clip, 1.0)              ///< max global gradient norm
  GOPT_OPTION(double, baseline_decay, 0.9)         ///< EMA of the reward
  GOPT_OPTION(double, invalid_step_time_s, 100.0)  ///< step time charged to OOM placements
  /// The reward baseline starts at the OOM reward (reference: start_with_failing_signal,
  /// true), so the first placements that fit get a large positive advantage; false: at the
  /// first update's mean reward.
  GOPT_OPTION(bool, baseline_from_invalid, false)
  /// Placer logits squashed to tanh_constant x tanh(logits) (reference: 1.0): a device's
  /// probability stays within a factor e^(2 c) of another's. 0: unbounded logits.
  GOPT_OPTION(double, tanh_constant, 0)
  GOPT_OPTION(double, logit_noise, 0.5)  ///< std of Gaussian logit noise at the first update ...
  GOPT_OPTION(std::int64_t, noise_steps,
              100)  ///< ... decaying linearly to 0 over this many updates
  /// The reference's noise instead: std logit_noise x the logits' root-mean-square,
  /// constant for noise_steps updates (reference: 750).
  GOPT_OPTION(bool, noise_relative, false)
  /// The grouping's log-probability in the REINFORCE loss: the mean over ops instead of the
  /// sum (reference: the sum, which grows with the graph and dominates the clipped
  /// gradient on large graphs).
  GOPT_OPTION(bool, grouping_mean_log_prob, false)
  /// Above 0, the grouper also reads each op's layer (the workload's `layer` metadata) as a
  /// one-hot of this weight and a group embedding counts its ops' layers (reference:
  /// neither), so that groups can follow layers; a weight well above the other (standardised)
  /// features makes the layer decide the grouping. 0: no layer features.
  GOPT_OPTION(double, layer_feature_weight, 0)
  /// The grouper's logits times this (1: as the network computes them).
  GOPT_OPTION(double, grouper_logit_scale, 1.0)
  /// Every placement runs in critical-path order (agents::critical_path_priorities), which
  /// its decisions carry: HDP for an executor that orders ready ops so (GO's `order`).
  GOPT_OPTION(bool, critical_path_order, false)
  GOPT_OPTION(std::uint64_t, seed, 0)  ///< mixed with the problem seed
};

/// Registers `hdp`.
void register_hdp(AgentRegistry& registry);

}  // namespace gopt::agents::hdp
