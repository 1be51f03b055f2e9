// Data-parallel learners (agents/learner_group.h), GO and HDP: members that share a
// training run, here threads of one process, end in the state one learner alone reaches.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agents/learner_group.h"
#include "agents/registry.h"
#include "tests/agents/agents_test_util.h"
#include "tests/support/files.h"

#include <unistd.h>

namespace gopt::agents {
namespace {

using testing::Curve;
using testing::parallel_chains;

// A group of threads: each all-reduce waits for every member and sums their values in rank
// order, so the sums do not depend on the threads' timing.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), contributions_(static_cast<std::size_t>(size)) {
    for (int r = 0; r < size; ++r) members_.push_back(std::make_unique<Member>(*this, r));
  }
  LearnerGroup& member(int rank) { return *members_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] int calls() const { return calls_; }

 private:
  class Member final : public LearnerGroup {
   public:
    Member(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_.size_; }
    void all_reduce_sum(std::vector<double>& values) override { group_.reduce(rank_, values); }
    void all_reduce_sum(std::vector<float>& values) override {
      std::vector<double> wide(values.begin(), values.end());
      group_.reduce(rank_, wide);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(wide[i]);
    }

   private:
    ThreadGroup& group_;
    int rank_;
  };

  void reduce(int rank, std::vector<double>& values) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto generation = generation_;
    contributions_[static_cast<std::size_t>(rank)] = values;
    if (++arrived_ == size_) {
      result_.assign(values.size(), 0.0);
      for (const auto& c : contributions_) {
        ASSERT_EQ(c.size(), result_.size()) << "members passed different lengths";
        for (std::size_t i = 0; i < c.size(); ++i) result_[i] += c[i];
      }
      arrived_ = 0;
      ++generation_;
      ++calls_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation; });
    }
    values = result_;
  }

  int size_;
  std::vector<std::unique_ptr<Member>> members_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<double>> contributions_;
  std::vector<double> result_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  int calls_ = 0;
};

struct Outcome {
  std::vector<LearningCurvePoint> curve;
  core::Decision decision;
  std::int64_t samples = 0;
};

