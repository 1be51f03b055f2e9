// `gopt run` shared by two ranks on localhost: through torchrun, the results equal the
// one-process run's; started by hand with the launch variables, a rank killed mid-run is
// named by the survivor within a bounded time and `--resume` (with one process) completes
// the file. Its own main: with --require-torchrun it exits 77 (CTest's "skipped") when
// neither torchrun nor `python3 -m torch.distributed.run` is found.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "experiments/results/hdf5_sink.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

extern char** environ;

namespace gopt::experiments {
namespace {

namespace fs = std::filesystem;
using gopt::testing::read_text;
using gopt::testing::unused_local_port;
using Clock = std::chrono::steady_clock;
using gopt::testing::run_command;

const std::string kGopt = GOPT_BINARY;
const std::string kSource = GOPT_SOURCE_DIR;

// How to start torchrun here ("" when it is absent); set by main.
std::string& torchrun() {
  static std::string command;
  return command;
}

std::string find_torchrun() {
  for (const std::string candidate : {"torchrun", "python3 -m torch.distributed.run",
                                      "/usr/bin/python3 -m torch.distributed.run"}) {
    if (run_command(candidate + " --help").exit_code == 0) return candidate;
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::size_t count_of(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

fs::path temp_dir() {
  return gopt::testing::make_temp_dir(
      std::string("gopt_distributed_test_") +
      ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Two pretraining units (one per seed) with the zero-shot jobs that read their
// checkpoints, a learner and baselines: 24 rows.
fs::path write_transfer_config(const fs::path& dir) {
  auto path = dir / "transfer.yaml";
  std::ofstream(path) << "name: transfer\nhardware: p100x2_pcie\nseeds: [1, 2]\nworkloads:\n"
                         "  - graph: "
                      << kSource
                      << "/datasets/graphs/mlp_tiny.json\n"
                         "  - transformer_xl_2\n"
                         "  - {graph: wavenet_2, held_out: true}\n"
                         "agents:\n"
                         "  - name: go_pretrain\n"
                         "    options: {hidden: 16, segment_length: 8, samples_per_step: 4}\n"
                         "    budget: {steps: 6}\n"
                         "  - go_zero_shot\n"
                         "  - single_device\n"
                         "  - metis\n"
                         "  - name: hdp\n"
                         "    options: {samples_per_step: 2, groups: 8}\n"
                         "    budget: {steps: 3}\n";
  return path;
}

// Rows in finishing order; compared by key. Every value but wall-clock times must match.
void expect_same_results(ResultsFile a, ResultsFile b) {
  auto by_key = [](const RunResult& x, const RunResult& y) { return x.key < y.key; };
  std::sort(a.results.begin(), a.results.end(), by_key);
  std::sort(b.results.begin(), b.results.end(), by_key);
  ASSERT_EQ(a.results.size(), b.results.size());
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    const auto& x = a.results[i];
    const auto& y = b.results[i];
    SCOPED_TRACE(x.key.text());
    EXPECT_EQ(x.key, y.key);
    EXPECT_EQ(x.order, y.order);
    EXPECT_EQ(x.problem_seed, y.problem_seed);
    EXPECT_EQ(x.best_step_time_s, y.best_step_time_s);
    EXPECT_EQ(x.oom, y.oom);
    EXPECT_EQ(x.bytes_moved, y.bytes_moved);
    EXPECT_EQ(x.lower_bound_s, y.lower_bound_s);
    EXPECT_EQ(x.decision.placement, y.decision.placement);
    EXPECT_EQ(x.decision.priority, y.decision.priority);
    EXPECT_EQ(x.decision.fusion, y.decision.fusion);
    EXPECT_EQ(x.device_busy_s, y.device_busy_s);
    EXPECT_EQ(x.device_peak_memory_bytes, y.device_peak_memory_bytes);
    EXPECT_EQ(x.samples, y.samples);
    // The checkpoint is named after the results file; every other option must match.
    auto options_of = [](std::map<std::string, std::string> o) {
      o.erase("checkpoint");
      return o;
    };
    EXPECT_EQ(options_of(x.resolved_options), options_of(y.resolved_options));
    ASSERT_EQ(x.learning_curve.size(), y.learning_curve.size());
    for (std::size_t k = 0; k < x.learning_curve.size(); ++k) {
      EXPECT_EQ(x.learning_curve[k].samples, y.learning_curve[k].samples);
      EXPECT_EQ(x.learning_curve[k].best_step_time_s, y.learning_curve[k].best_step_time_s);
      EXPECT_EQ(x.learning_curve[k].mean_step_time_s, y.learning_curve[k].mean_step_time_s);
    }
  }
}

TEST(TorchrunTest, TwoRanksGiveTheResultsOfOneProcess) {
  ASSERT_FALSE(torchrun().empty());
  auto dir = temp_dir();
  auto config = write_transfer_config(dir);
  auto start = Clock::now();
  auto one = run_command(kGopt + " run " + config.string() + " --out " + (dir / "one.h5").string());
  const double one_s = seconds_since(start);
  ASSERT_EQ(one.exit_code, 0) << one.err;

  // The form that works with Debian 12's torchrun (docs/scaling-out.md).
  start = Clock::now();
  auto two =
      run_command(torchrun() + " --redirects 1 --tee 1 --log_dir " + (dir / "logs").string() +
                  " --no_python --nproc_per_node 2 --master_addr 127.0.0.1 --master_port " +
                  std::to_string(unused_local_port()) + " " + kGopt + " run " + config.string() +
                  " --out " + (dir / "two.h5").string());
  const double two_s = seconds_since(start);
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  std::cerr << "one process: " << one_s << " s; two ranks under torchrun: " << two_s << " s\n";
  const std::string all = two.out + two.err;
  // Rank 0 shows the whole run once; both ranks ran jobs.
  EXPECT_EQ(count_of(all, "[24/24] "), 1u) << all;
  EXPECT_TRUE(contains(all, "[rank 1]")) << all;
  EXPECT_TRUE(contains(all, "transfer: 24 new results written to")) << all;
  auto a = read_results_file(dir / "one.h5");
  auto b = read_results_file(dir / "two.h5");
  ASSERT_EQ(a.results.size(), 24u);
  expect_same_results(a, b);
  EXPECT_EQ(b.incomplete, 0);
  // The rows rank 1 ran reached rank 0's file as bytes with their provenance.
  EXPECT_FALSE(b.metadata.provenance.empty());
  for (const auto& r : b.results) {
    EXPECT_EQ(r.provenance, b.metadata.provenance) << r.key.text();
    EXPECT_EQ(r.provenance.config_hash, config_hash(b.metadata.config_yaml)) << r.key.text();
  }
}

// Data parallelism: pretraining (two graphs per update, one per rank, their gradients
// exchanged), fine-tuning and go_one (each update's simulations split) shared by both
// ranks, zero-shot and a baseline dealt: 10 rows.
fs::path write_data_parallel_config(const fs::path& dir) {
  auto path = dir / "data_parallel.yaml";
  std::ofstream(path)
      << "name: data_parallel\nhardware: p100x2_pcie\nseeds: [1]\nworkloads:\n"
         "  - graph: "
      << kSource
      << "/datasets/graphs/mlp_tiny.json\n"
         "  - transformer_xl_2\n"
         "  - {graph: wavenet_2, held_out: true}\n"
         "agents:\n"
         "  - name: go_pretrain\n"
         "    options: {hidden: 16, segment_length: 8, samples_per_step: 5, graphs_per_update: 2}\n"
         "    budget: {steps: 4}\n"
         "  - name: go_finetune\n"
         "    options: {finetune_steps: 2, samples_per_step: 3}\n"
         "  - go_zero_shot\n"
         "  - name: go_one\n"
         "    options: {hidden: 16, segment_length: 8, samples_per_step: 4}\n"
         "    budget: {steps: 3}\n"
         "  - single_device\n";
  return path;
}

TEST(TorchrunTest, DataParallelLearnersGiveTheResultsOfOneProcess) {
  ASSERT_FALSE(torchrun().empty());
  auto dir = temp_dir();
  auto config = write_data_parallel_config(dir);
  auto one = run_command(kGopt + " run " + config.string() + " --out " + (dir / "one.h5").string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  // Snapshots every update: each rank writes its own at the same updates.
  auto two =
      run_command(torchrun() + " --redirects 1 --tee 1 --log_dir " + (dir / "logs").string() +
                  " --no_python --nproc_per_node 2 --master_addr 127.0.0.1 --master_port " +
                  std::to_string(unused_local_port()) + " " + kGopt + " run " + config.string() +
                  " --data-parallel --snapshot-every 0.001 --out " + (dir / "two.h5").string());
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  const std::string all = two.out + two.err;
  EXPECT_TRUE(contains(all, "5 jobs run on all 2 ranks together")) << all;
  EXPECT_TRUE(contains(all, "data_parallel: 10 new results written to")) << all;
  auto a = read_results_file(dir / "one.h5");
  auto b = read_results_file(dir / "two.h5");
  ASSERT_EQ(a.results.size(), 10u);
  expect_same_results(a, b);
  EXPECT_FALSE(fs::exists(dir / "two.snapshots") && !fs::is_empty(dir / "two.snapshots"))
      << "a finished run leaves no snapshots";
}

// Starts `gopt args...` as rank `rank` of `world` (rank 0 hosts the store on `port`), with
// stdout and stderr to files; returns the pid.
pid_t spawn_rank(int rank, int world, int port, const std::vector<std::string>& args,
                 const fs::path& out, const fs::path& err) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto name = entry.substr(0, entry.find('='));
    if (name != "RANK" && name != "WORLD_SIZE" && name != "LOCAL_RANK" && name != "MASTER_ADDR" &&
        name != "MASTER_PORT" && name.rfind("TORCHELASTIC_", 0) != 0) {
      env.push_back(entry);
    }
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(world));
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> all{kGopt};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, kGopt.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

std::size_t results_in(const fs::path& file) {
  try {
    return read_results_file(file).results.size();
  } catch (const core::InputError&) {
    return 0;  // not created yet, or caught mid-write
  }
}

// Learners long enough (HDP, 60 updates, a few seconds each) that rank 1 is still busy
// when rank 0 has written a result: 24 rows.
fs::path write_slow_config(const fs::path& dir) {
  auto path = dir / "slow.yaml";
  std::ofstream(path) << "name: slow\nhardware: p100x2_pcie\nseeds: [1, 2, 3]\nworkloads:\n"
                         "  - graph: "
                      << kSource
                      << "/datasets/graphs/mlp_tiny.json\n"
                         "  - transformer_xl_2\n"
                         "agents:\n"
                         "  - single_device\n"
                         "  - random\n"
                         "  - metis\n"
                         "  - name: hdp\n"
                         "    options: {samples_per_step: 2, groups: 8}\n"
                         "    budget: {steps: 60}\n";
  return path;
}

TEST(RankFaultTest, AKilledRankIsNamedAndResumeCompletesTheFile) {
  auto dir = temp_dir();
  auto config = write_slow_config(dir);
  auto full = dir / "full.h5";
  auto alone = run_command(kGopt + " run " + config.string() + " --out " + full.string());
  ASSERT_EQ(alone.exit_code, 0) << alone.err;

  auto file = dir / "killed.h5";
  const int port = unused_local_port();
  const std::vector<std::string> args{"run",         config.string(),  "--out",
                                      file.string(), "--peer-timeout", "5"};
  pid_t rank0 = spawn_rank(0, 2, port, args, dir / "out0.txt", dir / "err0.txt");
  pid_t rank1 = spawn_rank(1, 2, port, args, dir / "out1.txt", dir / "err1.txt");
  ASSERT_GT(rank0, 0);
  ASSERT_GT(rank1, 0);
  auto start = Clock::now();
  while (results_in(file) < 1 && seconds_since(start) < 60) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int status = 0;
  const bool rank1_running = waitpid(rank1, &status, WNOHANG) == 0;
  kill(rank1, SIGKILL);
  waitpid(rank1, &status, 0);
  ASSERT_TRUE(rank1_running) << "rank 1 ended before it could be killed: "
                             << read_text(dir / "err1.txt");

  // The survivor stops within a bounded time (the 5 s heartbeat timeout, plus the job
  // it was running) and names the dead rank.
  start = Clock::now();
  while (waitpid(rank0, &status, WNOHANG) == 0 && seconds_since(start) < 60) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double stopped_s = seconds_since(start);
  if (stopped_s >= 60) {
    kill(rank0, SIGKILL);
    waitpid(rank0, &status, 0);
    FAIL() << "rank 0 did not stop within 60 s of rank 1's death: " << read_text(dir / "err0.txt");
  }
  std::cerr << "rank 0 stopped " << stopped_s << " s after rank 1 was killed\n";
  const auto err0 = read_text(dir / "err0.txt");
  ASSERT_TRUE(WIFEXITED(status)) << err0;
  EXPECT_EQ(WEXITSTATUS(status), 4) << err0;
  EXPECT_TRUE(contains(err0, "rank 1 stopped answering")) << err0;
  EXPECT_TRUE(contains(err0, "--resume")) << err0;

  const auto partial = read_results_file(file);  // readable
  EXPECT_GE(partial.results.size(), 1u);
  EXPECT_LT(partial.results.size(), 24u);

  // Another world size (one process) finishes the run.
  auto resumed =
      run_command(kGopt + " run " + config.string() + " --resume --out " + file.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "resuming:")) << resumed.err;
  expect_same_results(read_results_file(full), read_results_file(file));
}

// Ranks started with different configs must not deal different jobs: the check over the
// process group stops them with an input error.
TEST(RankFaultTest, RanksWithDifferentConfigsStop) {
  auto dir = temp_dir();
  auto config = write_slow_config(dir);
  const int port = unused_local_port();
  auto file = dir / "mixed.h5";
  pid_t rank0 = spawn_rank(0, 2, port,
                           {"run", config.string(), "--out", file.string(), "--peer-timeout", "10"},
                           dir / "out0.txt", dir / "err0.txt");
  pid_t rank1 = spawn_rank(1, 2, port,
                           {"run", config.string(), "--out", file.string(), "--peer-timeout", "10",
                            "--set", "seeds=[3]"},
                           dir / "out1.txt", dir / "err1.txt");
  int status0 = 0;
  int status1 = 0;
  waitpid(rank0, &status0, 0);
  waitpid(rank1, &status1, 0);
  const auto err0 = read_text(dir / "err0.txt");
  const auto err1 = read_text(dir / "err1.txt");
  ASSERT_TRUE(WIFEXITED(status0) && WIFEXITED(status1)) << err0 << err1;
  EXPECT_EQ(WEXITSTATUS(status0), 1) << err0;
  EXPECT_EQ(WEXITSTATUS(status1), 1) << err1;
  EXPECT_TRUE(contains(err0, "the ranks were started with different configs")) << err0;
  EXPECT_FALSE(fs::exists(file)) << "nothing ran";
}

}  // namespace
}  // namespace gopt::experiments

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  bool require_torchrun = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--require-torchrun") == 0) require_torchrun = true;
  }
  gopt::experiments::torchrun() = gopt::experiments::find_torchrun();
  if (require_torchrun && gopt::experiments::torchrun().empty()) {
    std::cout << "SKIPPED: neither torchrun nor `python3 -m torch.distributed.run` was found "
                 "(Debian: python3-torch)\n";
    return 77;
  }
  return RUN_ALL_TESTS();
}
