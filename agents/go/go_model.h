// The GO policy network (Zhou et al., "Transferable Graph Optimizers for ML Compilers",
// NeurIPS 2020), in LibTorch:
//
//   node features ─► GraphSAGE encoder (predecessor and successor mean aggregation with
//   index_add over edge index tensors; inductive) ─► graph embedding (mean and max pool)
//        │                                               │ feature modulation: per-layer
//        ▼                                               ▼ gates and shifts
//   segment-level recurrent attention over nodes in topological order (Transformer-XL
//   style: each segment attends to itself and to the gradient-stopped previous segment,
//   with a learned relative-position bias), optionally refined over a few passes that see
//   the previous pass's decisions ─► placement head (per-node softmax over devices,
//   masked to the cluster's devices) and value head (one scalar per graph).
//
// Everything is linear in the number of nodes: aggregation is sparse, attention is over
// windows of 2 x segment_length. Defaults and their reasoning: docs/agents.md "GO".
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <variant>
#include <vector>

#include "agents/go/go_features.h"
#include "core/options.h"

namespace gopt::agents::go {

/// Sizes of the policy. Defaults: docs/agents.md.
struct GoPolicyOptions {
  GOPT_OPTION(std::int64_t, hidden, 64)           ///< width of every hidden layer
  GOPT_OPTION(std::int64_t, kind_embedding, 16)   ///< op kind embedding size
  GOPT_OPTION(std::int64_t, sage_layers, 2)       ///< GraphSAGE hops
  GOPT_OPTION(std::int64_t, attention_layers, 2)  ///< recurrent attention layers
  GOPT_OPTION(std::int64_t, heads, 2)             ///< attention heads
  GOPT_OPTION(std::int64_t, segment_length, 64)   ///< nodes per attention segment
  GOPT_OPTION(std::int64_t, max_devices, 8)       ///< placement head width
  GOPT_OPTION(std::int64_t, refine_passes, 1)     ///< 1: decide once, no refinement
  GOPT_OPTION(bool, modulation, true)             ///< feature modulation on/off (ablation)
  GOPT_OPTION(double, head_init_scale, 3.0)       ///< placement head init x this (not saved)
  /// One placement distribution per decision unit (GraphTensors::unit): the placement
  /// logits are the mean of the unit's per-op logits, shared by its ops, so that a unit
  /// moves between devices whole (docs/agents.md "PPO", decision units). Off: per op (the paper).
  GOPT_OPTION(bool, unit_decisions, false)
  /// With per-op decisions: each op's placement logits are its unit's mean logits plus this
  /// times the op's own deviation from them (1: the op's own logits; 0: the unit's, still
  /// sampled per op). CoarseToFine ramps it from 0 to 1 after the unit phase; not saved.
  GOPT_OPTION(double, unit_blend, 1.0)
  /// With per-op decisions: each op's device distribution is a learned mixture of its
  /// unit's (the softmax of the unit's mean logits) and its own, weighted per op by a gate
  /// head (sigmoid of a linear map of the op's features, 1/2 at first), so that the policy
  /// learns which ops follow their unit and which decide alone. Off: the op's own (the paper).
  GOPT_OPTION(bool, unit_gate, false)
  // Tasks (issue #9). With task_layers off and only placement on, the network is the
  // placement policy above (go_one). With task_layers on, every decided task has its own
  // recurrent attention layer, chained in the order placement, scheduling, fusion with a
  // residual connection, and each layer's input carries the previous task's decision.
  GOPT_OPTION(bool, place, true)                 ///< decide placement (per-node device)
  GOPT_OPTION(bool, schedule, false)             ///< decide scheduling (per-node priority level)
  GOPT_OPTION(bool, fuse, false)                 ///< decide fusion (per-node fusion priority)
  GOPT_OPTION(bool, task_layers, false)          ///< one attention layer per task (multi-task GO)
  GOPT_OPTION(std::int64_t, priority_levels, 8)  ///< scheduling head width
  GOPT_OPTION(std::int64_t, fusion_levels, 4)    ///< fusion head width (level 0: never fuse)
};

/// Which agents take a GoPolicyOptions member as an option (go_registration.cpp).
enum class GoPolicyOption {
  kNone,    ///< none: the agent sets it (its tasks) or training does (unit_blend)
  kPolicy,  ///< every agent that builds a new policy: go_one, go_pretrain, the multi-task ones
  kTasks,   ///< the multi-task agents only
};

/// One GoPolicyOptions member as the registry and the checkpoint see it: its name, its
/// member pointer, whether it is an option and with what help and range, and whether a
/// checkpoint records it (go_checkpoint.h). Members are recorded unless marked not_saved();
/// recording a new one is a new minor version of the checkpoint, whose reader gives older
/// files the value their policy had (go_checkpoint.cpp, kVersion2MinorFields).
struct GoPolicyMember {
  using Integer = std::int64_t GoPolicyOptions::*;
  using Flag = bool GoPolicyOptions::*;
  using Number = double GoPolicyOptions::*;

