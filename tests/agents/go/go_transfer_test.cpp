// GO's transfer (agents/go/go_transfer.cpp, go_checkpoint.h): pretraining -> checkpoint ->
// zero-shot -> fine-tuning, validation-chosen checkpoints, memory repair, bad checkpoints,
// and training snapshots that resume a stopped run as if it never stopped.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "agents/baselines/list_scheduling.h"
#include "agents/go/go_agent.h"
#include "agents/go/go_checkpoint.h"
#include "agents/go/go_features.h"
#include "agents/go/go_inspect.h"
#include "agents/go/go_learner.h"
#include "agents/go/go_memory_repair.h"
#include "agents/go/go_model.h"
#include "agents/go/go_training.h"
#include "agents/placement_utils.h"
#include "agents/registry.h"
#include "core/errors.h"
#include "datasets/workload_registry.h"
#include "tests/agents/agents_test_util.h"
#include "tests/agents/go/go_test_support.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"

namespace gopt::agents::go {
namespace {

using testing::Curve;

class GoCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gopt_go_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { gopt::testing::remove_tree(dir_.string()); }

  // Pretrains go_pretrain with `options` on `problem` for `steps` updates; it writes its
  // checkpoint where options["checkpoint"] says.
  static void pretrain(const Problem& problem, const std::map<std::string, std::string>& options,
                       std::int64_t steps) {
    AgentRegistry r;
    register_builtin_agents(r);
    auto agent = r.create("go_pretrain", options);
    auto* transferable = dynamic_cast<TransferableAgent*>(agent.get());
    ASSERT_NE(transferable, nullptr);
    Environment env(problem);
    transferable->train_on_set({&env}, TrainBudget().with_max_steps(steps), nullptr);
  }

  // go_pretrain's options for the granularity tests: a small policy writing `checkpoint`.
  static std::map<std::string, std::string> small_pretrain(const std::string& checkpoint) {
    return {{"hidden", "16"},
            {"segment_length", "8"},
            {"max_devices", "4"},
            {"checkpoint", checkpoint},
            {"seed", "2"}};
  }

  std::filesystem::path dir_;
};

// Stops training by throwing from the observer after `limit` updates, as the runner's
// recorder does when Ctrl-C sets its stop flag.
class StopAfter final : public TrainingObserver {
 public:
  explicit StopAfter(std::size_t limit) : limit_(limit) {}
  struct Stopped {};
  void on_training_step(const LearningCurvePoint& p) override {
    points.push_back(p);
    if (points.size() == limit_) throw Stopped{};
  }
  std::vector<LearningCurvePoint> points;

 private:
  std::size_t limit_;
};

// Trains `agent` on `problem` for `steps` updates three times: whole; stopped after
// `stop_after` updates, writing its snapshot at `snapshot`; and resumed from that snapshot.
// The resumed run must end exactly where the whole one does: every curve point (the
// restored ones replayed first), the samples, the best time and the proposed decision.
void expect_resume_as_if_never_stopped(const Problem& problem, const std::string& agent,
                                       const std::map<std::string, std::string>& options,
                                       std::int64_t steps, std::size_t stop_after,
                                       const std::string& snapshot) {
  AgentRegistry r;
  register_builtin_agents(r);
  const TrainBudget budget = TrainBudget().with_max_steps(steps);
  TrainSnapshots snapshots;
  snapshots.path = snapshot;
  snapshots.identity = "job / " + agent;
  snapshots.interval_s = 1e9;  // only the snapshot written when stopped

  auto whole = r.create(agent, options);
  Environment whole_env(problem);
  Curve whole_curve;
  whole->train(whole_env, budget, &whole_curve);
  ASSERT_EQ(whole_curve.points.size(), static_cast<std::size_t>(steps));

  auto first = r.create(agent, options);
  first->set_snapshots(snapshots);
  Environment first_env(problem);
  StopAfter stop(stop_after);
  EXPECT_THROW(first->train(first_env, budget, &stop), StopAfter::Stopped);
  ASSERT_TRUE(std::filesystem::exists(snapshots.path));

  auto second = r.create(agent, options);
  second->set_snapshots(snapshots);
  Environment second_env(problem);
  Curve resumed;
  second->train(second_env, budget, &resumed);
  ASSERT_EQ(resumed.points.size(), whole_curve.points.size());
  for (std::size_t i = 0; i < resumed.points.size(); ++i) {
    EXPECT_EQ(resumed.points[i].step, whole_curve.points[i].step);
    EXPECT_EQ(resumed.points[i].samples, whole_curve.points[i].samples);
    EXPECT_EQ(resumed.points[i].mean_step_time_s, whole_curve.points[i].mean_step_time_s) << i;
    EXPECT_EQ(resumed.points[i].best_step_time_s, whole_curve.points[i].best_step_time_s) << i;
  }
  EXPECT_EQ(second_env.samples(), whole_env.samples());
  EXPECT_EQ(second_env.best_step_time_s(), whole_env.best_step_time_s());
  // The samples that improved the best, those before the snapshot included.
  ASSERT_FALSE(whole_env.improvements().empty());
  EXPECT_EQ(second_env.improvements(), whole_env.improvements());
  const auto a = whole->propose(problem);
  const auto b = second->propose(problem);
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.fusion, b.fusion);
}

