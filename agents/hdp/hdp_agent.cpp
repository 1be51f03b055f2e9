#include "agents/hdp/hdp_agent.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <sstream>

#include "agents/baselines/list_scheduling.h"
#include "agents/hdp/hdp_model.h"
#include "agents/learner_group.h"
#include "agents/option_fields.h"
#include "agents/placement_utils.h"
#include "agents/tensor_memory.h"
#include "agents/torch_utils.h"
#include "core/errors.h"
#include "core/op_kind.h"
#include "core/rng.h"

namespace gopt::agents::hdp {
namespace {

constexpr std::int64_t kOpFeatures = core::kNumOpKinds + 6;
// Layer one-hot columns with layer_feature_weight: layers 0 .. kLayerBuckets - 2 (deeper
// layers share the last but one), and one column for ops without a layer.
constexpr std::int64_t kLayerBuckets = 17;

// The layer column of op v (kLayerBuckets - 1: no layer).
std::int64_t layer_bucket(const core::CompiledGraph& g, NodeId v) {
  const std::int32_t layer = g.layer()[static_cast<std::size_t>(v)];
  if (layer < 0) return kLayerBuckets - 1;
  return std::min<std::int64_t>(layer, kLayerBuckets - 2);
}

// Per-op features for the grouper: op kind one-hot, and standardised log sizes (FLOPs,
// output bytes, parameter bytes), log degrees and topological position; with a
// `layer_weight` above 0, the op's layer one-hot times it after them.
torch::Tensor op_features(const core::CompiledGraph& g, double layer_weight) {
  const auto n = static_cast<std::int64_t>(g.num_nodes());
  auto features = torch::zeros({n, kOpFeatures + (layer_weight > 0 ? kLayerBuckets : 0)});
  auto f = features.accessor<float, 2>();
  const double rank_scale = n > 1 ? 1.0 / static_cast<double>(n - 1) : 0.0;
  for (std::int64_t v = 0; v < n; ++v) {
    auto i = static_cast<std::size_t>(v);
    auto id = static_cast<NodeId>(v);
    f[v][static_cast<std::int64_t>(g.kind()[i])] = 1.0F;
    const std::int64_t base = core::kNumOpKinds;
    f[v][base + 0] = static_cast<float>(std::log1p(g.flops()[i]));
    f[v][base + 1] = static_cast<float>(std::log1p(static_cast<double>(g.output_bytes()[i])));
    f[v][base + 2] = static_cast<float>(std::log1p(static_cast<double>(g.param_bytes()[i])));
    f[v][base + 3] = static_cast<float>(std::log1p(g.in_degree(id)));
    f[v][base + 4] = static_cast<float>(std::log1p(g.out_degree(id)));
    f[v][base + 5] = static_cast<float>(g.topological_rank()[i] * rank_scale);
    if (layer_weight > 0)
      f[v][kOpFeatures + layer_bucket(g, id)] = static_cast<float>(layer_weight);
  }
  // Standardise the numeric columns per graph.
  auto numeric = features.slice(1, core::kNumOpKinds, kOpFeatures);
  auto mean = numeric.mean(0, true);
  auto std = numeric.std(0, true, true).clamp_min(1e-6);
  numeric.copy_((numeric - mean) / std);
  return features;
}

class HdpAgent final : public Agent {
 public:
  explicit HdpAgent(HdpOptions options) : options_(options) {}

  std::string name() const override { return "hdp"; }
  bool is_learner() const override { return true; }
  // Shared, every member draws every sample and simulates its share (evaluate_shared).
  void set_learner_group(LearnerGroup* group) override { group_ = group; }

  core::Decision propose(const Problem& problem) override {
    if (trained_on(problem) && best_.placement) return best_;
    setup(problem);
    const SubnormalsFlushed flushed;  // torch_utils.h
    torch::NoGradGuard no_grad;
    auto groups = grouper_->forward(features_).argmax(1);  // the scale does not move argmax
    auto group_input = group_features(groups).unsqueeze(1);
    auto out =
        placer_->forward(group_input, [](const torch::Tensor& logits) { return logits.argmax(1); });
    return decision_for(groups, out.devices[0], problem);
  }