  const char* name = "";                          ///< the option's and the checkpoint's key
  std::variant<Integer, Flag, Number> access;     ///< &GoPolicyOptions::hidden
  GoPolicyOption option = GoPolicyOption::kNone;  ///< the agents that take it as an option
  bool saved = true;                              ///< a checkpoint records it
  const char* help = "";                          ///< the option's help ("" when not an option)
  double min_value = 0, max_value = 0;            ///< an integer or number option's range

  static constexpr GoPolicyMember integer(const char* key, Integer accessor) {
    return {key, accessor};
  }
  static constexpr GoPolicyMember flag(const char* key, Flag accessor) { return {key, accessor}; }
  static constexpr GoPolicyMember number(const char* key, Number accessor) {
    return {key, accessor};
  }
  /// This member as an option of every agent that builds a policy, with `text` as its help
  /// and [min, max] as its range (integers and numbers).
  [[nodiscard]] constexpr GoPolicyMember as_option(const char* text, double min = 0,
                                                   double max = 0) const {
    GoPolicyMember m = *this;
    m.option = GoPolicyOption::kPolicy;
    m.help = text;
    m.min_value = min;
    m.max_value = max;
    return m;
  }
  /// The same as an option of the multi-task agents only.
  [[nodiscard]] constexpr GoPolicyMember as_task_option(const char* text, double min,
                                                        double max) const {
    GoPolicyMember m = as_option(text, min, max);
    m.option = GoPolicyOption::kTasks;
    return m;
  }
  /// This member, not recorded in checkpoints.
  [[nodiscard]] constexpr GoPolicyMember not_saved() const {
    GoPolicyMember m = *this;
    m.saved = false;
    return m;
  }
};

/// Every GoPolicyOptions member, in declaration order (which is the registry's order of the
/// policy options): the one description from which the registry's policy options
/// (`gopt agents`) and the checkpoint's options text are generated.
inline constexpr GoPolicyMember kGoPolicyMembers[] = {
    GoPolicyMember::integer("hidden", &GoPolicyOptions::hidden)
        .as_option("width of every hidden layer", 1, 4096),
    GoPolicyMember::integer("kind_embedding", &GoPolicyOptions::kind_embedding)
        .as_option("op kind embedding size", 1, 1024),
    GoPolicyMember::integer("sage_layers", &GoPolicyOptions::sage_layers)
        .as_option("GraphSAGE layers (hops over predecessors and successors)", 1, 16),
    GoPolicyMember::integer("attention_layers", &GoPolicyOptions::attention_layers)
        .as_option("segment-recurrent attention layers", 1, 16),
    GoPolicyMember::integer("heads", &GoPolicyOptions::heads).as_option("attention heads", 1, 64),
    GoPolicyMember::integer("segment_length", &GoPolicyOptions::segment_length)
        .as_option("nodes per attention segment (each also attends to the previous one)", 1, 4096),
    GoPolicyMember::integer("max_devices", &GoPolicyOptions::max_devices)
        .as_option("devices the placement head can address (smaller clusters are masked)", 1, 1024),
    GoPolicyMember::integer("refine_passes", &GoPolicyOptions::refine_passes)
        .as_option("decision passes, each seeing the previous pass's placement (1: none)", 1, 16),
    GoPolicyMember::flag("modulation", &GoPolicyOptions::modulation)
        .as_option("feature modulation by the graph embedding"),
    // Only the first initialisation depends on it: a read policy's weights are trained.
    GoPolicyMember::number("head_init_scale", &GoPolicyOptions::head_init_scale)
        .as_option("scale of the placement head's random initialisation (sharper first policy)", 0,
                   1000)
        .not_saved(),
    GoPolicyMember::flag("unit_decisions", &GoPolicyOptions::unit_decisions)
        .as_option("one placement decision per unit (a layer, a two-level name scope, a block) "
                   "instead of per op"),
    // Training's schedule of the moment (coarse to fine), not the network's.
    GoPolicyMember::number("unit_blend", &GoPolicyOptions::unit_blend).not_saved(),
    GoPolicyMember::flag("unit_gate", &GoPolicyOptions::unit_gate)
        .as_option("per-op decisions from a learned per-op mix of the unit's distribution and "
                   "the op's own"),
    // The tasks: each agent sets them (go_registration.cpp, the multi-task variants); the
    // multi-task agents take their head widths as options.
    GoPolicyMember::flag("place", &GoPolicyOptions::place),
    GoPolicyMember::flag("schedule", &GoPolicyOptions::schedule),
    GoPolicyMember::flag("fuse", &GoPolicyOptions::fuse),
    GoPolicyMember::flag("task_layers", &GoPolicyOptions::task_layers),
    GoPolicyMember::integer("priority_levels", &GoPolicyOptions::priority_levels)
        .as_task_option("scheduling: priority levels per op (higher runs first among ready ops)", 2,
                        1024),
    GoPolicyMember::integer("fusion_levels", &GoPolicyOptions::fusion_levels)
        .as_task_option(
            "fusion: fusion priority levels per op (0: never fuse; higher merges first)", 2, 1024),
};

/// One GraphSAGE layer: h' = LayerNorm(h + relu(W_s h + W_p mean_pred(h) + W_c mean_succ(h))).
class SageLayerImpl : public torch::nn::Module {
 public:
  explicit SageLayerImpl(std::int64_t hidden);
  torch::Tensor forward(const torch::Tensor& h, const GraphTensors& g);