// Zero-shot's memory repair: every op of rnnlm_4 pushed onto device 0 by a prior runs out
// of memory there (about 23 GB on a 16 GB P100); the repair moves whole layers and blocks
// the policy is least sure of to the devices with room until the placement fits.
TEST(GoZeroShotTest, MemoryRepairMovesAnOutOfMemoryPlacementIntoMemory) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  testing::ProblemFixture f(workloads.generate("rnnlm_4"), "p100x4_pcie", 1);
  GoPolicy policy = small_policy(1);
  GraphTensors tensors = make_graph_tensors(f.compiled);
  tensors.placement_prior = torch::zeros({tensors.num_nodes, 4});
  tensors.placement_prior.select(1, 0).fill_(20.0);

  Environment greedy_env(f.problem);
  MemoryRepair none;
  const auto greedy = memory_fitting_decision(policy, tensors, greedy_env, {}, 0, 64, &none);
  EXPECT_EQ(none.simulations, 1);
  EXPECT_FALSE(none.fits);
  ASSERT_TRUE(greedy.placement);
  EXPECT_TRUE(std::all_of(greedy.placement->begin(), greedy.placement->end(),
                          [](core::DeviceId d) { return d == 0; }));
  EXPECT_TRUE(greedy_env.evaluate(greedy).oom);

  Environment env(f.problem);
  MemoryRepair repair;
  const auto fitted = memory_fitting_decision(policy, tensors, env, {}, 10, 64, &repair);
  EXPECT_TRUE(repair.fits);
  EXPECT_GT(repair.simulations, 1);
  EXPECT_LE(repair.simulations, 11);
  EXPECT_EQ(env.samples(), repair.simulations);  // every simulation is counted
  EXPECT_GT(repair.moved_ops, 0);
  Environment check(f.problem);
  EXPECT_FALSE(check.evaluate(fitted).oom);
  // Ops move by layer: an LSTM layer's ops stay on one device.
  const auto& layers = f.compiled.layer();
  std::map<std::int32_t, std::set<core::DeviceId>> devices_of_layer;
  for (core::NodeId v = 0; v < f.compiled.num_nodes(); ++v) {
    const auto layer = layers[static_cast<std::size_t>(v)];
    if (layer >= 0)
      devices_of_layer[layer].insert((*fitted.placement)[static_cast<std::size_t>(v)]);
  }
  ASSERT_FALSE(devices_of_layer.empty());
  for (const auto& [layer, devices] : devices_of_layer) EXPECT_EQ(devices.size(), 1u) << layer;

  Environment again(f.problem);
  EXPECT_EQ(memory_fitting_decision(policy, tensors, again, {}, 10, 64).placement,
            fitted.placement);
}

// `gopt agents inspect`: a checkpoint's placement distribution per device over a graph's
// ops. A policy one update from its random start still tells ops apart (its head starts at
// 3x the usual scale), so the logit spread measures something that can be far from 0.
TEST_F(GoCheckpointTest, PlacementSpreadMeasuresACheckpointAndNamesABadFile) {
  testing::ProblemFixture a(parallel_chains(2, 6), "p100x2_pcie", 1);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  ASSERT_NO_FATAL_FAILURE(pretrain(
      a.problem,
      {{"hidden", "16"}, {"segment_length", "4"}, {"max_devices", "4"}, {"checkpoint", checkpoint}},
      1));

  const auto spread = placement_spread(checkpoint, a.compiled, 2);
  EXPECT_EQ(spread.updates, 1);
  EXPECT_NE(spread.options.find("hidden=16"), std::string::npos);
  ASSERT_EQ(spread.mean_probability.size(), 2u);
  ASSERT_EQ(spread.logit_spread.size(), 2u);
  ASSERT_EQ(spread.argmax_ops.size(), 2u);
  EXPECT_NEAR(spread.mean_probability[0] + spread.mean_probability[1], 1.0, 1e-5);
  EXPECT_EQ(spread.argmax_ops[0] + spread.argmax_ops[1], a.compiled.num_nodes());
  EXPECT_GT(std::max(spread.logit_spread[0], spread.logit_spread[1]), 0.05);
  EXPECT_FALSE(spread.unit_gate_mean.has_value());  // no gate to report

  const auto not_a_checkpoint = (dir_ / "notes.txt").string();
  std::ofstream(not_a_checkpoint) << "not a checkpoint\n";
  const auto message =
      gopt::testing::error_of([&] { (void)placement_spread(not_a_checkpoint, a.compiled, 2); });
  EXPECT_TRUE(gopt::testing::contains(message, not_a_checkpoint)) << message;
  EXPECT_THROW((void)placement_spread(checkpoint, a.compiled, 5), core::InputError);
}