  void train(Environment& env, const TrainBudget& budget, TrainingObserver* observer) override {
    const Problem& problem = env.problem();
    setup(problem);
    const SubnormalsFlushed flushed;  // torch_utils.h
    const TensorCacheScope cache;     // tensor_memory.h
    auto params = grouper_->parameters();
    for (auto& p : placer_->parameters()) params.push_back(p);
    torch::optim::Adam optimizer(params, torch::optim::AdamOptions(options_.learning_rate));
    const auto start = std::chrono::steady_clock::now();
    const auto k = options_.samples_per_step;
    // The reference starts the baseline at the failing signal's reward; else at the first
    // update's mean reward.
    bool have_baseline = options_.baseline_from_invalid;
    double baseline = -std::sqrt(options_.invalid_step_time_s);
    for (std::int64_t step = 0; step < budget.max_steps; ++step) {
      double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (env.samples() + k > budget.max_samples ||
          rank0_flag(group_, elapsed >= budget.max_seconds)) {
        break;
      }
      // Logit noise: std logit_noise decaying linearly to 0 over noise_steps, or with
      // noise_relative (the reference) logit_noise x the logits' root-mean-square until
      // noise_steps.
      const double progress =
          options_.noise_steps > 0
              ? static_cast<double>(step) / static_cast<double>(options_.noise_steps)
              : 1.0;
      const double noise = options_.noise_relative
                               ? (progress < 1 ? options_.logit_noise : 0.0)
                               : options_.logit_noise * std::max(0.0, 1.0 - progress);
      auto scaled_noise = [&](const torch::Tensor& logits) {
        const double scale =
            options_.noise_relative ? logits.detach().pow(2).mean().sqrt().item<double>() : 1.0;
        return noise * scale * torch::randn(logits.sizes(), gen_);
      };
      auto group_logits = options_.grouper_logit_scale * grouper_->forward(features_);
      if (noise > 0) group_logits = group_logits + scaled_noise(group_logits);
      auto group_log_probs = torch::log_softmax(group_logits, 1);
      auto group_probs = group_log_probs.detach().exp();

      std::vector<torch::Tensor> samples;
      std::vector<torch::Tensor> group_lp;
      std::vector<torch::Tensor> inputs;
      for (std::int64_t s = 0; s < k; ++s) {
        auto groups = sample_rows(group_probs, gen_);
        auto lp = group_log_probs.gather(1, groups.unsqueeze(1));
        group_lp.push_back(options_.grouping_mean_log_prob ? lp.mean() : lp.sum());
        inputs.push_back(group_features(groups));
        samples.push_back(groups);
      }
      auto out = placer_->forward(torch::stack(inputs, 1), [&](const torch::Tensor& logits) {
        auto noisy = noise > 0 ? logits.detach() + scaled_noise(logits) : logits.detach();
        return sample_rows(torch::softmax(noisy, 1), gen_);
      });

      std::vector<double> rewards(static_cast<std::size_t>(k));
      double step_time_sum = 0;
      const auto evaluations = evaluate_shared(
          env, k,
          [&](std::int64_t s) {
            return decision_for(samples[static_cast<std::size_t>(s)], out.devices[s], problem);
          },
          group_);
      for (std::int64_t s = 0; s < k; ++s) {
        const Evaluation& e = evaluations[static_cast<std::size_t>(s)];
        double t = e.oom ? options_.invalid_step_time_s : e.step_time_s;
        step_time_sum += t;
        rewards[static_cast<std::size_t>(s)] = -std::sqrt(t);
      }
      double mean_reward = 0;
      for (double r : rewards) mean_reward += r;
      mean_reward /= static_cast<double>(k);
      if (!have_baseline) {
        baseline = mean_reward;
        have_baseline = true;
      }
      std::vector<torch::Tensor> terms;
      for (std::int64_t s = 0; s < k; ++s) {
        double advantage = rewards[static_cast<std::size_t>(s)] - baseline;
        terms.push_back(-advantage * (group_lp[static_cast<std::size_t>(s)] + out.log_prob[s]));
      }
      auto loss = torch::stack(terms).mean();
      optimizer.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(params, options_.grad_clip);
      const std::int64_t decayed = std::max<std::int64_t>(0, step - options_.lr_decay_start);
      double lr = options_.learning_rate *
                  std::pow(options_.lr_decay,
                           static_cast<double>(decayed /
                                               std::max<std::int64_t>(1, options_.lr_decay_steps)));
      for (auto& group : optimizer.param_groups()) {
        static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
      }
      optimizer.step();
      baseline = options_.baseline_decay * baseline + (1.0 - options_.baseline_decay) * mean_reward;

      if (observer) {
        LearningCurvePoint point;
        point.step = step + 1;
        point.samples = env.samples();
        point.best_step_time_s = env.best_step_time_s();
        point.mean_step_time_s = step_time_sum / static_cast<double>(k);
        point.wall_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        // Shared, rank 0's observer stops every member; the others' are not heard.
        std::exception_ptr stopped;
        try {
          observer->on_training_step(point);
        } catch (...) {
          stopped = std::current_exception();
        }
        if (rank0_flag(group_, stopped != nullptr)) {
          if (stopped) std::rethrow_exception(stopped);
          throw core::Error("training stopped by rank 0 of the data-parallel learner group");
        }
      }
    }
    best_ = env.best_decision();
    trained_graph_ = &problem.graph;
  }