 private:
  torch::nn::Linear self_{nullptr};
  torch::nn::Linear pred_{nullptr};
  torch::nn::Linear succ_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
};
TORCH_MODULE(SageLayer);

/// Node features -> node embeddings [N, hidden].
class GraphSageEncoderImpl : public torch::nn::Module {
 public:
  explicit GraphSageEncoderImpl(const GoPolicyOptions& options);
  torch::Tensor forward(const GraphTensors& g);

 private:
  torch::nn::Embedding kind_{nullptr};
  torch::nn::Linear input_{nullptr};
  torch::nn::ModuleList layers_;
};
TORCH_MODULE(GraphSageEncoder);

/// One Transformer-XL style layer over segments of nodes in topological order.
class SegmentAttentionLayerImpl : public torch::nn::Module {
 public:
  SegmentAttentionLayerImpl(std::int64_t hidden, std::int64_t heads, std::int64_t segment);
  /// x: [N, hidden] in topological order; the memory of segment s is segment s-1 of the
  /// same input, detached (no gradient flows into the memory).
  torch::Tensor forward(const torch::Tensor& x);

 private:
  std::int64_t hidden_, heads_, segment_;
  torch::nn::Linear q_{nullptr}, k_{nullptr}, v_{nullptr}, o_{nullptr};
  torch::nn::Linear ff1_{nullptr}, ff2_{nullptr};
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  torch::Tensor rel_bias_;  ///< [heads, 3L]: bias by offset (key index - query index)
};
TORCH_MODULE(SegmentAttentionLayer);

/// The tasks a GO policy decides, in the order the multi-task network chains them.
enum class GoTask { kPlacement = 0, kScheduling = 1, kFusion = 2 };
inline constexpr int kNumGoTasks = 3;

/// The enabled tasks of `options`, in chain order.
[[nodiscard]] std::vector<GoTask> enabled_tasks(const GoPolicyOptions& options);

/// Width of `task`'s head: devices, priority levels or fusion levels.
[[nodiscard]] std::int64_t task_width(const GoPolicyOptions& options, GoTask task);

/// What one forward pass gives.
struct PolicyOutput {
  torch::Tensor logits;           ///< [N, max_devices], topological order; masked devices -inf
                                  ///< (undefined when placement is not decided)
  torch::Tensor priority_logits;  ///< [N, priority_levels] (undefined: scheduling not decided)
  torch::Tensor fusion_logits;    ///< [N, fusion_levels] (undefined: fusion not decided)
  torch::Tensor unit_gate;        ///< [N] each op's weight on its unit's distribution
                                  ///< (undefined without GoPolicyOptions::unit_gate)
  torch::Tensor value;            ///< [] predicted reward of the graph
  torch::Tensor embeddings;       ///< [N, hidden] encoder output (for tests)