// The policy keeps telling ops apart while it trains at the default learning rate. At
// 3e-3 (the default before 2026-11-22), Adam's first, sign-like steps moved the whole
// network at once: five updates on rnnlm_2 put every op on one device (p = 0.98, logit
// spread 0.2-0.4), and longer runs left a constant function of the input
// (docs/design-decisions.md "GO: learning"). At 3e-4 five updates keep spreads of 1.4-2.2 and
// several devices in the greedy placement.
TEST_F(GoCheckpointTest, DefaultTrainingKeepsThePolicyConditionedOnTheOp) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  testing::ProblemFixture f(workloads.generate("rnnlm_2"), "p100x4_pcie", 1);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  ASSERT_NO_FATAL_FAILURE(pretrain(f.problem, {{"checkpoint", checkpoint}, {"seed", "1"}}, 5));

  const auto spread = placement_spread(checkpoint, f.compiled, 4);
  ASSERT_EQ(spread.updates, 5);
  double widest = 0;
  int used = 0;
  for (int d = 0; d < 4; ++d) {
    widest = std::max(widest, spread.logit_spread[static_cast<std::size_t>(d)]);
    used += spread.argmax_ops[static_cast<std::size_t>(d)] > 0;
  }
  EXPECT_GT(widest, 1.0);
  EXPECT_GE(used, 2) << "the greedy placement puts every op on one device";
}

TEST_F(GoCheckpointTest, PretrainThenZeroShotThenFinetune) {
  testing::ProblemFixture a(parallel_chains(2, 6), "p100x2_pcie", 1);
  testing::ProblemFixture b(parallel_chains(3, 4), "p100x2_pcie", 2);
  testing::ProblemFixture held_out(parallel_chains(2, 9), "p100x2_pcie", 3);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  AgentRegistry r;
  register_builtin_agents(r);
  const std::map<std::string, std::string> sizes = {
      {"hidden", "16"}, {"segment_length", "4"}, {"max_devices", "4"}};
  auto pretrain_options = sizes;
  pretrain_options["checkpoint"] = checkpoint;
  auto pretrain = r.create("go_pretrain", pretrain_options);
  auto* transferable = dynamic_cast<TransferableAgent*>(pretrain.get());
  ASSERT_NE(transferable, nullptr);
  Environment env_a(a.problem);
  Environment env_b(b.problem);
  Curve curve;
  transferable->train_on_set({&env_a, &env_b}, TrainBudget().with_max_steps(6), &curve);
  ASSERT_EQ(curve.points.size(), 6u);
  EXPECT_GT(env_a.samples(), 0);  // both graphs were trained on
  EXPECT_GT(env_b.samples(), 0);
  ASSERT_TRUE(std::filesystem::exists(checkpoint));

  // Zero-shot: the pretrained policy's greedy placement of an unseen graph. It "trains" only
  // to simulate that placement (one sample; it fits, so no memory repair).
  auto zero_shot = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
  EXPECT_TRUE(zero_shot->is_learner());
  auto decision = zero_shot->propose(held_out.problem);
  EXPECT_EQ(decision.placement, pretrain->propose(held_out.problem).placement);
  core::validate_decision(decision, held_out.compiled.num_nodes(), held_out.cluster.num_devices());
  Environment env_z(held_out.problem);
  zero_shot->train(env_z, TrainBudget().with_max_steps(50), nullptr);
  EXPECT_EQ(env_z.samples(), 1);
  EXPECT_EQ(zero_shot->propose(held_out.problem).placement, decision.placement);

  // Fine-tuning starts from the same policy, so it is never worse than zero-shot.
  auto finetune = r.create("go_finetune", {{"checkpoint", checkpoint}, {"finetune_steps", "3"}});
  Environment env_h(held_out.problem);
  Curve finetune_curve;
  finetune->train(env_h, TrainBudget().with_max_steps(50), &finetune_curve);
  EXPECT_EQ(finetune_curve.points.size(), 3u);  // capped by finetune_steps
  Environment check(held_out.problem);
  EXPECT_LE(check.evaluate(finetune->propose(held_out.problem)).step_time_s,
            check.evaluate(decision).step_time_s);
}