// `members` threads, each with its own problem and agent, run `train` together; member 0's
// outcome, after checking that every member ended the same.
Outcome run_members(int members, const std::function<core::Graph()>& graph,
                    const std::function<Outcome(Problem&, LearnerGroup*)>& train) {
  ThreadGroup group(members);
  std::vector<Outcome> outcomes(static_cast<std::size_t>(members));
  std::vector<std::thread> threads;
  for (int r = 0; r < members; ++r) {
    threads.emplace_back([&, r] {
      testing::ProblemFixture f(graph(), "p100x4_pcie", 2);
      outcomes[static_cast<std::size_t>(r)] =
          train(f.problem, members > 1 ? &group.member(r) : nullptr);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 1; r < members; ++r) {
    const auto& o = outcomes[static_cast<std::size_t>(r)];
    EXPECT_EQ(o.decision.placement, outcomes[0].decision.placement) << "member " << r;
    EXPECT_EQ(o.samples, outcomes[0].samples) << "member " << r;
  }
  if (members > 1) {
    EXPECT_GT(group.calls(), 0);
  }
  return outcomes[0];
}

void expect_same(const Outcome& alone, const Outcome& shared) {
  ASSERT_EQ(alone.curve.size(), shared.curve.size());
  for (std::size_t i = 0; i < alone.curve.size(); ++i) {
    EXPECT_EQ(alone.curve[i].step, shared.curve[i].step);
    EXPECT_EQ(alone.curve[i].samples, shared.curve[i].samples) << "update " << i;
    EXPECT_EQ(alone.curve[i].best_step_time_s, shared.curve[i].best_step_time_s) << "update " << i;
    EXPECT_EQ(alone.curve[i].mean_step_time_s, shared.curve[i].mean_step_time_s) << "update " << i;
  }
  EXPECT_EQ(alone.decision.placement, shared.decision.placement);
  EXPECT_EQ(alone.decision.priority, shared.decision.priority);
  EXPECT_EQ(alone.decision.fusion, shared.decision.fusion);
  EXPECT_EQ(alone.samples, shared.samples);
}

// go_one on one graph: every member draws the update's samples, simulates its share and
// takes the whole batch's update, so two or three members give exactly one learner's run
// (5 simulations per update: 4 samples and the greedy placement, dealt unevenly to 2 and 3).
TEST(DataParallelTest, GoOneSharedByTwoOrThreeMembersIsGoOneAlone) {
  AgentRegistry registry;
  register_builtin_agents(registry);
  EXPECT_TRUE(registry.info("go_one").data_parallel);
  EXPECT_TRUE(registry.info("go_pretrain").data_parallel);
  EXPECT_FALSE(registry.info("go_zero_shot").data_parallel);
  EXPECT_FALSE(registry.info("metis").data_parallel);
  auto train = [&](Problem& problem, LearnerGroup* group) {
    auto agent = registry.create("go_one", {{"hidden", "16"},
                                            {"segment_length", "4"},
                                            {"samples_per_step", "4"},
                                            {"unit_phase", "2"},
                                            {"seed", "9"}});
    agent->set_learner_group(group);
    Environment env(problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_steps(5), &curve);
    return Outcome{curve.points, agent->propose(problem), env.samples()};
  };
  auto graph = [] { return parallel_chains(3, 5, true); };
  const Outcome alone = run_members(1, graph, train);
  ASSERT_EQ(alone.curve.size(), 5u);
  EXPECT_EQ(alone.samples, 25);
  expect_same(alone, run_members(2, graph, train));
  expect_same(alone, run_members(3, graph, train));
}

// HDP: every member draws the update's samples and simulates its share (4 samples on 3
// members: 2, 1 and 1).
TEST(DataParallelTest, HdpSharedByTwoOrThreeMembersIsHdpAlone) {
  AgentRegistry registry;
  register_builtin_agents(registry);
  EXPECT_TRUE(registry.info("hdp").data_parallel);
  auto train = [&](Problem& problem, LearnerGroup* group) {
    auto agent =
        registry.create("hdp", {{"samples_per_step", "4"}, {"groups", "6"}, {"seed", "3"}});
    agent->set_learner_group(group);
    Environment env(problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_steps(6), &curve);
    return Outcome{curve.points, agent->propose(problem), env.samples()};
  };
  auto graph = [] { return parallel_chains(3, 5, true); };
  const Outcome alone = run_members(1, graph, train);
  ASSERT_EQ(alone.curve.size(), 6u);
  EXPECT_EQ(alone.samples, 24);
  expect_same(alone, run_members(2, graph, train));
  expect_same(alone, run_members(3, graph, train));
}

// go_pretrain over three graphs with training snapshots: each member writes its own snapshot
// and checkpoint at the same updates (to the same files: each through its own temporary
// file), and the checkpoint is the one pretraining alone writes.
TEST(DataParallelTest, GoPretrainSharedByTwoMembersIsGoPretrainAlone) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gopt_go_dp_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  AgentRegistry registry;
  register_builtin_agents(registry);
  auto train_in = [&](const std::string& name, const std::string& graphs_per_update = "1") {
    return [&, name, graphs_per_update](Problem& problem, LearnerGroup* group) {
      const std::string checkpoint = (dir / (name + ".ckpt")).string();
      auto agent = registry.create("go_pretrain", {{"hidden", "16"},
                                                   {"segment_length", "4"},
                                                   {"samples_per_step", "3"},
                                                   {"seed", "4"},
                                                   {"graphs_per_update", graphs_per_update},
                                                   {"checkpoint", checkpoint}});
      auto* transferable = dynamic_cast<TransferableAgent*>(agent.get());
      EXPECT_NE(transferable, nullptr);
      agent->set_learner_group(group);
      agent->set_snapshots({(dir / (name + ".pt")).string(), "pretrain test", 0.0});
      Environment env_a(problem);
      testing::ProblemFixture other(parallel_chains(2, 6), "p100x4_pcie", 3);
      Environment env_b(other.problem);
      testing::ProblemFixture third(parallel_chains(4, 2, true), "p100x4_pcie", 4);
      Environment env_c(third.problem);
      Curve curve;
      transferable->train_on_set({&env_a, &env_b, &env_c}, TrainBudget().with_max_steps(4), &curve);
      // The policy as the checkpoint holds it, on a graph neither trained on.
      testing::ProblemFixture unseen(parallel_chains(4, 3), "p100x4_pcie", 5);
      auto reader = registry.create("go_zero_shot", {{"checkpoint", checkpoint}});
      return Outcome{curve.points, reader->propose(unseen.problem),
                     env_a.samples() + env_b.samples() + env_c.samples()};
    };
  };
  auto graph = [] { return parallel_chains(3, 4); };
  const Outcome alone = run_members(1, graph, train_in("alone"));
  ASSERT_EQ(alone.curve.size(), 4u);
  expect_same(alone, run_members(2, graph, train_in("shared")));

  // Two graphs per update, their gradient averaged: 3 graphs cycle through the slots, which
  // one, two or three members split (each graph's samples and gradient on one member).
  const Outcome pairs = run_members(1, graph, train_in("pairs", "2"));
  ASSERT_EQ(pairs.curve.size(), 4u);
  EXPECT_EQ(pairs.samples, 4 * 2 * 4);  // 4 updates x 2 graphs x (3 samples + greedy)
  EXPECT_NE(pairs.decision.placement, alone.decision.placement);
  expect_same(pairs, run_members(2, graph, train_in("pairs2", "2")));
  expect_same(pairs, run_members(3, graph, train_in("pairs3", "2")));
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos)
        << "a temporary file was left behind: " << entry.path();
  }
  gopt::testing::remove_tree(dir.string());
}

}  // namespace
}  // namespace gopt::agents