  /// The logits of `task` (undefined when the policy does not decide it).
  [[nodiscard]] const torch::Tensor& of(GoTask task) const;
};

class GoPolicyImpl : public torch::nn::Module {
 public:
  explicit GoPolicyImpl(const GoPolicyOptions& options);
  /// Runs the policy on `g` for a cluster of `devices` (<= max_devices). The outputs are on
  /// the CPU wherever the network runs (device()).
  PolicyOutput forward(const GraphTensors& g, std::int64_t devices);
  /// Where the network's parameters are (GoOptions::device; the CPU unless moved).
  [[nodiscard]] torch::Device device() const;
  /// Zeroes the modulation (identity gates at first) and the unit gate (an even mix), and
  /// scales the placement head by head_init_scale; called once after initialisation.
  void reset_heads();
  /// Zeroes the head of `task` (weights and bias), so that its logits start at zero and an
  /// additive prior alone sets the untrained distribution (the multi-task agents' priors).
  void zero_head(GoTask task);

  GoPolicyOptions options;

 private:
  /// forward() with `g` and every output on the network's device.
  PolicyOutput forward_on(const GraphTensors& g, std::int64_t devices);
  torch::Tensor attend(torch::Tensor x, const torch::Tensor& graph_embedding);
  /// The placement head's logits plus the graph's placement prior, masked to the cluster;
  /// sets `out.unit_gate` when the gate mixes them.
  torch::Tensor placement_logits(const torch::Tensor& x, const torch::Tensor& masked,
                                 const GraphTensors& g, PolicyOutput& out);
  /// The task layers and heads (task_layers); returns the last task layer's output.
  torch::Tensor forward_tasks(const torch::Tensor& shared, const torch::Tensor& masked,
                              const GraphTensors& g, PolicyOutput& out);

  GraphSageEncoder encoder_{nullptr};
  torch::nn::ModuleList attention_;
  torch::nn::Linear modulation_{nullptr};  ///< graph embedding -> (gate, shift) per layer
  torch::nn::Embedding previous_device_{nullptr};
  torch::nn::Linear placement_{nullptr};
  torch::nn::Linear unit_gate_{nullptr};  ///< features -> follow-my-unit logit (unit_gate)
  // Multi-task parts (task_layers): per task an attention layer, a head (placement_ for
  // placement) and an embedding of its decision distribution for the next task's input.
  torch::nn::ModuleList task_attention_;
  torch::nn::Linear priority_{nullptr};
  torch::nn::Linear fusion_{nullptr};
  torch::nn::ModuleList decision_embedding_;
  torch::nn::Linear value_hidden_{nullptr};
  torch::nn::Linear value_out_{nullptr};
};
TORCH_MODULE(GoPolicy);

}  // namespace gopt::agents::go