// order: critical_path on the agents that read a checkpoint: zero-shot's greedy placement
// and every placement fine-tuning samples run in critical-path order and their decisions carry
// those priorities, on the placement the executor's order gives; a checkpoint whose policy
// decides priorities itself is refused, naming the option.
TEST_F(GoCheckpointTest, CriticalPathOrderCarriesIntoZeroShotAndFinetune) {
  testing::ProblemFixture train(parallel_chains(2, 6), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(testing::parallel_chains(3, 4, /*join=*/true), "p100x2_pcie", 3);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  ASSERT_NO_FATAL_FAILURE(pretrain(train.problem, small_pretrain(checkpoint), 2));
  AgentRegistry r;
  register_builtin_agents(r);

  auto plain = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
  Environment plain_env(held_out.problem);
  plain->train(plain_env, TrainBudget().with_max_steps(1), nullptr);
  EXPECT_FALSE(plain_env.best_decision().priority.has_value());
  auto zero_shot =
      r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"order", "critical_path"}});
  Environment env_z(held_out.problem);
  zero_shot->train(env_z, TrainBudget().with_max_steps(1), nullptr);
  const core::Decision greedy = env_z.best_decision();
  ASSERT_TRUE(greedy.placement.has_value());
  ASSERT_TRUE(greedy.priority.has_value());
  EXPECT_EQ(greedy.placement, plain_env.best_decision().placement);
  EXPECT_EQ(*greedy.priority, critical_path_priorities(held_out.problem, *greedy.placement));
  EXPECT_EQ(zero_shot->propose(held_out.problem).priority, greedy.priority);

  auto finetune = r.create("go_finetune", {{"checkpoint", checkpoint},
                                           {"finetune_steps", "2"},
                                           {"samples_per_step", "4"},
                                           {"order", "critical_path"}});
  Environment env_f(held_out.problem);
  finetune->train(env_f, TrainBudget().with_max_steps(2), nullptr);
  EXPECT_GT(env_f.samples(), 1);
  const core::Decision best = env_f.best_decision();
  ASSERT_TRUE(best.priority.has_value());
  EXPECT_EQ(*best.priority, critical_path_priorities(held_out.problem, *best.placement));
  EXPECT_LE(env_f.best_step_time_s(), env_z.best_step_time_s());

  // A checkpoint of a policy that schedules (written directly: go_pretrain places only).
  GoOptions scheduling;
  scheduling.policy.with_hidden(16).with_segment_length(4).with_schedule(true).with_task_layers(
      true);
  GoLearner learner(scheduling);
  learner.create_policy(1);
  const std::string scheduling_checkpoint = (dir_ / "scheduling.ckpt").string();
  save_checkpoint(scheduling_checkpoint, learner.trained());
  for (const std::string agent : {"go_zero_shot", "go_finetune"}) {
    auto reader =
        r.create(agent, {{"checkpoint", scheduling_checkpoint}, {"order", "critical_path"}});
    Environment env(held_out.problem);
    const auto message = gopt::testing::error_of(
        [&] { reader->train(env, TrainBudget().with_max_steps(1), nullptr); });
    EXPECT_TRUE(gopt::testing::contains(message, "agents." + agent + ".order")) << message;
    EXPECT_TRUE(gopt::testing::contains(message, "decides priorities itself")) << message;
  }
}

// Zero-shot's granularity: `unit` places every decision unit whole, `best` simulates both
// greedy placements and keeps the faster, and neither changes how the loaded policy decides
// afterwards.
TEST_F(GoCheckpointTest, ZeroShotGranularityPlacesUnitsWholeOrTheFasterOfBoth) {
  testing::ProblemFixture train(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(), "p100x2_pcie", 2);
  testing::ProblemFixture other(unit_graph(), "p100x2_pcie", 3);  // not remembered
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  AgentRegistry r;
  register_builtin_agents(r);
  ASSERT_NO_FATAL_FAILURE(pretrain(train.problem, small_pretrain(checkpoint), 4));
  ASSERT_TRUE(std::filesystem::exists(checkpoint));

  struct Placed {
    std::vector<core::DeviceId> placement;
    double step_time_s;
    std::int64_t samples;
    std::vector<core::DeviceId> afterwards;  // the same agent's greedy placement of `other`
  };
  auto place = [&](const std::string& granularity) {
    auto agent =
        r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"granularity", granularity}});
    Environment env(held_out.problem);
    agent->train(env, TrainBudget().with_max_steps(1), nullptr);
    Placed p;
    p.placement = *agent->propose(held_out.problem).placement;
    Environment check(held_out.problem);
    p.step_time_s = check.evaluate(agent->propose(held_out.problem)).step_time_s;
    p.samples = env.samples();
    p.afterwards = *agent->propose(other.problem).placement;
    return p;
  };
  const Placed per_op = place("policy");
  const Placed per_unit = place("unit");
  const Placed best = place("best");
  const GraphTensors tensors = make_graph_tensors(held_out.compiled);
  EXPECT_EQ(ops_off_their_unit(tensors, per_unit.placement), 0);
  EXPECT_GT(ops_off_their_unit(tensors, per_op.placement), 0)
      << "the test needs a per-op placement that splits a unit";
  EXPECT_EQ(per_op.samples, 1);  // both fit: no memory repair
  EXPECT_EQ(per_unit.samples, 1);
  EXPECT_EQ(best.samples, 2);
  EXPECT_EQ(best.step_time_s, std::min(per_op.step_time_s, per_unit.step_time_s));
  EXPECT_TRUE(best.placement == per_op.placement || best.placement == per_unit.placement);
  // The granularity held for the held-out graph only: the policy still decides per op.
  EXPECT_EQ(per_unit.afterwards, per_op.afterwards);
  EXPECT_EQ(best.afterwards, per_op.afterwards);

  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"granularity", "layer"}},
                   "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_zero_shot.granularity")) << message;
}

