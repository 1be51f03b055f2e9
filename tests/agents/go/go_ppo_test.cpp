// GO's PPO updates (agents/go/go_ppo.h): unit decisions and samples, device balance and
// floor, self-imitation.
#include <gtest/gtest.h>

#include <cmath>

#include "agents/go/go_agent.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"
#include "agents/go/go_training.h"
#include "agents/registry.h"
#include "agents/torch_utils.h"
#include "tests/agents/agents_test_util.h"
#include "tests/agents/go/go_test_support.h"
#include "tests/support/expect_error.h"

namespace gopt::agents::go {
namespace {

// `steps` PPO updates of 8 samples on `problem` with the device-balance penalty (weight
// `balance`, floor `floor`; 0 and 0: plain PPO), Adam at `learning_rate`, seed 4.
void train_balanced(GoPolicy& policy, const Problem& problem, double learning_rate, double balance,
                    double floor, int steps) {
  core::Rng rng(4);
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(learning_rate));
  PpoOptions ppo;
  ppo.samples_per_step = 8;
  ppo.device_balance = balance;
  ppo.device_floor = floor;
  PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
  Environment env(problem);
  PpoTask task(env);
  for (int step = 0; step < steps; ++step) (void)trainer.step(task);
}

TEST(GoPpoTest, UnitDecisionsPlaceEveryUnitWhole) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  core::Rng rng(5);
  GoPolicy policy(GoPolicyOptions()
                      .with_hidden(16)
                      .with_heads(2)
                      .with_segment_length(8)
                      .with_max_devices(4)
                      .with_unit_decisions(true));
  initialise(*policy, rng);
  policy->reset_heads();
  // Every op of a unit has its unit's logits.
  {
    torch::NoGradGuard no_grad;
    auto logits = policy->forward(tensors, 2).logits;
    auto unit_logits = logits.index_select(0, tensors.unit_rows).index_select(0, tensors.unit);
    EXPECT_TRUE(torch::equal(logits, unit_logits));
  }
  // Every sampled decision, and so the best one, moves units whole.
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(3e-3));
  PpoOptions ppo;
  ppo.samples_per_step = 8;
  PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
  Environment env(f.problem);
  PpoTask task(env);
  for (int step = 0; step < 5; ++step) {
    const auto stats = trainer.step(task);
    EXPECT_EQ(stats.samples, 9);
    EXPECT_GE(stats.entropy, 0.0);
    EXPECT_LE(stats.entropy, std::log(2.0) + 1e-6);  // per unit, not summed over ops
    EXPECT_EQ(ops_off_their_unit(tensors, *env.best_decision().placement), 0);
  }
  const auto greedy = greedy_decision(policy, tensors, f.problem);
  EXPECT_EQ((*greedy.placement)[0], (*greedy.placement)[1]);  // "emb/lookup" in and op0
}

// Mixed sampling: with per-op decisions, unit samples place whole units (drawn from the
// mean of the unit's logits) and train that pooled distribution.
TEST(GoPpoTest, UnitSamplesPlaceWholeUnitsAndTrainTheirPooledDistribution) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  auto pooled_entropy = [&](GoPolicy& policy) {
    torch::NoGradGuard no_grad;
    auto logits = policy->forward(tensors, 2).logits.slice(1, 0, 2);
    auto log_p = torch::log_softmax(unit_means(logits, tensors), 1);
    return -(log_p.exp() * log_p).sum().item<double>();
  };
  core::Rng rng(5);
  GoPolicy policy(
      GoPolicyOptions().with_hidden(16).with_heads(2).with_segment_length(8).with_max_devices(4));
  initialise(*policy, rng);
  policy->reset_heads();
  const double before = pooled_entropy(policy);
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(3e-3));
  PpoOptions ppo;
  ppo.samples_per_step = 8;
  ppo.unit_samples = 8;
  ppo.evaluate_greedy = false;  // the greedy placement is per op
  PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
  Environment env(f.problem);
  PpoTask task(env);
  for (int step = 0; step < 20; ++step) {
    (void)trainer.step(task);
    EXPECT_EQ(ops_off_their_unit(tensors, *env.best_decision().placement), 0);
  }
  // The unit samples' objective sharpened the pooled distributions.
  EXPECT_LT(pooled_entropy(policy), 0.8 * before) << "before " << before;

  AgentRegistry registry;
  register_builtin_agents(registry);
  const auto message = gopt::testing::error_of([&] {
    (void)registry.create("go_one", {{"unit_samples", "4"}, {"unit_decisions", "true"}},
                          "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.unit_samples")) << message;
}

