// GO's agents in the registry: go_one, go_pretrain, go_finetune, go_zero_shot and the
// multi-task variants, with their options (names, defaults, ranges, help) and the readers
// that turn checked AgentOptions into GoOptions.
#include <sstream>
#include <string>
#include <vector>

#include "agents/go/go_agent.h"
#include "agents/registry.h"
#include "core/errors.h"

namespace gopt::agents::go {
namespace {

std::string text_of(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::vector<OptionSpec> policy_specs() {
  const GoPolicyOptions d;
  return {
      {"hidden", OptionType::kInt, std::to_string(d.hidden()), "width of every hidden layer", 1,
       4096},
      {"kind_embedding", OptionType::kInt, std::to_string(d.kind_embedding()),
       "op kind embedding size", 1, 1024},
      {"sage_layers", OptionType::kInt, std::to_string(d.sage_layers()),
       "GraphSAGE layers (hops over predecessors and successors)", 1, 16},
      {"attention_layers", OptionType::kInt, std::to_string(d.attention_layers()),
       "segment-recurrent attention layers", 1, 16},
      {"heads", OptionType::kInt, std::to_string(d.heads()), "attention heads", 1, 64},
      {"segment_length", OptionType::kInt, std::to_string(d.segment_length()),
       "nodes per attention segment (each also attends to the previous one)", 1, 4096},
      {"max_devices", OptionType::kInt, std::to_string(d.max_devices()),
       "devices the placement head can address (smaller clusters are masked)", 1, 1024},
      {"refine_passes", OptionType::kInt, std::to_string(d.refine_passes()),
       "decision passes, each seeing the previous pass's placement (1: none)", 1, 16},
      {"modulation", OptionType::kBool, d.modulation() ? "true" : "false",
       "feature modulation by the graph embedding"},
      {"head_init_scale", OptionType::kDouble, text_of(d.head_init_scale()),
       "scale of the placement head's random initialisation (sharper first policy)", 0, 1000},
      {"unit_decisions", OptionType::kBool, d.unit_decisions() ? "true" : "false",
       "one placement decision per unit (a layer, a two-level name scope, a block) instead of "
       "per op"},
  };
}

std::vector<OptionSpec> ppo_specs(double learning_rate = PpoOptions().learning_rate,
                                  double imitation_coef = PpoOptions().imitation_coef) {
  PpoOptions d;
  d.learning_rate = learning_rate;
  d.imitation_coef = imitation_coef;
  return {
      {"samples_per_step", OptionType::kInt, std::to_string(d.samples_per_step),
       "placements sampled per update", 1, 4096},
      {"ppo_epochs", OptionType::kInt, std::to_string(d.epochs),
       "optimisation passes over each batch of samples", 1, 100},
      {"learning_rate", OptionType::kDouble, text_of(d.learning_rate), "Adam learning rate", 0, 10},
      {"clip", OptionType::kDouble, text_of(d.clip), "PPO ratio clip range", 0, 10},
      {"value_coef", OptionType::kDouble, text_of(d.value_coef), "weight of the value loss", 0,
       1000},
      {"entropy_coef", OptionType::kDouble, text_of(d.entropy_coef), "weight of the entropy bonus",
       0, 1000},
      {"grad_clip", OptionType::kDouble, text_of(d.grad_clip), "max global gradient norm", 0, 1e6},
      {"oom_reward", OptionType::kDouble, text_of(d.oom_reward),
       "reward of an out-of-memory placement (valid ones: -sqrt(step time / reference))", -1e6,
       1e6},
      {"evaluate_greedy", OptionType::kBool, d.evaluate_greedy ? "true" : "false",
       "also simulate the greedy placement every update"},
      {"imitation_coef", OptionType::kDouble, text_of(d.imitation_coef),
       "weight of the log-likelihood of the best decision found so far (self-imitation; 0: off)", 0,
       1000},
      {"imitation_cap", OptionType::kDouble, text_of(d.imitation_cap),
       "self-imitation stops raising an op's probability of its best action at this value", 0, 1},
      {"exploration_block", OptionType::kInt, std::to_string(d.exploration_block),
       "consecutive topological positions sharing exploration noise (1: independent)", 1, 1e6},
      {"layer_exploration", OptionType::kBool, d.layer_exploration ? "true" : "false",
       "every other sample shares exploration noise per layer attribute"},
      {"scope_exploration", OptionType::kBool, d.scope_exploration ? "true" : "false",
       "layer-shared samples share noise per (top-level name scope, layer) instead"},
      {"unit_phase", OptionType::kInt, "0",
       "coarse to fine: updates that decide per decision unit before deciding per op", 0,
       1000000000},
      {"unit_samples", OptionType::kInt, std::to_string(d.unit_samples),
       "with per-op decisions: samples per update that place whole decision units", 0, 4096},
      {"seed", OptionType::kInt, "0", "mixed with the experiment seed", kMinSeedOption,
       kMaxSeedOption},
  };
}

void read_policy(const AgentOptions& o, GoPolicyOptions& p) {
  p.hidden(o.get_int("hidden"))
      .kind_embedding(o.get_int("kind_embedding"))
      .sage_layers(o.get_int("sage_layers"))
      .attention_layers(o.get_int("attention_layers"))
      .heads(o.get_int("heads"))
      .segment_length(o.get_int("segment_length"))
      .max_devices(o.get_int("max_devices"))
      .refine_passes(std::max<std::int64_t>(1, o.get_int("refine_passes")))
      .modulation(o.get_bool("modulation"))
      .head_init_scale(o.get_double("head_init_scale"))
      .unit_decisions(o.get_bool("unit_decisions"));
}

void read_ppo(const AgentOptions& o, GoOptions& g);

// Checks between options that the specs' ranges cannot express; run when a config loads
// (AgentInfo::check_options), before any job starts.
void check_policy(const AgentOptions& o) {
  if (o.get_int("hidden") % o.get_int("heads") != 0) {
    o.reject("heads", "expected a divisor of hidden (" + std::to_string(o.get_int("hidden")) + ")");
  }
}
void check_ppo(const AgentOptions& o) {
  if (!(o.get_double("imitation_cap") > 0)) {
    o.reject("imitation_cap", "expected a probability in (0, 1]");
  }
}
void check_policy_ppo(const AgentOptions& o) {
  check_policy(o);
  check_ppo(o);
  if (o.get_int("unit_phase") > 0 && o.get_bool("unit_decisions")) {
    o.reject("unit_phase", "with unit_decisions every update decides per unit already");
  }
  if (o.get_int("unit_samples") > 0 && o.get_bool("unit_decisions")) {
    o.reject("unit_samples", "with unit_decisions every sample places whole units already");
  }
}

std::vector<OptionSpec> task_specs() {
  const GoPolicyOptions d;
  return {
      {"priority_levels", OptionType::kInt, std::to_string(d.priority_levels()),
       "scheduling: priority levels per op (higher runs first among ready ops)", 1, 1024},
      {"fusion_levels", OptionType::kInt, std::to_string(d.fusion_levels()),
       "fusion: fusion priority levels per op (0: never fuse; higher merges first)", 1, 1024},
      {"default_placement", OptionType::kString, "human_expert",
       "placement when the agent does not decide it, as tf_default: human_expert or "
       "single_device"},
      {"placement_prior", OptionType::kDouble, "0",
       "placement variants: logit bonus for each op's default_placement device (0: start "
       "from random placements; 4: start near the default)",
       -100, 100},
      {"priority_prior", OptionType::kDouble, "0",
       "scheduling variants: logit bonus for one middle priority level for every op, the "
       "FIFO schedule (0: start from random priorities)",
       -100, 100},
      {"fusion_prior", OptionType::kDouble, "0",
       "fusion variants: logit bonus for the top fusion level on the ops XLA-style fusion "
       "fuses and level 0 on the others (0: start from random fusion priorities)",
       -100, 100},
  };
}

// A multi-task GO agent deciding `place`, `schedule` and `fuse`; the other tasks keep
// TensorFlow's default (tf_default_base).
GoOptions read_multitask(const AgentOptions& o, const std::string& name, bool place, bool schedule,
                         bool fuse) {
  GoOptions g;
  g.mode = GoMode::kOne;
  g.name = name;
  read_policy(o, g.policy);
  read_ppo(o, g);
  g.policy.place(place).schedule(schedule).fuse(fuse).task_layers(true);
  const auto priority_levels = o.get_int("priority_levels");
  const auto fusion_levels = o.get_int("fusion_levels");
  if (priority_levels < 2 || priority_levels > 1 << 20) {
    throw core::InputError(
        "", "agents." + name + ".priority_levels",
        "expected 2 to 1048576 levels, found " + std::to_string(priority_levels));
  }
  if (fusion_levels < 2 || fusion_levels > 1 << 20) {
    throw core::InputError("", "agents." + name + ".fusion_levels",
                           "expected 2 to 1048576 levels, found " + std::to_string(fusion_levels));
  }
  g.policy.priority_levels(priority_levels).fusion_levels(fusion_levels);
  const std::string& placement = o.get_string("default_placement");
  if (placement != "human_expert" && placement != "single_device") {
    throw core::InputError("", "agents." + name + ".default_placement",
                           "expected human_expert or single_device, found '" + placement + "'");
  }
  const bool single_device = placement == "single_device";
  auto prior = [&](const char* key) {
    const double value = o.get_double(key);
    if (!(value >= 0) || !std::isfinite(value)) {
      throw core::InputError("", "agents." + name + "." + key,
                             "expected a number >= 0, found " + text_of(value));
    }
    return value;
  };
  g.placement_prior = prior("placement_prior");
  g.priority_prior = prior("priority_prior");
  g.fusion_prior = prior("fusion_prior");
  g.base = [single_device](const Problem& problem) {
    return tf_default_base(problem, single_device);
  };
  return g;
}

void read_ppo(const AgentOptions& o, GoOptions& g) {
  g.ppo.samples_per_step = std::max<std::int64_t>(1, o.get_int("samples_per_step"));
  g.ppo.epochs = std::max<std::int64_t>(1, o.get_int("ppo_epochs"));
  g.ppo.learning_rate = o.get_double("learning_rate");
  g.ppo.clip = o.get_double("clip");
  g.ppo.value_coef = o.get_double("value_coef");
  g.ppo.entropy_coef = o.get_double("entropy_coef");
  g.ppo.grad_clip = o.get_double("grad_clip");
  g.ppo.oom_reward = o.get_double("oom_reward");
  g.ppo.evaluate_greedy = o.get_bool("evaluate_greedy");
  g.ppo.imitation_coef = o.get_double("imitation_coef");
  g.ppo.imitation_cap = o.get_double("imitation_cap");
  if (!(g.ppo.imitation_cap > 0 && g.ppo.imitation_cap <= 1)) {
    o.reject("imitation_cap", "expected a probability in (0, 1]");
  }
  g.ppo.exploration_block = std::max<std::int64_t>(1, o.get_int("exploration_block"));
  g.ppo.layer_exploration = o.get_bool("layer_exploration");
  g.ppo.scope_exploration = o.get_bool("scope_exploration");
  g.ppo.unit_samples = o.get_int("unit_samples");
  g.unit_phase = o.get_int("unit_phase");
  g.seed = static_cast<std::uint64_t>(o.get_int("seed"));
}

template <typename... Lists>
std::vector<OptionSpec> concat(Lists... lists) {
  std::vector<OptionSpec> all;
  (all.insert(all.end(), lists.begin(), lists.end()), ...);
  return all;
}

}  // namespace

void register_go(AgentRegistry& registry) {
  const GoOptions d;
  const std::vector<OptionSpec> checkpoint_out = {
      {"checkpoint", OptionType::kString, "",
       "checkpoint file to write after pretraining (gopt run: next to the results file)"},
      {"graphs_per_batch", OptionType::kInt, std::to_string(d.graphs_per_batch),
       "graphs trained together, round robin (0: all)", 0, 1e6},
      {"switch_steps", OptionType::kInt, std::to_string(d.switch_steps),
       "updates on one batch of graphs before the next (paper: 1000)", 1, 1e9},
      {"validate_every", OptionType::kInt, std::to_string(d.validate_every),
       "with validation workloads (pretrain_validation: true): updates between two checks of "
       "the zero-shot placements on them; the checkpoint keeps the best-checked policy",
       1, 1e9},
  };
  const std::vector<OptionSpec> checkpoint_in = {
      {"checkpoint", OptionType::kString, "",
       "pretrained checkpoint to load (gopt run: the experiment's go_pretrain checkpoint)"},
  };
  const std::vector<OptionSpec> finetune = {
      {"finetune_steps", OptionType::kInt, std::to_string(d.finetune_steps),
       "at most this many fine-tuning updates, whatever the budget (paper: under 50)", 0, 1e9},
  };

  const std::vector<OptionSpec> oversize = {
      {"oversize_learning_rate", OptionType::kDouble, text_of(kSearchLearningRate),
       "Adam learning rate on a graph that runs out of memory on one device (0: learning_rate "
       "everywhere)",
       0, 10},
  };

  registry.add(
      {"go_one",
       "GO (Zhou et al., NeurIPS 2020): GraphSAGE + segment-recurrent attention + "
       "feature modulation, PPO, trained from scratch on one graph",
       true,
       concat(policy_specs(), ppo_specs(PpoOptions().learning_rate, kGoOneImitation), oversize),
       [](const AgentOptions& o) {
         GoOptions g;
         g.mode = GoMode::kOne;
         read_policy(o, g.policy);
         read_ppo(o, g);
         g.oversize_learning_rate = o.get_double("oversize_learning_rate");
         if (!(g.oversize_learning_rate >= 0)) {
           o.reject("oversize_learning_rate", "expected 0 (off) or a positive rate");
         }
         return make_go_agent(g);
       },
       check_policy_ppo});
  registry.add({"go_pretrain",
                "GO pretrained on a set of graphs (the experiment's training graphs), writes "
                "a checkpoint",
                true, concat(policy_specs(), ppo_specs(), checkpoint_out),
                [](const AgentOptions& o) {
                  GoOptions g;
                  g.mode = GoMode::kPretrain;
                  read_policy(o, g.policy);
                  read_ppo(o, g);
                  g.checkpoint = o.get_string("checkpoint");
                  g.graphs_per_batch = o.get_int("graphs_per_batch");
                  g.switch_steps = std::max<std::int64_t>(1, o.get_int("switch_steps"));
                  g.validate_every = o.get_int("validate_every");
                  if (g.validate_every < 1) {
                    o.reject("validate_every", "expected a positive number of updates");
                  }
                  return make_go_agent(g);
                },
                check_policy_ppo});
  registry.add({"go_finetune",
                "GO pretrained (checkpoint), fine-tuned with PPO on a held-out graph", true,
                concat(ppo_specs(kSearchLearningRate), checkpoint_in, finetune),
                [](const AgentOptions& o) {
                  GoOptions g;
                  g.mode = GoMode::kFinetune;
                  read_ppo(o, g);
                  g.checkpoint = o.get_string("checkpoint");
                  g.finetune_steps = std::max<std::int64_t>(0, o.get_int("finetune_steps"));
                  return make_go_agent(g);
                },
                check_ppo});
  const std::vector<OptionSpec> zero_shot = {
      {"memory_repairs", OptionType::kInt, std::to_string(d.memory_repairs),
       "when the greedy placement runs out of memory, at most this many re-placements that "
       "move the ops the policy is least sure of off the full devices (0: greedy only)",
       0, 1e6},
  };
  registry.add({"go_zero_shot",
                "GO pretrained (checkpoint), applied greedily to a held-out graph with no "
                "training (moved into memory if it does not fit)",
                false, concat(checkpoint_in, zero_shot), [](const AgentOptions& o) {
                  GoOptions g;
                  g.mode = GoMode::kZeroShot;
                  g.checkpoint = o.get_string("checkpoint");
                  g.memory_repairs = std::max<std::int64_t>(0, o.get_int("memory_repairs"));
                  return make_go_agent(g);
                }});

  // Transfer learning as the runner plans it (experiments/plan.h): pretraining writes a
  // policy trained on the training workloads, fine-tuning and zero-shot read it on the
  // held-out ones.
  const ArtifactSpec policy{"pretrained_policy", "checkpoint", ".ckpt"};
  registry.declare_artifacts("go_pretrain",
                             AgentArtifacts().produce(policy).on(WorkloadScope::kTrainingSet));
  registry.declare_artifacts("go_finetune",
                             AgentArtifacts().consume(policy).on(WorkloadScope::kHeldOut));
  registry.declare_artifacts("go_zero_shot",
                             AgentArtifacts().consume(policy).on(WorkloadScope::kHeldOut));

  struct Variant {
    const char* name;
    bool place, schedule, fuse;
    const char* what;
  };
  static const Variant kVariants[] = {
      {"go_placement", true, false, false, "placement alone"},
      {"go_scheduling", false, true, false, "op scheduling alone"},
      {"go_fusion", false, false, true, "op fusion alone"},
      {"go_placement_scheduling", true, true, false, "placement and scheduling jointly"},
      {"go_placement_fusion", true, false, true, "placement and fusion jointly"},
      {"go_scheduling_fusion", false, true, true, "scheduling and fusion jointly"},
      {"go_multitask", true, true, true, "placement, scheduling and fusion jointly"},
  };
  for (const auto& v : kVariants) {
    registry.add({v.name,
                  std::string("multi-task GO (one recurrent attention layer per task) for ") +
                      v.what +
                      "; tasks it does not decide keep TensorFlow's default (expert "
                      "placement, FIFO scheduling, XLA-style fusion)",
                  true, concat(policy_specs(), ppo_specs(kSearchLearningRate), task_specs()),
                  [v](const AgentOptions& o) {
                    return make_go_agent(read_multitask(o, v.name, v.place, v.schedule, v.fuse));
                  },
                  check_policy_ppo});
  }
}

}  // namespace gopt::agents::go