// Fine-tuning's granularity: `best` starts from zero-shot's placements (counted as samples,
// never ended behind) and runs its unit phase only when whole units were faster; after the
// start it trains exactly as `unit` (unit phase) or as `policy` without one.
TEST_F(GoCheckpointTest, FinetuneRunsItsUnitPhaseOnlyFromAFasterPerUnitStart) {
  testing::ProblemFixture train(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(), "p100x2_pcie", 2);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  AgentRegistry r;
  register_builtin_agents(r);
  ASSERT_NO_FATAL_FAILURE(pretrain(train.problem, small_pretrain(checkpoint), 4));

  auto zero_shot_time = [&](const std::string& granularity) {
    auto agent =
        r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"granularity", granularity}});
    Environment env(held_out.problem);
    agent->train(env, TrainBudget(), nullptr);
    return env.best_step_time_s();
  };
  const double per_op = zero_shot_time("policy");
  const double per_unit = zero_shot_time("unit");
  ASSERT_NE(per_op, per_unit) << "the test needs the two starts to differ";

  struct Run {
    std::vector<double> means;  // each update's mean sampled step time
    double best_s;
    std::int64_t samples;
  };
  auto finetune = [&](std::map<std::string, std::string> options) {
    options.insert({{"checkpoint", checkpoint},
                    {"finetune_steps", "4"},
                    {"samples_per_step", "4"},
                    {"unit_phase", "2"}});
    auto agent = r.create("go_finetune", options);
    Environment env(held_out.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_steps(4), &curve);
    Run run{{}, env.best_step_time_s(), env.samples()};
    for (const auto& p : curve.points) run.means.push_back(p.mean_step_time_s);
    return run;
  };
  const Run best = finetune({{"granularity", "best"}});
  const Run from_units = finetune({{"granularity", "unit"}});
  const Run per_op_only = finetune({{"granularity", "policy"}, {"unit_phase", "0"}});
  const Run coarse_to_fine = finetune({{"granularity", "policy"}});
  ASSERT_EQ(best.means.size(), 4u);
  EXPECT_NE(per_op_only.means, coarse_to_fine.means);  // the unit phase changes training
  EXPECT_EQ(best.means, per_unit < per_op ? coarse_to_fine.means : per_op_only.means)
      << "per op " << per_op << " s, per unit " << per_unit << " s";
  EXPECT_EQ(from_units.means, coarse_to_fine.means);
  EXPECT_LE(best.best_s, std::min(per_op, per_unit));
  EXPECT_EQ(best.samples, per_op_only.samples + 2);  // the two greedy starts
  EXPECT_EQ(from_units.samples, per_op_only.samples + 1);
}

