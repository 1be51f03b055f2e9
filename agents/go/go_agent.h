// The GO agents (Zhou et al., NeurIPS 2020), all one policy (go_model.h) trained with PPO
// (go_ppo.h) on the simulator:
//   go_one        trained from scratch on one graph;
//   go_pretrain   trained on a set of graphs (the runner's training graphs), switching to
//                 the next batch of graphs every `switch_steps` updates, and writing a
//                 checkpoint;
//   go_finetune   loads a checkpoint and fine-tunes on a held-out graph (at most
//                 `finetune_steps` updates, 50 by default as in the paper);
//   go_zero_shot  loads a checkpoint and places a held-out graph greedily, no training.
// Options, defaults and their reasoning: docs/agents.md "GO".
#pragma once

#include <cstdint>
#include <string>

#include "agents/go/go_model.h"
#include "agents/go/go_ppo.h"
#include "agents/registry.h"

namespace gopt::agents::go {

enum class GoMode { kOne, kPretrain, kFinetune, kZeroShot };

struct GoOptions {
  GoMode mode = GoMode::kOne;
  GoPolicyOptions policy;
  PpoOptions ppo;
  std::int64_t graphs_per_batch = 0;  ///< pretraining: graphs trained together (0: all)
  std::int64_t switch_steps = 1000;   ///< pretraining: updates before the next batch (paper)
  std::int64_t finetune_steps = 50;   ///< fine-tuning: at most this many updates (paper: <50)
  std::string checkpoint;             ///< written (pretrain) or read (finetune, zero-shot)
  std::uint64_t seed = 0;             ///< mixed with the problem seed
};

/// Checkpoint file format identifier and version, stored in every checkpoint.
inline constexpr const char* kCheckpointFormat = "gopt-go-checkpoint";
inline constexpr std::int64_t kCheckpointVersion = 1;

/// The policy options stored in a checkpoint, as "key=value" text (for error messages and
/// the results file).
[[nodiscard]] std::string policy_options_text(const GoPolicyOptions& options);

/// Registers go_one, go_pretrain, go_finetune and go_zero_shot.
void register_go(AgentRegistry& registry);

/// Creates a GO agent directly (tests).
[[nodiscard]] std::unique_ptr<Agent> make_go_agent(const GoOptions& options);

}  // namespace gopt::agents::go
