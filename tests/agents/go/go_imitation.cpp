// go_imitation: can GO's policy network express a given placement of a suite graph?
//
//   go_imitation GRAPH PROFILE TARGET [STEPS [LEARNING_RATE [SEED]]]
//       TARGET: `expert` (the human_expert agent's placement) or a decision file (JSON,
//       e.g. `gopt simulate --save-decision`); defaults 300 steps, 3e-3, seed 1.
//
// Trains a freshly initialised GO-one policy (default GoPolicyOptions, initialised as
// go_one initialises it) by supervised imitation: each step one forward pass and Adam on
// the cross-entropy of the target's device at every op that decides its own device
// (colocated followers excluded, as in PPO), gradient norm clipped at 1. Every 25 steps
// it simulates the greedy (argmax) placement and prints its step time and the fraction of
// deciding ops whose argmax is the target's device. If the greedy placement reaches the
// target's step time, the network can represent the placement and what keeps GO-one from
// it is the search, not capacity. Not a test: a diagnostic for docs/design-decisions.md "GO:
// learning".
#include <chrono>
#include <cstdio>
#include <string>

#include "agents/environment.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"
#include "agents/go/go_ppo.h"
#include "agents/registry.h"
#include "agents/torch_utils.h"
#include "core/compiled_graph.h"
#include "core/rng.h"
#include "datasets/workload_registry.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/decision_io.h"

int main(int argc, char** argv) try {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: go_imitation GRAPH PROFILE expert|DECISION.json [STEPS [LR [SEED]]]\n");
    return 2;
  }
  const std::string graph_name = argv[1];
  const std::string profile = argv[2];
  const std::string target_name = argv[3];
  const int steps = argc > 4 ? std::stoi(argv[4]) : 300;
  const double learning_rate = argc > 5 ? std::stod(argv[5]) : 3e-3;
  const std::uint64_t seed = argc > 6 ? std::stoull(argv[6]) : 1;

  gopt::datasets::WorkloadRegistry workloads;
  gopt::datasets::register_builtin_workloads(workloads);
  const auto graph = gopt::core::CompiledGraph::compile(workloads.generate(graph_name));
  const auto cluster = gopt::hardware::load_profile(profile);
  const auto cost = gopt::hardware::make_cost_model(cluster);
  gopt::agents::Problem problem{graph, cluster, *cost, 1};
  gopt::agents::Environment env(problem);
  gopt::agents::AgentRegistry agents;
  gopt::agents::register_builtin_agents(agents);
  const gopt::core::Decision target =
      target_name == "expert" ? agents.create("human_expert")->propose(problem)
                              : gopt::simulator::read_decision_file(target_name, graph, cluster);

  gopt::agents::SubnormalsFlushed flushed;
  namespace go = gopt::agents::go;
  const go::GraphTensors tensors = go::make_graph_tensors(graph);
  const auto devices = static_cast<std::int64_t>(problem.num_devices());
  // The target's device at every topological position.
  const auto order = tensors.order.accessor<std::int64_t, 1>();
  torch::Tensor labels = torch::empty({tensors.num_nodes}, torch::kInt64);
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    labels[p] = static_cast<std::int64_t>(target.device_of(static_cast<int>(order[p])));
  }
  const torch::Tensor mask = tensors.action_mask;
  const double deciding = mask.sum().item<double>();

  gopt::core::Rng rng(seed);
  go::GoPolicy policy(go::GoPolicyOptions{});
  gopt::agents::initialise(*policy, rng);
  policy->reset_heads();
  torch::optim::Adam optimizer(policy->parameters(), torch::optim::AdamOptions(learning_rate));

  const auto target_eval = env.evaluate(target);
  std::printf("%s on %s: %lld ops (%.0f decide their device); target %s: %.1f ms%s\n",
              graph_name.c_str(), profile.c_str(), static_cast<long long>(tensors.num_nodes),
              deciding, target_name.c_str(), target_eval.step_time_s * 1e3,
              target_eval.oom ? " OOM" : "");
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step <= steps; ++step) {
    auto out = policy->forward(tensors, devices);
    const torch::Tensor log_probs = torch::log_softmax(out.logits.slice(1, 0, devices), 1);
    const torch::Tensor nll = -log_probs.gather(1, labels.unsqueeze(1)).squeeze(1);
    const torch::Tensor loss = (nll * mask).sum() / deciding;
    if (step % 25 == 0 || step == steps) {
      torch::NoGradGuard no_grad;
      const torch::Tensor argmax = log_probs.argmax(1);
      const double agree = ((argmax == labels).to(torch::kFloat) * mask).sum().item<double>();
      const auto greedy = env.evaluate(go::greedy_decision(policy, tensors, problem));
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf(
          "step %4d  loss %.4f  argmax = target at %5.1f%% of ops (%.0f differ)"
          "  greedy %7.1f ms%s  (%.0f s)\n",
          step, loss.item<double>(), 100 * agree / deciding, deciding - agree,
          greedy.step_time_s * 1e3, greedy.oom ? " OOM" : "", seconds);
      std::fflush(stdout);
    }
    if (step == steps) break;
    optimizer.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(policy->parameters(), 1.0);
    optimizer.step();
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "go_imitation: %s\n", e.what());
  return 1;
}