// A policy pretrained per unit: zero-shot's `best` reads it per op too, and fine-tuning from
// a greedy start decides per op once its unit phase is over (before, both stayed per unit).
TEST_F(GoCheckpointTest, APolicyPretrainedPerUnitIsAlsoReadAndFineTunedPerOp) {
  testing::ProblemFixture train(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(), "p100x2_pcie", 2);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  AgentRegistry r;
  register_builtin_agents(r);
  auto options = small_pretrain(checkpoint);
  options["unit_decisions"] = "true";
  ASSERT_NO_FATAL_FAILURE(pretrain(train.problem, options, 4));

  auto zero_shot = [&](const std::string& granularity) {
    auto agent =
        r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"granularity", granularity}});
    Environment env(held_out.problem);
    agent->train(env, TrainBudget(), nullptr);
    return std::pair{env.samples(), env.best_step_time_s()};
  };
  const auto [as_trained_samples, as_trained_s] = zero_shot("policy");
  const auto [best_samples, best_s] = zero_shot("best");
  EXPECT_EQ(as_trained_samples, 1);
  EXPECT_EQ(best_samples, 2);  // per unit as trained, then per op
  EXPECT_LE(best_s, as_trained_s);

  auto finetune_means = [&](const std::string& unit_phase) {
    auto agent = r.create("go_finetune", {{"checkpoint", checkpoint},
                                          {"granularity", "unit"},
                                          {"finetune_steps", "4"},
                                          {"samples_per_step", "4"},
                                          {"unit_phase", unit_phase}});
    Environment env(held_out.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_steps(4), &curve);
    std::vector<double> means;
    for (const auto& p : curve.points) means.push_back(p.mean_step_time_s);
    return means;
  };
  const auto two_per_unit = finetune_means("2");
  const auto all_per_unit = finetune_means("4");
  ASSERT_EQ(two_per_unit.size(), 4u);
  ASSERT_EQ(all_per_unit.size(), 4u);
  EXPECT_EQ(two_per_unit[0], all_per_unit[0]);
  EXPECT_EQ(two_per_unit[1], all_per_unit[1]);
  EXPECT_NE(std::vector(two_per_unit.begin() + 2, two_per_unit.end()),
            std::vector(all_per_unit.begin() + 2, all_per_unit.end()))
      << "the updates after the unit phase sample per op";
}

// A checkpoint records unit decisions, and a zero-shot policy read from it decides per unit.
TEST_F(GoCheckpointTest, UnitDecisionsTravelInTheCheckpoint) {
  EXPECT_NE(
      policy_options_text(GoPolicyOptions().with_unit_decisions(true)).find("unit_decisions=1"),
      std::string::npos);
  testing::ProblemFixture a(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(33), "p100x2_pcie", 2);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  pretrain(a.problem,
           {{"hidden", "16"},
            {"segment_length", "4"},
            {"unit_decisions", "true"},
            {"checkpoint", checkpoint}},
           2);
  AgentRegistry r;
  register_builtin_agents(r);
  auto zero_shot = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
  const auto placement = *zero_shot->propose(held_out.problem).placement;
  const auto tensors = make_graph_tensors(held_out.compiled);
  EXPECT_EQ(ops_off_their_unit(tensors, placement), 0);
}

TEST_F(GoCheckpointTest, UnitGateTravelsInTheCheckpoint) {
  const auto text = policy_options_text(GoPolicyOptions().with_unit_gate(true));
  EXPECT_NE(text.find("unit_gate=1"), std::string::npos);
  EXPECT_TRUE(parse_policy_options(text, kCheckpointVersion, "a.ckpt").unit_gate);
  // A checkpoint from before the gate records no unit_gate: its policy had none.
  std::string before = policy_options_text(GoPolicyOptions());
  const auto at = before.find(";unit_gate=0");
  ASSERT_NE(at, std::string::npos);
  before.erase(at, std::string(";unit_gate=0").size());
  EXPECT_FALSE(parse_policy_options(before, kCheckpointVersion, "a.ckpt").unit_gate);
  // Zero-shot rebuilds the gate head and reads its trained weights.
  testing::ProblemFixture a(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(33), "p100x2_pcie", 2);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  pretrain(a.problem,
           {{"hidden", "16"},
            {"segment_length", "4"},
            {"unit_gate", "true"},
            {"checkpoint", checkpoint}},
           2);
  const auto loaded = load_checkpoint(checkpoint, 1e-3);
  EXPECT_TRUE(loaded.policy->options.unit_gate);
  EXPECT_NE(loaded.policy->named_parameters().find("unit_gate.weight"), nullptr);
  // `gopt agents inspect` reports what the gate learned.
  const auto spread = placement_spread(checkpoint, held_out.compiled, 2);
  ASSERT_TRUE(spread.unit_gate_mean.has_value());
  EXPECT_GT(*spread.unit_gate_mean, 0.0);
  EXPECT_LT(*spread.unit_gate_mean, 1.0);
  EXPECT_NE(*spread.unit_gate_mean, 0.5);  // trained away from the even mix
  EXPECT_GE(*spread.ops_following_unit, 0.0);
  EXPECT_LE(*spread.ops_following_unit, 1.0);
  AgentRegistry r;
  register_builtin_agents(r);
  auto zero_shot = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
  EXPECT_TRUE(zero_shot->propose(held_out.problem).placement.has_value());
  // The gate mixes per-op decisions; with unit decisions it has nothing to gate.
  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"unit_gate", "true"}, {"unit_decisions", "true"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.unit_gate")) << message;
}