// Device balance (device_balance): a device the policy stopped sampling (its placement
// bias far below the others', as pretraining leaves one on the GNMT graphs) stays dead
// under PPO alone and comes back with the penalty.
TEST(GoPpoTest, DeviceBalanceBringsBackADeviceThePolicyStoppedSampling) {
  testing::ProblemFixture f(parallel_chains(3, 6), "p100x4_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  auto dead_share = [&](GoPolicy& policy) {  // device 3's mean probability over the ops
    torch::NoGradGuard no_grad;
    const auto p = torch::softmax(policy->forward(tensors, 4).logits, 1);
    return p.select(1, 3).mean().item<double>();
  };
  double before = 0;
  auto after = [&](double balance, double floor = 0) {
    GoPolicy policy = small_policy(3);
    policy->reset_heads();
    {
      torch::NoGradGuard no_grad;
      auto params = policy->named_parameters();
      EXPECT_TRUE(params.contains("placement.bias"));
      params["placement.bias"][3].fill_(-12.0);
    }
    before = dead_share(policy);
    train_balanced(policy, f.problem, 3e-2, balance, floor, 5);
    return dead_share(policy);
  };
  const double without = after(0);
  EXPECT_LT(before, 1e-4);
  EXPECT_LT(without, 1e-3) << "before " << before;
  const double with = after(1.0);
  EXPECT_GT(with, 100 * without) << "before " << before;
  // A floor at a quarter of the uniform share brings it back too.
  EXPECT_GT(after(1.0, 0.25), 100 * without) << "before " << before;
}

// A device floor (device_floor) leaves a policy whose devices all lie above it exactly as
// PPO alone trains it, where the full KL pulls it towards uniform.
TEST(GoPpoTest, DeviceFloorLeavesDevicesAboveItAlone) {
  testing::ProblemFixture f(parallel_chains(3, 6), "p100x4_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  auto trained = [&](double balance, double floor) {
    GoPolicy policy = small_policy(3);
    train_balanced(policy, f.problem, 1e-3, balance, floor, 1);
    torch::NoGradGuard no_grad;
    return torch::softmax(policy->forward(tensors, 4).logits.slice(1, 0, 4), 1);
  };
  const auto plain = trained(0, 0);
  ASSERT_GT(plain.mean(0).min().item<double>(), 0.25 * 0.25);  // every device above the floor
  EXPECT_TRUE(torch::equal(trained(1.0, 0.25), plain));
  EXPECT_FALSE(torch::equal(trained(1.0, 0), plain));

  // A floor without the penalty it bounds would do nothing: an error naming the option.
  AgentRegistry r;
  register_builtin_agents(r);
  const auto lone = gopt::testing::error_of([&] {
    (void)r.create("go_finetune", {{"device_floor", "0.25"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(lone, "agents.go_finetune.device_floor")) << lone;
  EXPECT_TRUE(gopt::testing::contains(lone, "device_balance > 0")) << lone;
}

// Self-imitation (imitation_coef) pulls the policy towards the best decision found so far:
// one update from the same start, with the same samples, raises that decision's
// log-likelihood with it, and more than without it.
TEST(GoPpoTest, SelfImitationPullsThePolicyTowardsTheBestDecision) {
  testing::ProblemFixture f(parallel_chains(3, 6), "p100x4_pcie", 1);
  const core::Decision optimum = chains_optimum(f.compiled);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  auto target = torch::empty({tensors.num_nodes, 1}, torch::kLong);
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    const auto v = static_cast<std::size_t>(tensors.order[p].item<std::int64_t>());
    target[p][0] = (*optimum.placement)[v];
  }
  auto log_likelihood = [&](GoPolicy& policy) {
    torch::NoGradGuard no_grad;
    auto logits = policy->forward(tensors, 4).logits.slice(1, 0, 4);
    return (torch::log_softmax(logits, 1).gather(1, target).squeeze(1) * tensors.action_mask)
        .sum()
        .item<double>();
  };
  double before = 0;
  auto after_one_update = [&](double coef, double cap = 0.9) {
    Environment env(f.problem);
    (void)env.evaluate(optimum);  // the best decision so far
    core::Rng rng(3);
    GoPolicy policy = small_policy(3);
    before = log_likelihood(policy);
    torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(1e-3));
    PpoOptions ppo;
    ppo.samples_per_step = 8;
    ppo.epochs = 1;
    ppo.imitation_coef = coef;
    ppo.imitation_cap = cap;
    PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
    PpoTask task(env);
    (void)trainer.step(task);
    EXPECT_EQ(env.best_decision().placement, optimum.placement);
    return log_likelihood(policy);
  };
  const double without = after_one_update(0);
  const double with = after_one_update(1.0);
  EXPECT_GT(with, before);
  EXPECT_GT(with, without + 0.1) << "before " << before;
  // Capped below every op's current probability, imitation adds no gradient at all.
  EXPECT_EQ(after_one_update(1.0, 1e-4), without);

  AgentRegistry registry;
  register_builtin_agents(registry);
  const auto message = gopt::testing::error_of([&] {
    (void)registry.create("go_one", {{"imitation_cap", "1.5"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "exp.yaml")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.imitation_cap")) << message;
}

}  // namespace
}  // namespace gopt::agents::go