 private:
  // The best decision found in training answers only the problem it was trained on (same
  // graph object and device count; setup() forgets it when either changes).
  bool trained_on(const Problem& problem) const {
    return trained_graph_ == &problem.graph && devices_ == problem.num_devices();
  }

  // Builds features and (re)creates the networks for a new problem.
  void setup(const Problem& problem) {
    if (graph_ == &problem.graph && devices_ == problem.num_devices()) return;
    graph_ = &problem.graph;
    devices_ = problem.num_devices();
    rng_ = core::Rng(core::mix_seed(options_.seed, problem.seed));
    gen_ = make_generator(rng_);
    num_groups_ = options_.groups > 0
                      ? options_.groups
                      : std::min<std::int64_t>(256, 20 * static_cast<std::int64_t>(devices_));
    features_ = op_features(problem.graph, options_.layer_feature_weight);
    auto kinds = torch::empty({problem.num_nodes()}, torch::kLong);
    for (NodeId v = 0; v < problem.num_nodes(); ++v) {
      kinds[v] = static_cast<std::int64_t>(problem.graph.kind()[static_cast<std::size_t>(v)]);
    }
    // What a group embedding counts: op kinds and, with layer features, layers.
    counted_ = torch::one_hot(kinds, core::kNumOpKinds).to(torch::kFloat);
    if (options_.layer_feature_weight > 0) {
      counted_ = torch::cat(
          {counted_, features_.slice(1, kOpFeatures) / options_.layer_feature_weight}, 1);
    }
    auto sizes = torch::empty({problem.num_nodes()}, torch::kFloat);
    auto sa = sizes.accessor<float, 1>();
    for (NodeId v = 0; v < problem.num_nodes(); ++v) {
      sa[v] = static_cast<float>(problem.graph.output_bytes()[static_cast<std::size_t>(v)]);
    }
    output_bytes_ = sizes;
    const auto m = static_cast<std::int64_t>(problem.graph.num_edges());
    edge_src_ = torch::empty({m}, torch::kLong);
    edge_dst_ = torch::empty({m}, torch::kLong);
    for (core::EdgeIndex e = 0; e < problem.graph.num_edges(); ++e) {
      edge_src_[e] = static_cast<std::int64_t>(problem.graph.edge_source(e));
      edge_dst_[e] = static_cast<std::int64_t>(problem.graph.out_target(e));
    }
    grouper_ = Grouper(
        GrouperOptions(features_.size(1), num_groups_).with_hidden(options_.grouper_hidden));
    placer_ = Placer(PlacerOptions(counted_.size(1) + 2 + num_groups_, devices_)
                         .with_hidden(options_.placer_hidden)
                         .with_device_embedding(options_.device_embedding)
                         .with_tanh_constant(options_.tanh_constant));
    initialise(*grouper_, rng_);
    initialise(*placer_, rng_);
    trained_graph_ = nullptr;
    best_ = {};
  }

  // Group embeddings as in HDP: op kind counts (and, with layer features, layer counts),
  // log of summed output bytes, log group size, and the group's row of the group adjacency
  // matrix (normalised). [G, features]
  torch::Tensor group_features(const torch::Tensor& groups) {
    torch::NoGradGuard no_grad;
    const auto g = num_groups_;
    auto counts = torch::zeros({g, counted_.size(1)}).index_add_(0, groups, counted_);
    auto size = counts.slice(1, 0, core::kNumOpKinds).sum(1, true);
    auto bytes = torch::zeros({g}).index_add_(0, groups, output_bytes_).unsqueeze(1);
    auto adjacency = torch::zeros({g * g}).index_add_(
        0, groups.index_select(0, edge_src_) * g + groups.index_select(0, edge_dst_),
        torch::ones({edge_src_.size(0)}));
    adjacency = adjacency.view({g, g});
    adjacency = adjacency / (adjacency.sum(1, true) + 1.0);
    return torch::cat(
        {counts / (size + 1.0), torch::log1p(bytes) / 20.0, torch::log1p(size) / 10.0, adjacency},
        1);
  }

  core::Decision decision_for(const torch::Tensor& groups, const torch::Tensor& group_devices,
                              const Problem& problem) const {
    std::vector<DeviceId> placement(static_cast<std::size_t>(problem.num_nodes()));
    auto devices = group_devices.to(torch::kLong).contiguous();
    auto ga = groups.accessor<std::int64_t, 1>();
    const auto* da = devices.data_ptr<std::int64_t>();
    for (NodeId v = 0; v < problem.num_nodes(); ++v) {
      placement[static_cast<std::size_t>(v)] = static_cast<DeviceId>(da[ga[v]]);
    }
    apply_colocation(problem.graph, placement);
    core::Decision d;
    d.placement = std::move(placement);
    if (options_.critical_path_order) d.priority = critical_path_priorities(problem, *d.placement);
    return d;
  }