// With validation graphs the checkpoint is the checked policy whose zero-shot placement of
// them is best, not the last one; the checks change nothing in training. The policies
// checked are recomputed here by pretraining as long as each check point (training is
// deterministic, so a shorter budget gives the same first updates).
TEST_F(GoCheckpointTest, ValidationKeepsThePolicyThatPlacesTheValidationGraphsBest) {
  testing::ProblemFixture a(parallel_chains(2, 6), "p100x2_pcie", 1);
  testing::ProblemFixture b(parallel_chains(3, 4), "p100x2_pcie", 2);
  testing::ProblemFixture validation(parallel_chains(4, 5), "p100x2_pcie", 4);
  AgentRegistry r;
  register_builtin_agents(r);
  const std::map<std::string, std::string> sizes = {
      {"hidden", "16"}, {"segment_length", "4"}, {"max_devices", "4"}, {"validate_every", "2"}};
  auto pretrain = [&](std::int64_t steps, bool validate, const std::string& checkpoint,
                      Curve& curve) {
    auto options = sizes;
    options["checkpoint"] = checkpoint;
    auto agent = r.create("go_pretrain", options);
    auto* transferable = dynamic_cast<TransferableAgent*>(agent.get());
    Environment env_a(a.problem);
    Environment env_b(b.problem);
    Environment env_v(validation.problem);
    if (validate) transferable->set_validation({&env_v});
    transferable->train_on_set({&env_a, &env_b}, TrainBudget().with_max_steps(steps), &curve);
    if (!validate) {
      EXPECT_EQ(env_v.samples(), 0);
    }
    return transferable->checkpoint_steps();
  };
  auto zero_shot_s = [&](const std::string& checkpoint) {
    auto agent = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
    Environment env(validation.problem);
    agent->train(env, TrainBudget(), nullptr);
    return Environment(validation.problem).evaluate(agent->propose(validation.problem)).step_time_s;
  };
  const std::string chosen = (dir_ / "chosen.ckpt").string();
  Curve with_validation;
  const std::int64_t steps = pretrain(8, true, chosen, with_validation);
  double best_s = std::numeric_limits<double>::infinity();
  std::int64_t best_steps = 0;
  for (std::int64_t k = 2; k <= 8; k += 2) {
    const std::string path = (dir_ / ("after" + std::to_string(k) + ".ckpt")).string();
    Curve curve;
    EXPECT_EQ(pretrain(k, false, path, curve), k);  // without validation: the last policy
    const double s = zero_shot_s(path);
    if (s < best_s) {
      best_s = s;
      best_steps = k;
    }
    if (k == 8) {
      ASSERT_EQ(curve.points.size(), with_validation.points.size());
      for (std::size_t i = 0; i < curve.points.size(); ++i) {
        EXPECT_EQ(curve.points[i].best_step_time_s, with_validation.points[i].best_step_time_s);
        EXPECT_EQ(curve.points[i].samples, with_validation.points[i].samples);
      }
    }
  }
  EXPECT_EQ(steps, best_steps);
  EXPECT_LT(best_steps, 8);  // an earlier policy here, so the last one would not pass
  EXPECT_EQ(zero_shot_s(chosen), best_s);
}

TEST_F(GoCheckpointTest, ValidationNeedsACheckpointFile) {
  testing::ProblemFixture a(parallel_chains(2, 3), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create("go_pretrain", {{"hidden", "16"}, {"segment_length", "4"}});
  auto* transferable = dynamic_cast<TransferableAgent*>(agent.get());
  Environment env(a.problem);
  Environment env_v(a.problem);
  transferable->set_validation({&env_v});
  EXPECT_THROW(transferable->train_on_set({&env}, TrainBudget().with_max_steps(2), nullptr),
               core::Error);
  EXPECT_THROW(r.create("go_pretrain", {{"validate_every", "0"}}), core::InputError);
}

TEST_F(GoCheckpointTest, BadCheckpointsAreClearErrors) {
  testing::ProblemFixture f(parallel_chains(2, 3), "p100x4_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  auto missing = (dir_ / "missing.ckpt").string();
  auto message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", missing}})->propose(f.problem);
  });
  EXPECT_TRUE(gopt::testing::contains(message, missing)) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "go_pretrain")) << message;

  message = gopt::testing::error_of([&] { (void)r.create("go_zero_shot")->propose(f.problem); });
  EXPECT_TRUE(gopt::testing::contains(message, "checkpoint")) << message;

  auto corrupt = (dir_ / "corrupt.ckpt").string();
  std::ofstream(corrupt) << "this is not a checkpoint";
  message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", corrupt}})->propose(f.problem);
  });
  EXPECT_TRUE(gopt::testing::contains(message, corrupt)) << message;

  // A policy for two devices cannot place on four.
  testing::ProblemFixture small(parallel_chains(2, 3), "p100x2_pcie", 1);
  auto two = (dir_ / "two.ckpt").string();
  auto pretrain = r.create(
      "go_pretrain",
      {{"hidden", "16"}, {"segment_length", "4"}, {"max_devices", "2"}, {"checkpoint", two}});
  Environment env(small.problem);
  pretrain->train(env, TrainBudget().with_max_steps(1), nullptr);
  ASSERT_TRUE(std::filesystem::exists(two));
  message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", two}})->propose(f.problem);
  });
  EXPECT_TRUE(gopt::testing::contains(message, "max_devices")) << message;

  // Truncated: the first half of a good checkpoint.
  auto truncated = (dir_ / "truncated.ckpt").string();
  {
    std::ifstream in(two, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", truncated}})->propose(small.problem);
  });
  EXPECT_TRUE(gopt::testing::contains(message, truncated)) << message;
}

