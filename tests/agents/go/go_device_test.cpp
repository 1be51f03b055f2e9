// Where the GO policy runs (GoOptions::device, agents/torch_utils.h resolve_compute_device):
// the option's values are checked when an agent is created, `cuda` without a GPU is an
// error naming the option, and on a GPU (these tests skip with a message without one) GO
// trains there, reproducibly, with checkpoints that read on either device.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "agents/go/go_agent.h"
#include "agents/go/go_checkpoint.h"
#include "agents/go/go_features.h"
#include "agents/registry.h"
#include "agents/torch_utils.h"
#include "core/errors.h"
#include "tests/agents/agents_test_util.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"

namespace gopt::agents::go {
namespace {

using testing::parallel_chains;

std::unique_ptr<Agent> make(const std::string& agent, std::map<std::string, std::string> options) {
  AgentRegistry r;
  register_builtin_agents(r);
  return r.create(agent, options);
}

const std::map<std::string, std::string> kSmall = {
    {"hidden", "16"}, {"segment_length", "4"}, {"seed", "3"}};

std::map<std::string, std::string> small_on(const std::string& device) {
  auto options = kSmall;
  options["device"] = device;
  return options;
}

TEST(GoDeviceTest, TheOptionTakesAutoCpuOrCudaOnly) {
  for (const char* agent :
       {"go_one", "go_pretrain", "go_finetune", "go_zero_shot", "go_multitask"}) {
    AgentRegistry r;
    register_builtin_agents(r);
    const auto& listed = r.info(agent).options;
    const auto it = std::find_if(listed.begin(), listed.end(),
                                 [](const OptionSpec& o) { return o.name == "device"; });
    ASSERT_NE(it, listed.end()) << agent;
    EXPECT_EQ(it->default_value, "auto") << agent;
  }
  const std::string message = gopt::testing::error_of([] {
    (void)make("go_one", {{"device", "gpu"}});
  });
  EXPECT_TRUE(gopt::testing::contains(message, "device")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "cuda")) << message;
}

TEST(GoDeviceTest, CpuAndAutoWithoutAGpuTrainOnTheCpuAlike) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible: auto takes it";
  testing::ProblemFixture f(parallel_chains(2, 4), "p100x2_pcie", 2);
  auto run = [&](const std::string& device) {
    auto agent = make("go_one", small_on(device));
    Environment env(f.problem);
    agent->train(env, TrainBudget().with_max_steps(3), nullptr);
    return std::make_pair(env.best_step_time_s(), *agent->propose(f.problem).placement);
  };
  EXPECT_EQ(run("cpu"), run("auto"));
}

TEST(GoDeviceTest, CudaWithoutAGpuIsAnErrorNamingTheOption) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible";
  testing::ProblemFixture f(parallel_chains(2, 4), "p100x2_pcie", 2);
  auto agent = make("go_one", small_on("cuda"));
  Environment env(f.problem);
  const std::string message =
      gopt::testing::error_of([&] { agent->train(env, TrainBudget().with_max_steps(1), nullptr); });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.device")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "no GPU")) << message;
}

TEST(GoDeviceTest, GraphTensorsCopiesToADeviceOnceAndNotIntoCopies) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU: LibTorch has no CUDA or sees none";
  const auto compiled = core::CompiledGraph::compile(parallel_chains(2, 4));
  const GraphTensors g = make_graph_tensors(compiled);
  const torch::Device gpu(torch::kCUDA, 0);
  EXPECT_EQ(&g.on(torch::kCPU), &g);
  const GraphTensors& there = g.on(gpu);
  EXPECT_TRUE(there.kinds.is_cuda());
  EXPECT_TRUE(there.edge_src.is_cuda());
  EXPECT_EQ(&g.on(gpu), &there);
  const GraphTensors copy = g;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_NE(&copy.on(gpu), &there);
}

TEST(GoDeviceTest, GoOneTrainsOnTheGpuReproduciblyAndItsCheckpointReadsOnTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU: LibTorch has no CUDA or sees none";
  testing::ProblemFixture f(parallel_chains(3, 4), "p100x4_pcie", 2);
  auto run = [&](const std::string& device) {
    auto agent = make("go_one", small_on(device));
    Environment env(f.problem);
    testing::Curve curve;
    agent->train(env, TrainBudget().with_max_steps(4), &curve);
    std::vector<double> means;
    for (const auto& p : curve.points) means.push_back(p.mean_step_time_s);
    return std::make_pair(means, *agent->propose(f.problem).placement);
  };
  const auto a = run("cuda");
  const auto b = run("cuda");
  EXPECT_EQ(a, b);  // deterministic algorithms: the same seed, the same run
  EXPECT_EQ(a.second.size(), static_cast<std::size_t>(f.compiled.num_nodes()));

  const auto dir = std::filesystem::path(gopt::testing::make_temp_dir("gopt_go_device"));
  const std::string checkpoint = (dir / "gpu.ckpt").string();
  auto options = small_on("cuda");
  options["checkpoint"] = checkpoint;
  options["max_devices"] = "4";
  auto pretrain = make("go_pretrain", options);
  auto* transferable = dynamic_cast<TransferableAgent*>(pretrain.get());
  ASSERT_NE(transferable, nullptr);
  Environment env(f.problem);
  transferable->train_on_set({&env}, TrainBudget().with_max_steps(2), nullptr);
  const TrainedPolicy on_cpu = load_checkpoint(checkpoint, 1e-3, torch::kCPU);
  EXPECT_TRUE(on_cpu.policy->device().is_cpu());
  const TrainedPolicy on_gpu = load_checkpoint(checkpoint, 1e-3, torch::Device(torch::kCUDA, 0));
  EXPECT_TRUE(on_gpu.policy->device().is_cuda());
  auto zero_shot = make("go_zero_shot", {{"checkpoint", checkpoint}, {"device", "cpu"}});
  EXPECT_EQ(zero_shot->propose(f.problem).placement->size(),
            static_cast<std::size_t>(f.compiled.num_nodes()));
  gopt::testing::remove_tree(dir.string());
}

}  // namespace
}  // namespace gopt::agents::go