  HdpOptions options_;
  core::Rng rng_{0};
  at::Generator gen_ = at::detail::createCPUGenerator(0);
  const core::CompiledGraph* graph_ = nullptr;
  const core::CompiledGraph* trained_graph_ = nullptr;
  LearnerGroup* group_ = nullptr;  // the members training is shared with (null: alone)
  DeviceId devices_ = 0;
  std::int64_t num_groups_ = 0;
  torch::Tensor features_;
  torch::Tensor counted_;  ///< [N, C] what a group embedding counts per op (kinds, layers)
  torch::Tensor output_bytes_;
  torch::Tensor edge_src_;
  torch::Tensor edge_dst_;
  Grouper grouper_{nullptr};
  Placer placer_{nullptr};
  core::Decision best_;
};

}  // namespace

void register_hdp(AgentRegistry& registry) {
  using H = HdpOptions;
  const auto fields =
      OptionFields<H>()
          .integer("groups", &H::groups, "number of groups; 0: min(256, 20 x devices)", 0, 4096)
          .integer("grouper_hidden", &H::grouper_hidden, "grouper hidden units (paper: 64)", 1,
                   4096)
          .integer("placer_hidden", &H::placer_hidden, "placer LSTM size", 1, 4096)
          .integer("device_embedding", &H::device_embedding,
                   "size of the previous-device embedding", 1, 1024)
          .integer("samples_per_step", &H::samples_per_step, "placements sampled per update", 1,
                   4096)
          .number("learning_rate", &H::learning_rate, "Adam learning rate (reference: 0.1)", 0, 10)
          .number("lr_decay", &H::lr_decay, "learning-rate decay factor (reference: 0.95)", 0, 1)
          .integer("lr_decay_steps", &H::lr_decay_steps, "updates per decay (reference: 50)", 1,
                   1e9)
          .integer("lr_decay_start", &H::lr_decay_start,
                   "updates before the decay starts (reference: 400)", 0, 1e9)
          .number("grad_clip", &H::grad_clip, "max gradient norm (paper: 1.0)", 0, 1e6)
          .number("baseline_decay", &H::baseline_decay,
                  "EMA decay of the reward baseline (paper: 0.9)", 0, 1)
          .number("invalid_step_time_s", &H::invalid_step_time_s,
                  "step time charged to OOM placements, seconds (paper: 100)", 0, 1e9)
          .flag("baseline_from_invalid", &H::baseline_from_invalid,
                "start the reward baseline at the OOM reward (reference: true)")
          .number("tanh_constant", &H::tanh_constant,
                  "placer logits bounded to c x tanh(logits); 0: unbounded (reference: 1.0)", 0,
                  100)
          .number("logit_noise", &H::logit_noise,
                  "std of logit noise at the first update (reference: 0.5, relative)", 0, 100)
          .integer("noise_steps", &H::noise_steps,
                   "updates over which the noise decays to 0, or, relative, stays (reference: "
                   "750)",
                   0, 1e9)
          .flag("noise_relative", &H::noise_relative,
                "noise std relative to the logits' root-mean-square, constant until noise_steps "
                "(reference: true)")
          .flag("grouping_mean_log_prob", &H::grouping_mean_log_prob,
                "the grouping's log-probability is the mean over ops, not the sum (reference: "
                "sum), so it weighs like one placer decision")
          .number("layer_feature_weight", &H::layer_feature_weight,
                  "the grouper reads each op's layer as a one-hot of this weight, a group "
                  "embedding counts its ops' layers; 0: neither (reference: neither)",
                  0, 1000)
          .number("grouper_logit_scale", &H::grouper_logit_scale,
                  "the grouper's logits times this: sharper groups from the first update", 0, 1000)
          .choice("order", &H::critical_path_order,
                  "order of ready ops: executor (topological rank, TensorFlow's) or "
                  "critical_path (critical-path list scheduling on each placement it samples, "
                  "which its decision then carries)",
                  kOrderChoices)
          .seed(&H::seed);
  AgentInfo info = describe_agent(
      "hdp",
      "Hierarchical Device Placement (Mirhoseini et al., ICLR 2018): grouper + seq2seq placer, "
      "REINFORCE",
      true, fields, HdpOptions(),
      [](const HdpOptions& h) { return std::make_unique<HdpAgent>(h); });
  info.data_parallel = true;  // an update's simulations split among ranks (evaluate_shared)
  registry.add(std::move(info));
}

}  // namespace gopt::agents::hdp