// A training run stopped after 3 updates and resumed from its snapshot ends exactly where
// the uninterrupted run does: curve, best time and decision (go_multitask: all three tasks,
// both random streams, the optimizer state and the reward reference come back).
TEST_F(GoCheckpointTest, StoppedTrainingResumesFromItsSnapshotAsIfNeverStopped) {
  testing::ProblemFixture f(parallel_chains(3, 4), "p100x4_pcie", 2);
  expect_resume_as_if_never_stopped(
      f.problem, "go_multitask",
      {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "3"}, {"samples_per_step", "4"}}, 6, 3,
      (dir_ / "job.pt").string());
}

// A run stopped during the handover (updates 2 to 4) resumes on the same schedule: the
// blend is a function of the update's number, and the snapshot holds the policy's own
// (per-op) options.
TEST_F(GoCheckpointTest, StoppedHandoverResumesAsIfNeverStopped) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  expect_resume_as_if_never_stopped(f.problem, "go_one",
                                    {{"hidden", "16"},
                                     {"segment_length", "8"},
                                     {"samples_per_step", "4"},
                                     {"seed", "3"},
                                     {"unit_phase", "2"},
                                     {"unit_handover", "3"}},
                                    7, 3, (dir_ / "handover.pt").string());
}

// A run stopped after its unit phase ended early (unit_patience) resumes on the same
// schedule: the switch is recomputed from the restored curve, not kept in the snapshot.
TEST_F(GoCheckpointTest, StoppedAfterAnEarlyUnitPhaseEndResumesAsIfNeverStopped) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const auto units = small_go_one_curve(f.problem, {{"unit_decisions", "true"}}, 12);
  ASSERT_LT(unit_phase_end(units, 12, 12, 2), 9) << "the unit phase should end before the stop";
  expect_resume_as_if_never_stopped(f.problem, "go_one",
                                    {{"hidden", "16"},
                                     {"segment_length", "8"},
                                     {"samples_per_step", "8"},
                                     {"seed", "3"},
                                     {"unit_phase", "12"},
                                     {"unit_patience", "2"}},
                                    12, 9, (dir_ / "patience.pt").string());
}

// A snapshot of another job (identity), or a file that is not a snapshot, is not used:
// training starts over, as without one.
TEST_F(GoCheckpointTest, ForeignOrDamagedSnapshotsStartTrainingOver) {
  testing::ProblemFixture f(parallel_chains(2, 4), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  const std::map<std::string, std::string> options = {
      {"hidden", "16"}, {"segment_length", "4"}, {"samples_per_step", "4"}};
  TrainSnapshots snapshots;
  snapshots.path = (dir_ / "job.pt").string();
  snapshots.identity = "job A";
  snapshots.interval_s = 0;  // after every update
  {
    auto agent = r.create("go_one", options);
    agent->set_snapshots(snapshots);
    Environment env(f.problem);
    agent->train(env, TrainBudget().with_max_steps(3), nullptr);
  }
  ASSERT_TRUE(std::filesystem::exists(snapshots.path));
  auto starts_at = [&](const TrainSnapshots& s) {
    auto agent = r.create("go_one", options);
    agent->set_snapshots(s);
    Environment env(f.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_steps(4), &curve);
    return curve.points.empty() ? std::int64_t{-1} : curve.points.front().step;
  };
  TrainSnapshots other = snapshots;
  other.identity = "job B";
  EXPECT_EQ(starts_at(other), 1);      // not job B's: starts over (and overwrites it)
  EXPECT_EQ(starts_at(snapshots), 1);  // job B's now: job A starts over too
  std::ofstream(snapshots.path) << "not a snapshot";
  EXPECT_EQ(starts_at(snapshots), 1);
  // Job A's own snapshot after 4 updates: a longer budget continues from it.
  auto agent = r.create("go_one", options);
  agent->set_snapshots(snapshots);
  Environment env(f.problem);
  Curve curve;
  agent->train(env, TrainBudget().with_max_steps(6), &curve);
  ASSERT_EQ(curve.points.size(), 6u);  // four replayed, two new
  EXPECT_EQ(curve.points[4].step, 5);
}

}  // namespace
}  // namespace gopt::agents::go
