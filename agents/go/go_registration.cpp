// GO's agents in the registry: go_one, go_pretrain, go_finetune, go_zero_shot and the
// multi-task variants. Each is its GoOptions defaults (go_agent_defaults) and one
// description of the fields it takes (OptionFields), from which its option list (names,
// defaults, ranges, help) and its reader are generated.
#include "agents/go/go_registration.h"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "agents/go/go_agent.h"
#include "agents/option_fields.h"
#include "agents/registry.h"

namespace gopt::agents::go {
namespace {

using Fields = OptionFields<GoOptions>;

// A GoPolicyOptions member (&GoPolicyOptions::hidden) as a field of GoOptions.
template <typename T>
auto policy_field(T GoPolicyOptions::*member) {
  return [member](GoOptions& g) -> T& { return g.policy.*member; };
}

// A PpoOptions member as a field of GoOptions.
template <typename T>
auto ppo_field(T PpoOptions::*member) {
  return [member](GoOptions& g) -> T& { return g.ppo.*member; };
}

// The GoPolicyOptions members that are options of `agents` (kGoPolicyMembers), in its order.
Fields policy_member_options(GoPolicyOption agents) {
  Fields fields;
  for (const GoPolicyMember& m : kGoPolicyMembers) {
    if (m.option != agents) continue;
    std::visit(
        [&](auto accessor) {
          const auto access = policy_field(accessor);
          using T = std::remove_reference_t<decltype(access(std::declval<GoOptions&>()))>;
          if constexpr (std::is_same_v<T, bool>) {
            fields.flag(m.name, access, m.help);
          } else if constexpr (std::is_same_v<T, double>) {
            fields.number(m.name, access, m.help, m.min_value, m.max_value);
          } else {
            fields.integer(m.name, access, m.help, m.min_value, m.max_value);
          }
        },
        m.access);
  }
  return fields;
}

// The policy's options and their rules.
Fields policy_option_fields() {
  return policy_member_options(GoPolicyOption::kPolicy)
      .rule("unit_gate",
            [](const GoOptions& g) -> std::string {
              if (!g.policy.unit_gate || !g.policy.unit_decisions) return "";
              return "unit_decisions decides per unit only, with no per-op mix to gate";
            })
      .rule("heads",
            [](const GoOptions& g) -> std::string {
              if (g.policy.hidden % g.policy.heads == 0) return "";
              return "expected a divisor of hidden (" + std::to_string(g.policy.hidden) + ")";
            })
      .cluster_rule("max_devices", [](const GoOptions& g, std::int64_t devices) -> std::string {
        if (g.policy.max_devices >= devices) return "";
        return "expected at least the cluster's " + std::to_string(devices) + " devices";
      });
}

Fields ppo_fields() {
  return Fields()
      .integer("samples_per_step", ppo_field(&PpoOptions::samples_per_step),
               "placements sampled per update", 1, 4096)
      .integer("ppo_epochs", ppo_field(&PpoOptions::epochs),
               "optimisation passes over each batch of samples", 1, 100)
      .number("learning_rate", ppo_field(&PpoOptions::learning_rate), "Adam learning rate", 0, 10)
      .number("clip", ppo_field(&PpoOptions::clip), "PPO ratio clip range", 0, 10)
      .number("value_coef", ppo_field(&PpoOptions::value_coef), "weight of the value loss", 0, 1000)
      .number("entropy_coef", ppo_field(&PpoOptions::entropy_coef), "weight of the entropy bonus",
              0, 1000)
      .number("device_balance", ppo_field(&PpoOptions::device_balance),
              "weight of the device-balance penalty: KL(uniform || the placement distribution "
              "averaged over ops) times the ops (0: off)",
              0, 1000)
      .number("device_floor", ppo_field(&PpoOptions::device_floor),
              "with device_balance: penalise only devices whose mean placement probability is "
              "below this fraction of 1/devices (0: every device, the full KL)",
              0, 1)
      .number("grad_clip", ppo_field(&PpoOptions::grad_clip), "max global gradient norm", 0, 1e6)
      .number("oom_reward", ppo_field(&PpoOptions::oom_reward),
              "reward of an out-of-memory placement (valid ones: -sqrt(step time / reference))",
              -1e6, 1e6)
      .flag("evaluate_greedy", ppo_field(&PpoOptions::evaluate_greedy),
            "also simulate the greedy placement every update")
      .number("imitation_coef", ppo_field(&PpoOptions::imitation_coef),
              "weight of the log-likelihood of the best decision found so far (self-imitation; "
              "0: off)",
              0, 1000)
      .number("imitation_cap", ppo_field(&PpoOptions::imitation_cap),
              "self-imitation stops raising an op's probability of its best action at this value",
              0, 1)
      .integer("exploration_block", ppo_field(&PpoOptions::exploration_block),
               "consecutive topological positions sharing exploration noise (1: independent)", 1,
               1e6)
      .flag("layer_exploration", ppo_field(&PpoOptions::layer_exploration),
            "every other sample shares exploration noise per layer attribute")
      .flag("scope_exploration", ppo_field(&PpoOptions::scope_exploration),
            "layer-shared samples share noise per (top-level name scope, layer) instead")
      .integer("unit_phase", &GoOptions::unit_phase,
               "coarse to fine: updates that decide per decision unit before deciding per op", 0,
               1e9)
      .integer("unit_patience", &GoOptions::unit_patience,
               "coarse to fine: the unit phase ends early once its best step time has not "
               "improved for this many updates (0: it runs all unit_phase updates)",
               0, 1e9)
      .integer("unit_handover", &GoOptions::unit_handover,
               "coarse to fine: updates after unit_phase over which each op's placement logits "
               "move from its unit's mean to its own (0: at once)",
               0, 1e9)
      .choice("weight_gradient_units", &GoOptions::weight_gradient_units,
              "decision units: a layer's weight gradients form a unit of their own (off, "
              "always, or fewer_units_than_devices: on a graph with fewer units than devices)",
              std::vector<std::pair<std::string, WeightGradientUnits>>{
                  {"off", WeightGradientUnits::kOff},
                  {"always", WeightGradientUnits::kAlways},
                  {"fewer_units_than_devices", WeightGradientUnits::kFewerUnitsThanDevices}})
      .integer("unit_samples", ppo_field(&PpoOptions::unit_samples),
               "with per-op decisions: samples per update that place whole decision units "
               "(at most samples_per_step)",
               0, 4096)
      .seed(&GoOptions::seed)
      .rule("imitation_cap",
            [](const GoOptions& g) -> std::string {
              return g.ppo.imitation_cap > 0 ? "" : "expected a probability in (0, 1]";
            })
      .rule("device_floor",
            [](const GoOptions& g) -> std::string {
              return g.ppo.device_floor == 0 || g.ppo.device_balance > 0
                         ? ""
                         : "expected device_balance > 0 (the floor bounds its penalty)";
            })
      .rule("unit_handover",
            [](const GoOptions& g) -> std::string {
              return g.unit_handover == 0 || g.unit_phase > 0 ? "" : "expected unit_phase > 0";
            })
      .rule("unit_patience",
            [](const GoOptions& g) -> std::string {
              return g.unit_patience == 0 || g.unit_phase > 0 ? "" : "expected unit_phase > 0";
            })
      .rule("unit_samples", [](const GoOptions& g) -> std::string {
        if (g.ppo.unit_samples <= g.ppo.samples_per_step) return "";
        return "expected at most samples_per_step (" + std::to_string(g.ppo.samples_per_step) + ")";
      });
}

// Rules between the policy's and PPO's options, for agents that take both.
Fields policy_ppo_rules() {
  return Fields()
      .rule("unit_phase",
            [](const GoOptions& g) -> std::string {
              if (g.unit_phase == 0 || !g.policy.unit_decisions) return "";
              return "with unit_decisions every update decides per unit already";
            })
      .rule("unit_samples", [](const GoOptions& g) -> std::string {
        if (g.ppo.unit_samples == 0 || !g.policy.unit_decisions) return "";
        return "with unit_decisions every sample places whole units already";
      });
}

// Every GO agent runs a policy somewhere.
Fields device_field() {
  return Fields().choice(
      "device", &GoOptions::device,
      "where the policy network runs: auto (a GPU when LibTorch has CUDA and "
      "sees one, else the CPU), cpu or cuda",
      std::vector<std::pair<std::string, ComputeDevice>>{{"auto", ComputeDevice::kAuto},
                                                         {"cpu", ComputeDevice::kCpu},
                                                         {"cuda", ComputeDevice::kCuda}});
}

// The order of ready ops when the policy decides no priorities.
Fields order_field() {
  return Fields()
      .choice("order", &GoOptions::order,
              "order of ready ops when the agent decides no priorities: executor (topological "
              "rank, TensorFlow's and the paper's) or critical_path (critical-path list "
              "scheduling on each placement it samples, which its decisions then carry)",
              std::vector<std::pair<std::string, ExecutorOrder>>{
                  {"executor", ExecutorOrder::kExecutor},
                  {"critical_path", ExecutorOrder::kCriticalPath}})
      .rule("order", [](const GoOptions& g) -> std::string {
        if (g.order == ExecutorOrder::kExecutor || !g.policy.schedule) return "";
        return "this agent decides priorities itself (expected executor)";
      });
}

Fields trained_policy_fields() {
  return policy_option_fields()
      .append(ppo_fields())
      .append(policy_ppo_rules())
      .append(device_field())
      .append(order_field());
}

Fields pretrain_fields() {
  return Fields()
      .text("checkpoint", &GoOptions::checkpoint,
            "checkpoint file to write after pretraining (gopt run: next to the results file)")
      .integer("graphs_per_batch", &GoOptions::graphs_per_batch,
               "graphs trained together, round robin (0, or more than there are: all)", 0, 1e6)
      .integer("graphs_per_update", &GoOptions::graphs_per_update,
               "graphs of the batch each update trains on, its gradient their mean; data-parallel "
               "ranks (gopt run --data-parallel) split them among them (1: one graph per update)",
               1, 1e4)
      .integer("switch_steps", &GoOptions::switch_steps,
               "updates on one batch of graphs before the next (paper: 1000)", 1, 1e9)
      .integer("validate_every", &GoOptions::validate_every,
               "with validation workloads (pretrain_validation: true): updates between two "
               "checks of the zero-shot placements on them; the checkpoint keeps the "
               "best-checked policy",
               1, 1e9);
}

Fields checkpoint_in_field() {
  return Fields().text(
      "checkpoint", &GoOptions::checkpoint,
      "pretrained checkpoint to load (gopt run: the experiment's go_pretrain checkpoint)");
}

// The multi-task agents' tasks and their priors toward TensorFlow's default pipeline, whose
// decisions the tasks an agent does not decide keep (tf_default_base).
Fields task_fields() {
  OptionSpec base{"default_placement", OptionType::kString, "",
                  "placement when the agent does not decide it, as tf_default: human_expert or "
                  "single_device"};
  base.choices = {"human_expert", "single_device"};
  return policy_member_options(GoPolicyOption::kTasks)
      .custom(
          std::move(base), [](GoOptions&) { return std::string("human_expert"); },
          [](const AgentOptions& given, GoOptions& g) {
            const bool single_device = given.get_string("default_placement") == "single_device";
            g.base = [single_device](const Problem& problem) {
              return tf_default_base(problem, single_device);
            };
          })
      .number("placement_prior", &GoOptions::placement_prior,
              "placement variants: logit bonus for each op's default_placement device (0: start "
              "from random placements; 4: start near the default)",
              0, 100)
      .number("priority_prior", &GoOptions::priority_prior,
              "scheduling variants: logit bonus for one middle priority level for every op, the "
              "FIFO schedule (0: start from random priorities)",
              0, 100)
      .number("fusion_prior", &GoOptions::fusion_prior,
              "fusion variants: logit bonus for the top fusion level on the ops XLA-style fusion "
              "fuses and level 0 on the others (0: start from random fusion priorities)",
              0, 100);
}

// The agents that read a checkpoint place the graph greedily first (zero-shot, and
// fine-tuning's start), moving a placement that does not fit into memory.
Fields memory_repairs_field() {
  return Fields().integer(
      "memory_repairs", &GoOptions::memory_repairs,
      "when a greedy placement runs out of memory, at most this many re-placements that move "
      "the ops the policy is least sure of off the full devices (0: greedy only)",
      0, 1e6);
}

Fields granularity_field(std::string help) {
  return Fields().choice(
      "granularity", &GoOptions::granularity, std::move(help),
      std::vector<std::pair<std::string, Granularity>>{{"policy", Granularity::kPolicy},
                                                       {"unit", Granularity::kUnit},
                                                       {"best", Granularity::kBest}});
}

// One GO agent: its registry entry's text, the options it starts from and its fields.
struct GoAgentEntry {
  std::string name;
  std::string description;
  bool learner = true;
  GoOptions defaults;
  Fields fields;
};

// The agents that start from a trained or pretrained policy, or decide several tasks, search
// around a start for a short budget: the search learning rate, and no self-imitation.
GoOptions searching(GoMode mode) {
  GoOptions g;
  g.mode = mode;
  g.ppo.learning_rate = kSearchLearningRate;
  g.ppo.imitation_coef = 0;
  return g;
}

// The multi-task agents: one per combination of the tasks (placement, scheduling, fusion)
// that the policy decides.
std::vector<GoAgentEntry> multitask_agents() {
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
  std::vector<GoAgentEntry> agents;
  for (const auto& v : kVariants) {
    // Trained from scratch on one graph as go_one, at the search learning rate on every
    // graph (no oversize rate); the tasks not decided keep TensorFlow's default.
    GoOptions g = searching(GoMode::kOne);
    g.name = v.name;
    g.oversize_learning_rate = 0;
    g.policy.with_place(v.place).with_schedule(v.schedule).with_fuse(v.fuse).with_task_layers(true);
    agents.push_back({v.name,
                      std::string("multi-task GO (one recurrent attention layer per task) for ") +
                          v.what +
                          "; tasks it does not decide keep TensorFlow's default (expert "
                          "placement, FIFO scheduling, XLA-style fusion)",
                      true, g, trained_policy_fields().append(task_fields())});
  }
  return agents;
}

// Every GO agent, in the registry's order: go_one, the transfer-learning agents, then the
// multi-task ones.
std::vector<GoAgentEntry> go_agents() {
  std::vector<GoAgentEntry> agents;
  agents.push_back({"go_one",
                    "GO (Zhou et al., NeurIPS 2020): GraphSAGE + segment-recurrent attention + "
                    "feature modulation, PPO, trained from scratch on one graph",
                    true, GoOptions(),
                    trained_policy_fields().append(Fields().number(
                        "oversize_learning_rate", &GoOptions::oversize_learning_rate,
                        "Adam learning rate on a graph that runs out of memory on one device (0: "
                        "learning_rate everywhere)",
                        0, 10))});
  GoOptions pretrain;
  pretrain.mode = GoMode::kPretrain;
  pretrain.ppo.imitation_coef = 0;
  agents.push_back({"go_pretrain",
                    "GO pretrained on a set of graphs (the experiment's training graphs), writes "
                    "a checkpoint",
                    true, pretrain, trained_policy_fields().append(pretrain_fields())});
  agents.push_back(
      {"go_finetune", "GO pretrained (checkpoint), fine-tuned with PPO on a held-out graph", true,
       searching(GoMode::kFinetune),
       ppo_fields()
           .append(checkpoint_in_field())
           .append(device_field())
           .append(Fields().integer(
               "finetune_steps", &GoOptions::finetune_steps,
               "at most this many fine-tuning updates, whatever the budget (paper: under 50)", 0,
               1e9))
           .append(memory_repairs_field())
           .append(order_field())
           .append(granularity_field(
               "the start: policy, none (fine-tuning per op, or coarse to fine for unit_phase "
               "updates when set); unit, the greedy placement per decision unit (zero-shot's), "
               "then unit_phase updates per unit; best, the faster of the greedy placements "
               "per op and per unit (both simulated), and the unit phase only when per unit "
               "was faster; from unit and best the updates after the unit phase decide per op"))});
  GoOptions zero_shot;
  zero_shot.mode = GoMode::kZeroShot;
  zero_shot.granularity = Granularity::kBest;
  agents.push_back(
      {"go_zero_shot",
       "GO pretrained (checkpoint), applied greedily to a held-out graph with no training "
       "(moved into memory if it does not fit)",
       false, zero_shot,
       checkpoint_in_field()
           .append(memory_repairs_field())
           .append(granularity_field(
               "the greedy placement: policy, the checkpoint's decisions (per op unless it was "
               "trained per unit); unit, each decision unit on the argmax of its ops' mean "
               "logits, memory repairs moving whole units; best, the faster of the two (both "
               "simulated)"))
           .append(device_field())
           .append(order_field())});

  for (auto& a : multitask_agents()) agents.push_back(std::move(a));
  return agents;
}

}  // namespace

GoOptions go_agent_defaults(const std::string& agent) {
  for (const auto& a : go_agents()) {
    if (a.name == agent) {
      return a.fields.read(AgentOptions(a.name, a.fields.specs(a.defaults), {}), a.defaults);
    }
  }
  throw std::invalid_argument("not a GO agent: " + agent);
}

void register_go(AgentRegistry& registry) {
  for (auto& a : go_agents()) {
    AgentInfo info = describe_agent(a.name, a.description, a.learner, a.fields, a.defaults,
                                    [](const GoOptions& g) { return make_go_agent(g); });
    info.data_parallel = a.learner;  // every GO agent that trains shares its updates
    registry.add(std::move(info));
  }

  // Transfer learning as the runner plans it (experiments/run/plan.h): pretraining writes a
  // policy trained on the training workloads, fine-tuning and zero-shot read it on the
  // held-out ones.
  const ArtifactSpec policy{"pretrained_policy", "checkpoint", ".ckpt"};
  registry.declare_artifacts("go_pretrain",
                             AgentArtifacts().produce(policy).on(WorkloadScope::kTrainingSet));
  registry.declare_artifacts("go_finetune",
                             AgentArtifacts().consume(policy).on(WorkloadScope::kHeldOut));
  registry.declare_artifacts("go_zero_shot",
                             AgentArtifacts().consume(policy).on(WorkloadScope::kHeldOut));
}

}  // namespace gopt::agents::go
