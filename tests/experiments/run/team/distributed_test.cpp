// The pieces of a run shared by ranks that need no second process: the launch variables
// and their errors, an unreachable store, how items are dealt to ranks, and the bytes a
// rank sends to rank 0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "core/errors.h"
#include "experiments/run/team/distributed.h"
#include "experiments/run/team/team.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"

namespace gopt::experiments {
namespace {

using gopt::testing::unused_local_port;

using gopt::testing::contains;
using gopt::testing::error_of;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::map<std::string, std::string> torchrun_vars() {
  return {{"RANK", "1"},
          {"WORLD_SIZE", "4"},
          {"LOCAL_RANK", "1"},
          {"MASTER_ADDR", "node0"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"},
          {"TORCHELASTIC_RESTART_COUNT", "2"}};
}

std::string launch_error(std::map<std::string, std::string> vars) {
  return error_of([&] { (void)read_launch_environment(env_of(std::move(vars))); });
}

TEST(LaunchEnvironmentTest, NoVariablesIsARunAlone) {
  EXPECT_FALSE(read_launch_environment(env_of({})).has_value());
  // Empty counts as unset; LOCAL_RANK or MASTER_* alone do not make a launch.
  EXPECT_FALSE(
      read_launch_environment(env_of({{"RANK", ""}, {"WORLD_SIZE", ""}, {"MASTER_ADDR", "x"}}))
          .has_value());
}

TEST(LaunchEnvironmentTest, ReadsWhatTorchrunSets) {
  const auto launch = read_launch_environment(env_of(torchrun_vars()));
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(launch->rank, 1);
  EXPECT_EQ(launch->world_size, 4);
  EXPECT_EQ(launch->local_rank, 1);
  EXPECT_EQ(launch->master_addr, "node0");
  EXPECT_EQ(launch->master_port, 29500);
  EXPECT_TRUE(launch->agent_store);
  EXPECT_EQ(launch->restart_count, 2);

  // Started by hand: rank 0 hosts the store, LOCAL_RANK defaults to RANK.
  auto vars = torchrun_vars();
  vars.erase("TORCHELASTIC_USE_AGENT_STORE");
  vars.erase("TORCHELASTIC_RESTART_COUNT");
  vars.erase("LOCAL_RANK");
  vars["RANK"] = "3";
  const auto by_hand = read_launch_environment(env_of(vars));
  ASSERT_TRUE(by_hand.has_value());
  EXPECT_FALSE(by_hand->agent_store);
  EXPECT_EQ(by_hand->local_rank, 3);
  EXPECT_EQ(by_hand->restart_count, 0);

  // One process needs no store address.
  const auto alone = read_launch_environment(env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  ASSERT_TRUE(alone.has_value());
  EXPECT_EQ(alone->world_size, 1);
}

TEST(LaunchEnvironmentTest, AMissingVariableIsNamed) {
  auto vars = torchrun_vars();
  vars.erase("RANK");
  auto e = launch_error(vars);
  EXPECT_TRUE(contains(e, "environment variable RANK:")) << e;
  EXPECT_TRUE(contains(e, "WORLD_SIZE=4")) << e;

  vars = torchrun_vars();
  vars.erase("WORLD_SIZE");
  e = launch_error(vars);
  EXPECT_TRUE(contains(e, "environment variable WORLD_SIZE:")) << e;

  vars = torchrun_vars();
  vars.erase("MASTER_ADDR");
  e = launch_error(vars);
  EXPECT_TRUE(contains(e, "environment variable MASTER_ADDR:")) << e;

  vars = torchrun_vars();
  vars["MASTER_PORT"] = "";
  e = launch_error(vars);
  EXPECT_TRUE(contains(e, "environment variable MASTER_PORT:")) << e;
}

TEST(LaunchEnvironmentTest, AWrongValueIsNamedWithWhatWasFound) {
  auto with = [](const std::string& name, const std::string& value) {
    auto vars = torchrun_vars();
    vars[name] = value;
    return launch_error(vars);
  };
  auto e = with("RANK", "4");
  EXPECT_TRUE(contains(e,
                       "environment variable RANK: expected a whole number from 0 to 3 "
                       "(below WORLD_SIZE=4), found 4"))
      << e;
  e = with("WORLD_SIZE", "two");
  EXPECT_TRUE(contains(e, "environment variable WORLD_SIZE:")) << e;
  EXPECT_TRUE(contains(e, "found 'two'")) << e;
  e = with("WORLD_SIZE", "0");
  EXPECT_TRUE(contains(e, "environment variable WORLD_SIZE:")) << e;
  e = with("RANK", "-1");
  EXPECT_TRUE(contains(e, "environment variable RANK:")) << e;
  e = with("RANK", "1x");
  EXPECT_TRUE(contains(e, "found '1x'")) << e;
  e = with("LOCAL_RANK", "9");
  EXPECT_TRUE(contains(e, "environment variable LOCAL_RANK:")) << e;
  e = with("MASTER_PORT", "70000");
  EXPECT_TRUE(contains(e,
                       "environment variable MASTER_PORT: expected a whole number from 1 to "
                       "65535, found 70000"))
      << e;
  e = with("TORCHELASTIC_USE_AGENT_STORE", "maybe");
  EXPECT_TRUE(contains(e,
                       "environment variable TORCHELASTIC_USE_AGENT_STORE: expected true or "
                       "false (also yes/no, on/off, 1/0), found 'maybe'"))
      << e;
  e = with("WORLD_SIZE", "99999999999");
  EXPECT_TRUE(contains(e, "environment variable WORLD_SIZE:")) << e;
}

TEST(DistributedTest, AnUnreachableStoreIsAnInputErrorWithinTheTimeout) {
  LaunchEnvironment launch;
  launch.rank = 1;
  launch.world_size = 2;
  launch.master_addr = "127.0.0.1";
  launch.master_port = unused_local_port();
  const auto start = std::chrono::steady_clock::now();
  const auto e =
      error_of([&] { Distributed peers(launch, DistributedOptions().with_timeout_s(1)); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(contains(e, "MASTER_ADDR and MASTER_PORT")) << e;
  EXPECT_TRUE(
      contains(e, "could not reach the store at 127.0.0.1:" + std::to_string(launch.master_port)))
      << e;
  EXPECT_LT(seconds, 20) << "the timeout bounds the wait";
}

// The simulator's diamond costs: 10, 15, 20, 25 on two ranks are dealt longest first to
// the emptier rank: 25 -> 0, 20 -> 1, 15 -> 1 (20 < 25), 10 -> 0 (25 < 35); 35 each.
TEST(PlanRanksTest, DealsLongestFirstToTheLeastLoadedRank) {
  const auto plan = plan_ranks({10, 15, 20, 25}, {-1, -1, -1, -1}, 2);
  EXPECT_EQ(plan.rank_of, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(plan.order[0], (std::vector<std::size_t>{3, 0}));
  EXPECT_EQ(plan.order[1], (std::vector<std::size_t>{2, 1}));
  // One rank takes everything, longest first; more ranks than items leave some idle.
  EXPECT_EQ(plan_ranks({10, 15, 20, 25}, {-1, -1, -1, -1}, 1).order[0],
            (std::vector<std::size_t>{3, 2, 1, 0}));
  const auto wide = plan_ranks({5, 7}, {-1, -1}, 3);
  EXPECT_EQ(wide.rank_of, (std::vector<int>{1, 0}));
  EXPECT_TRUE(wide.order[2].empty());
}

// A pretraining (item 0, 30 s) and the two jobs that read its checkpoint (1: 5 s, 3: 8 s)
// form one group of 43 s; it goes to rank 0, then 12 and 10 to rank 1. The group runs
// its pretraining first, then its jobs longest first.
TEST(PlanRanksTest, JobsStayWithThePretrainingTheyWaitFor) {
  const auto plan = plan_ranks({30, 5, 10, 8, 12}, {-1, 0, -1, 0, -1}, 2);
  EXPECT_EQ(plan.rank_of, (std::vector<int>{0, 0, 1, 0, 1}));
  EXPECT_EQ(plan.order[0], (std::vector<std::size_t>{0, 3, 1}));
  EXPECT_EQ(plan.order[1], (std::vector<std::size_t>{4, 2}));
}

RunResult full_result() {
  RunResult r;
  r.key = {"gnmt_2", "go_one", 7};
  r.order = 12;
  r.agent_type = "go_one";
  r.learner = true;
  r.held_out = true;
  r.graph = "gnmt_2";
  r.hardware = "p100x2_pcie";
  r.problem_seed = 0xfedcba9876543210ULL;
  r.num_nodes = 17708;
  r.num_devices = 2;
  r.best_step_time_s = 0.1 + 0.2;  // not exactly 0.3: every bit must survive
  r.oom = true;
  r.oom_device = 1;
  r.lower_bound_critical_path_s = 1e-9;
  r.lower_bound_work_s = 3.5;
  r.lower_bound_s = 3.75;
  r.bytes_moved = 1LL << 40;
  r.wall_s = 12.5;
  r.samples = 4096;
  r.decision.placement = std::vector<core::DeviceId>{0, 1, 1};
  r.decision.fusion = std::vector<std::int32_t>{2, 0, 5};
  r.device_busy_s = {0.25, 0.5};
  r.device_peak_memory_bytes = {1 << 20, 3 << 20};
  r.learning_curve = {{1, 8, std::numeric_limits<double>::infinity(), 0.4, 1.5},
                      {2, 16, 0.3, 0.35, 3.0}};
  r.best_improvements = {{3, 0.5}, {11, 0.25}};
  r.options = {{"hidden", "16"}};
  r.resolved_options = {{"hidden", "16"}, {"learning_rate", "0.001"}};
  r.measured_step_time_s = 0.31;
  r.measured_backend = "cpu: 2 worker threads";
  r.measured_spread = 0.02;
  r.op_times = "profiled";
  r.op_times_in_sample = true;
  r.provenance.gopt_version = "0.1.0";
  r.provenance.git_revision = "0123abcd-dirty";
  r.provenance.host = "rank-1-host";  // the rank that ran the job, not rank 0
  r.provenance.cpu_numerics = "gopt kernels avx2; ATen AVX2; OpenBLAS Haswell";
  r.provenance.libraries = "LibTorch 1.13.0; HDF5 1.10.8";
  r.provenance.command = "gopt run 'a b.yaml' --set seeds=[1,2]";
  r.provenance.config_hash = "00ff00ff00ff00ff";
  r.budget = agents::TrainBudget().with_max_steps(200).with_max_samples(1 << 20).with_max_seconds(
      0.1 + 0.7);
  return r;
}

TEST(TeamEventTest, ResultsSurviveTheBytesExactly) {
  TeamEvent e;
  e.kind = TeamEvent::Kind::kFinished;
  e.worker = 3;
  e.item = 41;
  e.step = 9;
  e.results = {full_result(), RunResult{}};
  e.failures = {{"wavenet_2 / hdp / seed 1", "out of patience"}};
  e.text = "hello";
  e.interrupted = true;
  const TeamEvent back = decode_event(encode_event(e));
  EXPECT_EQ(back.kind, e.kind);
  EXPECT_EQ(back.worker, 3);
  EXPECT_EQ(back.item, 41);
  EXPECT_EQ(back.step, 9);
  EXPECT_EQ(back.failures, e.failures);
  EXPECT_EQ(back.text, "hello");
  EXPECT_TRUE(back.interrupted);
  ASSERT_EQ(back.results.size(), 2u);
  const RunResult& a = e.results[0];
  const RunResult& b = back.results[0];
  EXPECT_EQ(b.key, a.key);
  EXPECT_EQ(b.order, a.order);
  EXPECT_EQ(b.agent_type, a.agent_type);
  EXPECT_EQ(b.learner, a.learner);
  EXPECT_EQ(b.held_out, a.held_out);
  EXPECT_EQ(b.graph, a.graph);
  EXPECT_EQ(b.hardware, a.hardware);
  EXPECT_EQ(b.problem_seed, a.problem_seed);
  EXPECT_EQ(b.num_nodes, a.num_nodes);
  EXPECT_EQ(b.num_devices, a.num_devices);
  EXPECT_EQ(b.best_step_time_s, a.best_step_time_s);
  EXPECT_EQ(b.oom, a.oom);
  EXPECT_EQ(b.oom_device, a.oom_device);
  EXPECT_EQ(b.lower_bound_critical_path_s, a.lower_bound_critical_path_s);
  EXPECT_EQ(b.lower_bound_work_s, a.lower_bound_work_s);
  EXPECT_EQ(b.lower_bound_s, a.lower_bound_s);
  EXPECT_EQ(b.bytes_moved, a.bytes_moved);
  EXPECT_EQ(b.wall_s, a.wall_s);
  EXPECT_EQ(b.samples, a.samples);
  EXPECT_EQ(b.decision.placement, a.decision.placement);
  EXPECT_FALSE(b.decision.priority.has_value());
  EXPECT_EQ(b.decision.fusion, a.decision.fusion);
  EXPECT_EQ(b.device_busy_s, a.device_busy_s);
  EXPECT_EQ(b.device_peak_memory_bytes, a.device_peak_memory_bytes);
  ASSERT_EQ(b.learning_curve.size(), 2u);
  EXPECT_TRUE(std::isinf(b.learning_curve[0].best_step_time_s));
  EXPECT_EQ(b.learning_curve[1].step, 2);
  EXPECT_EQ(b.learning_curve[1].samples, 16);
  EXPECT_EQ(b.learning_curve[1].mean_step_time_s, 0.35);
  EXPECT_EQ(b.learning_curve[1].wall_s, 3.0);
  EXPECT_EQ(b.best_improvements, a.best_improvements);
  EXPECT_EQ(b.options, a.options);
  EXPECT_EQ(b.resolved_options, a.resolved_options);
  EXPECT_EQ(b.measured_step_time_s, a.measured_step_time_s);
  EXPECT_EQ(b.measured_backend, a.measured_backend);
  EXPECT_EQ(b.measured_spread, a.measured_spread);
  EXPECT_EQ(b.op_times, a.op_times);
  EXPECT_EQ(b.op_times_in_sample, a.op_times_in_sample);
  EXPECT_EQ(b.provenance, a.provenance);
  EXPECT_EQ(b.provenance.host, "rank-1-host");
  ASSERT_TRUE(b.budget.has_value());
  EXPECT_EQ(b.budget->max_steps, 200);
  EXPECT_EQ(b.budget->max_samples, 1 << 20);
  EXPECT_EQ(b.budget->max_seconds, 0.1 + 0.7);
  EXPECT_EQ(back.results[1].key, RunResult{}.key);
  EXPECT_TRUE(back.results[1].provenance.empty());
  EXPECT_FALSE(back.results[1].budget.has_value());
}

TEST(TeamEventTest, DamagedBytesAreAnError) {
  TeamEvent e;
  e.results = {full_result()};
  auto bytes = encode_event(e);
  auto truncated = bytes;
  truncated.resize(bytes.size() / 2);
  EXPECT_THROW((void)decode_event(truncated), core::Error);
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_THROW((void)decode_event(longer), core::Error);
  auto foreign = bytes;
  foreign[0] ^= 0xff;
  EXPECT_THROW((void)decode_event(foreign), core::Error);
}

}  // namespace
}  // namespace gopt::experiments
