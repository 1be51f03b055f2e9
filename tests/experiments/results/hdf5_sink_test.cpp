// The HDF5 results file: round trip of every field, resume bookkeeping, and clear errors
// for files that are missing, not HDF5, truncated or not written by gopt.
#include "experiments/results/hdf5_sink.h"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "core/errors.h"
#include "experiments/results/hdf5_digests.h"
#include "tests/support/files.h"

namespace gopt::experiments {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  return gopt::testing::make_temp_dir(
      std::string("gopt_hdf5_test_") +
      ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

Provenance sample_provenance(const std::string& revision, const std::string& host) {
  Provenance p;
  p.gopt_version = "0.1.0";
  p.git_revision = revision;
  p.host = host;
  p.cpu_numerics = "gopt kernels baseline (forced); ATen NO AVX; OpenBLAS Prescott";
  p.libraries = "LibTorch 1.13.0; HDF5 1.10.8";
  p.command = "gopt run demo.yaml";
  p.config_hash = config_hash("name: demo\nagents: [hdp]\n");
  return p;
}

RunResult sample_result(const std::string& agent, std::uint64_t seed, bool learner) {
  RunResult r;
  r.key = {"wavenet_2", agent, seed};
  r.order = static_cast<std::int64_t>(seed);
  r.agent_type = agent;
  r.learner = learner;
  r.held_out = true;
  r.graph = "wavenet_2";
  r.hardware = "p100x4_pcie";
  r.problem_seed = 0xfedcba9876543210ULL;
  r.num_nodes = 5;
  r.num_devices = 2;
  r.best_step_time_s = 0.0123456789;
  r.oom = learner;
  r.oom_device = learner ? 1 : -1;
  r.lower_bound_critical_path_s = 0.001;
  r.lower_bound_work_s = 0.002;
  r.lower_bound_s = 0.0025;
  r.bytes_moved = 1LL << 40;
  r.wall_s = 1.5;
  r.samples = 42;
  r.decision.placement = std::vector<core::DeviceId>{0, 1, 1, 0, 1};
  if (learner) r.decision.priority = std::vector<std::int32_t>{5, 4, 3, 2, 1};
  r.device_busy_s = {0.01, 0.005};
  r.device_peak_memory_bytes = {1000, 2000};
  if (learner) {
    r.learning_curve.push_back({1, 4, std::numeric_limits<double>::infinity(), 100.0, 0.1});
    r.learning_curve.push_back({2, 8, 0.0123456789, 0.02, 0.2});
    r.best_improvements = {{5, 0.02}, {7, 0.0123456789}};
  }
  r.options = {{"learning_rate", "0.05"}, {"seed", "3"}};
  if (learner) r.resolved_options = {{"learning_rate", "0.05"}, {"seed", "3"}, {"clip", "0.2"}};
  r.provenance = sample_provenance("abc", "host");
  if (learner) r.budget = agents::TrainBudget().with_max_steps(200).with_max_seconds(60);
  return r;
}

RunMetadata sample_metadata() {
  RunMetadata m;
  m.experiment = "demo";
  m.table = "placement";
  m.config_source = "demo.yaml";
  m.config_yaml = "name: demo\nagents: [hdp]\n";
  m.provenance = sample_provenance("abc", "host");
  m.start_time = "2026-01-01T00:00:00Z";
  return m;
}

// A new file at `path` holding `result`, written by a run of sample_metadata().
void write_file_with(const fs::path& path, const RunResult& result) {
  Hdf5Sink sink(path);
  sink.begin(sample_metadata());
  sink.write(result);
}

void expect_same(const RunResult& a, const RunResult& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.order, b.order);
  EXPECT_EQ(a.agent_type, b.agent_type);
  EXPECT_EQ(a.learner, b.learner);
  EXPECT_EQ(a.held_out, b.held_out);
  EXPECT_EQ(a.graph, b.graph);
  EXPECT_EQ(a.hardware, b.hardware);
  EXPECT_EQ(a.problem_seed, b.problem_seed);
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.num_devices, b.num_devices);
  EXPECT_EQ(a.best_step_time_s, b.best_step_time_s);
  EXPECT_EQ(a.oom, b.oom);
  EXPECT_EQ(a.oom_device, b.oom_device);
  EXPECT_EQ(a.lower_bound_critical_path_s, b.lower_bound_critical_path_s);
  EXPECT_EQ(a.lower_bound_work_s, b.lower_bound_work_s);
  EXPECT_EQ(a.lower_bound_s, b.lower_bound_s);
  EXPECT_EQ(a.bytes_moved, b.bytes_moved);
  EXPECT_EQ(a.wall_s, b.wall_s);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.decision.placement, b.decision.placement);
  EXPECT_EQ(a.decision.priority, b.decision.priority);
  EXPECT_EQ(a.decision.fusion, b.decision.fusion);
  EXPECT_EQ(a.device_busy_s, b.device_busy_s);
  EXPECT_EQ(a.device_peak_memory_bytes, b.device_peak_memory_bytes);
  ASSERT_EQ(a.learning_curve.size(), b.learning_curve.size());
  for (std::size_t i = 0; i < a.learning_curve.size(); ++i) {
    EXPECT_EQ(a.learning_curve[i].step, b.learning_curve[i].step);
    EXPECT_EQ(a.learning_curve[i].samples, b.learning_curve[i].samples);
    EXPECT_EQ(a.learning_curve[i].best_step_time_s, b.learning_curve[i].best_step_time_s);
    EXPECT_EQ(a.learning_curve[i].mean_step_time_s, b.learning_curve[i].mean_step_time_s);
    EXPECT_EQ(a.learning_curve[i].wall_s, b.learning_curve[i].wall_s);
  }
  EXPECT_EQ(a.best_improvements, b.best_improvements);
  EXPECT_EQ(a.options, b.options);
  EXPECT_EQ(a.resolved_options, b.resolved_options);
  EXPECT_EQ(a.provenance, b.provenance);
  ASSERT_EQ(a.budget.has_value(), b.budget.has_value());
  if (a.budget) {
    EXPECT_EQ(a.budget->max_steps, b.budget->max_steps);
    EXPECT_EQ(a.budget->max_samples, b.budget->max_samples);
    EXPECT_EQ(a.budget->max_seconds, b.budget->max_seconds);
  }
}

std::string error_of(const fs::path& path) {
  try {
    (void)read_results_file(path);
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Hdf5SinkTest, RoundTripsEveryField) {
  auto dir = temp_dir();
  auto path = dir / "sub" / "r.h5";  // parent directories are created
  auto a = sample_result("metis", 2, false);
  auto b = sample_result("hdp", 1, true);
  {
    Hdf5Sink sink(path);
    sink.begin(sample_metadata());
    sink.write(a);
    sink.write(b);
  }
  auto file = read_results_file(path);
  EXPECT_EQ(file.metadata.experiment, "demo");
  EXPECT_EQ(file.metadata.table, "placement");
  EXPECT_EQ(file.metadata.config_yaml, "name: demo\nagents: [hdp]\n");
  EXPECT_EQ(file.metadata.provenance.gopt_version, "0.1.0");
  EXPECT_EQ(file.metadata.provenance.git_revision, "abc");
  EXPECT_EQ(file.metadata.provenance.host, "host");
  EXPECT_EQ(file.metadata.start_time, "2026-01-01T00:00:00Z");
  EXPECT_EQ(file.metadata.provenance, sample_provenance("abc", "host"));
  EXPECT_EQ(file.format_version, kResultsFormatVersion);
  ASSERT_EQ(file.metadata.history.size(), 1u);  // the first run is the history's first entry
  EXPECT_EQ(file.metadata.history[0].provenance, sample_provenance("abc", "host"));
  EXPECT_EQ(file.metadata.history[0].start_time, "2026-01-01T00:00:00Z");
  EXPECT_EQ(file.metadata.history[0].config_yaml, "");  // the file's own config
  EXPECT_EQ(file.incomplete, 0);
  ASSERT_EQ(file.results.size(), 2u);
  expect_same(file.results[0], b);  // order 1 before order 2
  expect_same(file.results[1], a);
  EXPECT_TRUE(std::isinf(file.results[0].learning_curve[0].best_step_time_s));
  EXPECT_EQ(file.results[0].best_improvements.size(), 2u);
  EXPECT_TRUE(file.results[1].best_improvements.empty());  // metis does not learn
  ASSERT_TRUE(file.results[0].budget.has_value());
  EXPECT_EQ(file.results[0].budget->max_samples, std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(file.results[1].budget.has_value());  // metis does not learn
}

// Issue #29: a resume overwrote the file's config, revision and host. The file keeps its
// first run's; every run, the first included, is in its history, with the config of a run
// that differs from the file's.
TEST(Hdf5SinkTest, ResumeKeepsTheFirstRunsMetadataAndAppendsToTheHistory) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  write_file_with(path, sample_result("hdp", 1, true));
  RunMetadata later = sample_metadata();
  later.config_yaml = "name: demo\nagents: [hdp, metis]\n";
  later.config_source = "elsewhere/demo.yaml";
  later.start_time = "2026-02-01T00:00:00Z";
  later.provenance = sample_provenance("def", "other-host");
  later.provenance.command = "gopt run demo.yaml --resume";
  later.provenance.config_hash = config_hash(later.config_yaml);
  {
    Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    sink.begin(later);
    auto r = sample_result("metis", 2, false);
    r.provenance = later.provenance;
    sink.write(r);
  }
  const auto file = read_results_file(path);
  EXPECT_EQ(file.metadata.provenance.git_revision, "abc");
  EXPECT_EQ(file.metadata.provenance.host, "host");
  EXPECT_EQ(file.metadata.config_yaml, "name: demo\nagents: [hdp]\n");
  EXPECT_EQ(file.metadata.config_source, "demo.yaml");
  EXPECT_EQ(file.metadata.start_time, "2026-01-01T00:00:00Z");
  ASSERT_EQ(file.metadata.history.size(), 2u);
  EXPECT_EQ(file.metadata.history[0].provenance.git_revision, "abc");
  EXPECT_EQ(file.metadata.history[0].config_yaml, "");
  EXPECT_EQ(file.metadata.history[1].provenance, later.provenance);
  EXPECT_EQ(file.metadata.history[1].start_time, "2026-02-01T00:00:00Z");
  EXPECT_EQ(file.metadata.history[1].config_yaml, later.config_yaml);
  // Each row says which run wrote it.
  ASSERT_EQ(file.results.size(), 2u);
  EXPECT_EQ(file.results[0].provenance.git_revision, "abc");
  EXPECT_EQ(file.results[1].provenance.git_revision, "def");
  EXPECT_EQ(file.results[1].provenance.config_hash, config_hash(later.config_yaml));
  // A third run with the file's own config adds an entry without a config.
  {
    Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    sink.begin(sample_metadata());
  }
  const auto third = read_results_file(path).metadata.history;
  ASSERT_EQ(third.size(), 3u);
  EXPECT_EQ(third[2].config_yaml, "");
}

TEST(Hdf5SinkTest, RefusesToOverwriteUnlessAsked) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  { Hdf5Sink sink(path); }
  try {
    Hdf5Sink again(path);
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              path.string() +
                  ": the results file exists; continue it with --resume, or replace it with "
                  "--overwrite");
  }
  Hdf5Sink replaced(path, Hdf5SinkOptions().with_open_mode(OpenMode::kOverwrite));
  EXPECT_TRUE(replaced.existing().empty());
}

TEST(Hdf5SinkTest, ResumeFindsCompleteResultsAndDropsHalfWrittenOnes) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  write_file_with(path, sample_result("metis", 1, false));
  {
    // A run killed while writing leaves a group without the `complete` attribute.
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t g = H5Gcreate2(f, "/results/wavenet_2:hdp:1", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(g, 0);
    H5Gclose(g);
    H5Fclose(f);
  }
  EXPECT_EQ(read_results_file(path).incomplete, 1);
  Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
  ASSERT_EQ(sink.existing().size(), 1u);
  EXPECT_EQ(sink.existing()[0], (ResultKey{"wavenet_2", "metis", 1}));
  EXPECT_EQ(sink.existing_config(), "name: demo\nagents: [hdp]\n");
  sink.begin(sample_metadata());
  sink.write(sample_result("hdp", 1, true));
  sink.close();
  auto file = read_results_file(path);
  EXPECT_EQ(file.incomplete, 0);
  EXPECT_EQ(file.results.size(), 2u);
}

RunningJob sample_running(std::vector<ResultKey> rows, std::int64_t updates) {
  RunningJob j;
  j.rows = std::move(rows);
  j.agent_type = "go_pretrain";
  j.max_steps = 100;
  j.updated = "2026-11-24T12:00:00Z";
  j.host = "host";
  j.pid = 1234;
  for (std::int64_t k = 1; k <= updates; ++k) {
    j.learning_curve.push_back({k, 4 * k, k == 1 ? std::numeric_limits<double>::infinity() : 0.5,
                                1.0 / static_cast<double>(k), 0.1 * static_cast<double>(k)});
  }
  return j;
}

// Learning curves of jobs still training (/running): each flush replaces the job's entry,
// a reader sees the latest, and the entry goes when one of the job's results is written.
TEST(Hdf5SinkTest, RunningJobsAreReadableAndLeaveWithTheirResult) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  Hdf5Sink sink(path);
  sink.begin(sample_metadata());
  const ResultKey a{"wavenet_2", "go_pretrain", 1};
  const ResultKey b{"rnnlm_2", "go_pretrain", 1};
  sink.update_running(sample_running({a, b}, 2));
  auto pretraining = sample_running({a, b}, 3);
  sink.update_running(pretraining);
  auto one = sample_running({{"wavenet_2", "go_one", 2}}, 1);
  one.agent_type = "go_one";
  one.state = "failed";
  one.message = "out of time";
  sink.update_running(one);
  {
    auto file = read_results_file(path);  // while the writer holds the file
    EXPECT_TRUE(file.results.empty());
    ASSERT_EQ(file.running.size(), 2u);
    const auto& p = file.running[0].rows.size() == 2 ? file.running[0] : file.running[1];
    const auto& o = file.running[0].rows.size() == 2 ? file.running[1] : file.running[0];
    EXPECT_EQ(p.rows, (std::vector<ResultKey>{a, b}));
    EXPECT_EQ(p.agent_type, "go_pretrain");
    EXPECT_EQ(p.state, "running");
    EXPECT_EQ(p.max_steps, 100);
    EXPECT_EQ(p.updated, "2026-11-24T12:00:00Z");
    EXPECT_EQ(p.host, "host");
    EXPECT_EQ(p.pid, 1234);
    ASSERT_EQ(p.learning_curve.size(), 3u);  // the second flush replaced the first
    EXPECT_TRUE(std::isinf(p.learning_curve[0].best_step_time_s));
    EXPECT_EQ(p.learning_curve[2].samples, 12);
    EXPECT_EQ(p.learning_curve[2].mean_step_time_s, 1.0 / 3);
    EXPECT_EQ(o.state, "failed");
    EXPECT_EQ(o.message, "out of time");
  }
  // One row of the pretraining written: its running entry is gone, the other stays.
  auto r = sample_result("go_pretrain", 1, true);
  r.key = b;
  sink.write(r);
  auto file = read_results_file(path);
  EXPECT_EQ(file.results.size(), 1u);
  ASSERT_EQ(file.running.size(), 1u);
  EXPECT_EQ(file.running[0].agent_type, "go_one");
  sink.close();
  // A resumed run does the earlier run's unfinished jobs: begin() drops their entries.
  Hdf5Sink resumed(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
  EXPECT_EQ(resumed.existing().size(), 1u);
  resumed.begin(sample_metadata());
  EXPECT_TRUE(read_results_file(path).running.empty());
}

// Each flush replaces the running job's curve: the space of the old one is reused, so the
// file stays near the size of what it holds however often the curve is written (it lost
// that space at every close before, 1 MB for 56 KB of curve in a 15 s run).
TEST(Hdf5SinkTest, FlushingACurveManyTimesDoesNotGrowTheFile) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  Hdf5Sink sink(path);
  sink.begin(sample_metadata());
  auto job = sample_running({{"wavenet_2", "go_one", 1}}, 0);
  for (int flush = 1; flush <= 200; ++flush) {
    for (int k = 0; k < 5; ++k) job.learning_curve.push_back({flush, flush, 0.5, 0.5, 0.5});
    sink.update_running(job);
  }
  // 1000 points x 5 fields x 8 bytes = 40 KB of curve; losing each replaced curve would
  // leave about 4 MB.
  EXPECT_LT(fs::file_size(path), 200u * 1024) << "bytes";
  EXPECT_EQ(read_results_file(path).running.at(0).learning_curve.size(), 1000u);
}

TEST(Hdf5SinkTest, ResumeOfAMissingFileStartsOne) {
  auto dir = temp_dir();
  Hdf5Sink sink(dir / "new.h5", Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
  EXPECT_TRUE(sink.existing().empty());
  EXPECT_TRUE(fs::exists(dir / "new.h5"));
}

TEST(Hdf5SinkTest, BadFilesAreClearErrorsNamingTheFile) {
  auto dir = temp_dir();
  EXPECT_EQ(error_of(dir / "missing.h5"), (dir / "missing.h5").string() + ": no such file");

  auto text = dir / "text.h5";
  std::ofstream(text) << "not hdf5\n";
  EXPECT_EQ(error_of(text).rfind(text.string() + ": not an HDF5 file", 0), 0u) << error_of(text);

  auto foreign = dir / "foreign.h5";
  hid_t f = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Fclose(f);
  EXPECT_EQ(error_of(foreign),
            foreign.string() +
                ": not a gopt results file (expected the root attribute format = 'gopt-results', "
                "written by `gopt run`)");

  auto good = dir / "good.h5";
  {
    Hdf5Sink sink(good);
    sink.begin(sample_metadata());
    for (std::uint64_t s = 0; s < 20; ++s) sink.write(sample_result("hdp", s, true));
  }
  auto truncated = dir / "truncated.h5";
  fs::copy_file(good, truncated);
  fs::resize_file(truncated, fs::file_size(good) / 2);
  std::string message = error_of(truncated);
  EXPECT_EQ(message.rfind(truncated.string() + ": ", 0), 0u) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;

  Hdf5Sink sink(foreign, Hdf5SinkOptions().with_open_mode(OpenMode::kOverwrite));  // replaces it
  sink.close();
  EXPECT_NO_THROW((void)read_results_file(foreign));
}

TEST(Hdf5SinkTest, ResumeRefusesAForeignFile) {
  auto dir = temp_dir();
  auto foreign = dir / "foreign.h5";
  hid_t f = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Fclose(f);
  EXPECT_THROW(Hdf5Sink(foreign, Hdf5SinkOptions().with_open_mode(OpenMode::kResume)),
               core::InputError);
}

}  // namespace
}  // namespace gopt::experiments

namespace gopt::experiments {
namespace {

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void overwrite(const fs::path& path, std::size_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

fs::path results_with(const fs::path& path, int results) {
  Hdf5Sink sink(path);
  sink.begin(sample_metadata());
  for (int s = 0; s < results; ++s) {
    sink.write(sample_result("hdp", static_cast<std::uint64_t>(s), true));
  }
  return path;
}

// Issue #32: `--resume` modified a damaged file, then failed. Now the file is read and
// checked whole, read-only, before anything is written; a damaged one is refused untouched
// with a message saying how to recover.
TEST(Hdf5SinkTest, ResumeRefusesADamagedFileAndLeavesItUntouched) {
  auto dir = temp_dir();
  const auto good = results_with(dir / "good.h5", 6);
  const auto size = fs::file_size(good);
  int refused = 0;
  // Garbage over every 256-byte window of the file, one at a time.
  for (std::size_t offset = 0; offset + 64 <= size; offset += 256) {
    auto damaged = dir / ("damaged_" + std::to_string(offset) + ".h5");
    fs::copy_file(good, damaged);
    overwrite(damaged, offset, std::string(64, '\xa5'));
    const std::string before = file_bytes(damaged);
    std::string message = "(no error)";
    try {
      Hdf5Sink sink(damaged, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    } catch (const core::InputError& e) {
      message = e.what();
    }
    EXPECT_EQ(file_bytes(damaged), before) << "offset " << offset;
    // Damage in unused bytes is harmless; damage anywhere that matters is refused.
    if (message != "(no error)") {
      ++refused;
      EXPECT_EQ(message.rfind(damaged.string() + ": ", 0), 0u) << message;
      EXPECT_NE(message.find("damaged"), std::string::npos) << message;
      EXPECT_NE(message.find("--overwrite"), std::string::npos) << message;
      EXPECT_ANY_THROW((void)read_results_file(damaged)) << "offset " << offset;
    } else {
      // Accepted: then it reads back the six results unchanged.
      auto file = read_results_file(damaged);
      ASSERT_EQ(file.results.size(), 6u) << "offset " << offset;
      for (const auto& r : file.results) {
        EXPECT_EQ(r.device_peak_memory_bytes, (std::vector<std::int64_t>{1000, 2000}));
        EXPECT_EQ(r.graph, "wavenet_2");
      }
    }
  }
  EXPECT_GT(refused, static_cast<int>(size / 256 / 2)) << "most windows hold data that matters";
}

// A kill at any moment of a write leaves the previous state: every result reported written
// before the kill is in the file, complete, and the file opens. Writes replace the file by
// rename (Hdf5Sink::Impl::update), so there is no half-written state to find.
TEST(Hdf5SinkTest, SigkillAtRandomMomentsNeverLosesACompleteResult) {
  auto dir = temp_dir();
  const auto path = dir / "killed.h5";
  std::mt19937_64 rng(32);
  std::set<std::uint64_t> reported;  // seeds whose write() returned before a kill
  constexpr int kTrials = 40;
  // Kills land within twice the time a fresh writer takes to finish its first result (at
  // least 40 ms): trial 0 waits for that first result, so that a slow build (sanitizers)
  // spreads its kills over writes as a fast one does.
  double first_write_us = 20000;
  for (int trial = 0; trial < kTrials; ++trial) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      try {
        Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
        sink.begin(sample_metadata());
        for (std::uint64_t s = 1000 * static_cast<std::uint64_t>(trial);; ++s) {
          sink.write(sample_result("hdp", s, true));
          if (::write(fds[1], &s, sizeof s) != sizeof s) ::_exit(3);
        }
      } catch (...) {
        ::_exit(2);
      }
    }
    ::close(fds[1]);
    if (trial == 0) {
      const auto started = std::chrono::steady_clock::now();
      std::uint64_t first = 0;
      ASSERT_EQ(::read(fds[0], &first, sizeof first), static_cast<ssize_t>(sizeof first))
          << "the writer finished no result";
      reported.insert(first);
      first_write_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started)
              .count();
    } else {
      const int limit = static_cast<int>(std::max(40000.0, 2 * first_write_us));
      std::this_thread::sleep_for(
          std::chrono::microseconds(std::uniform_int_distribution<int>(0, limit)(rng)));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: status " << status;
    std::uint64_t s = 0;
    while (::read(fds[0], &s, sizeof s) == sizeof s) reported.insert(s);
    ::close(fds[0]);
    if (!fs::exists(path)) continue;  // killed before the first file was in place
    ResultsFile file;
    ASSERT_NO_THROW(file = read_results_file(path)) << "trial " << trial;
    EXPECT_EQ(file.incomplete, 0);
    std::set<std::uint64_t> in_file;
    for (const auto& r : file.results) {
      in_file.insert(r.key.seed);
      EXPECT_EQ(r.learning_curve.size(), 2u);
    }
    for (auto seed : reported) EXPECT_TRUE(in_file.count(seed)) << "lost result " << seed;
  }
  EXPECT_GT(reported.size(), 1u) << "no write finished in any trial after the first";
  // No copies are left behind once the next writer has started.
  { Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume)); }
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

TEST(Hdf5SinkTest, ASecondWriterOfOneFileIsRefused) {
  auto dir = temp_dir();
  Hdf5Sink first(dir / "r.h5");
  try {
    Hdf5Sink second(dir / "r.h5", Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    FAIL() << "two writers of one file";
  } catch (const core::InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("(`gopt run` or `gopt measure`) is writing this results file"),
        std::string::npos)
        << e.what();
  }
}

// Sets the root attribute format_version of a file gopt wrote (as another version would).
void set_format_version(const fs::path& path, std::int64_t version) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
  ASSERT_GE(a, 0);
  EXPECT_GE(H5Awrite(a, H5T_NATIVE_INT64, &version), 0);
  H5Aclose(a);
  H5Fclose(f);
}

// A version-1 file (no provenance) still reads, and --resume refuses it untouched, naming
// its version and the one this gopt writes; a newer version is refused by readers too.
TEST(Hdf5SinkTest, OtherFormatVersionsAreNamedWhenRefused) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  write_file_with(path, sample_result("metis", 1, false));
  set_format_version(path, 1);
  const auto old = read_results_file(path);
  EXPECT_EQ(old.format_version, 1);
  EXPECT_EQ(old.results.size(), 1u);
  const std::string before = file_bytes(path);
  try {
    Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    FAIL() << "resumed a version-1 file";
  } catch (const core::InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path.string() + ": results format version 1: this gopt reads it but "
                                           "writes only version 2"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--out NEW.h5"), std::string::npos) << message;
  }
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_FALSE(fs::exists(path.string() + ".lock"));

  set_format_version(path, 3);
  EXPECT_EQ(error_of(path), path.string() +
                                ": results format version 3 is newer than this gopt reads "
                                "(versions 1 to 2); update gopt");
}

// Deletes the attribute `name` of the object at `object` (as a writer before it existed
// would have left it out).
void delete_attribute(const fs::path& path, const std::string& object, const char* name) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
  ASSERT_GE(o, 0);
  EXPECT_GE(H5Adelete(o, name), 0);
  H5Oclose(o);
  H5Fclose(f);
}

// The file and every row record the minor version of their writer. A 2.0 file (no minor
// version anywhere) reads as minor 0 and is resumed: the rows written then say this minor, the
// file and its older rows keep 0.
TEST(Hdf5SinkTest, MinorVersionsAreRecordedAndOlderMinorsStillReadAndResume) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  const auto metis = sample_result("metis", 1, false);
  write_file_with(path, metis);
  auto file = read_results_file(path);
  EXPECT_EQ(file.format_minor_version, kResultsFormatMinorVersion);
  ASSERT_EQ(file.results.size(), 1u);
  EXPECT_EQ(file.results[0].format_minor_version, kResultsFormatMinorVersion);

  delete_attribute(path, "/", "format_minor_version");
  delete_attribute(path, "/results/" + result_group_name(metis.key), "format_minor_version");
  file = read_results_file(path);
  EXPECT_EQ(file.format_version, 2);
  EXPECT_EQ(file.format_minor_version, 0);
  ASSERT_EQ(file.results.size(), 1u);
  EXPECT_EQ(file.results[0].format_minor_version, 0);
  expect_same(file.results[0], metis);

  auto hdp = sample_result("hdp", 2, true);
  {
    Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    EXPECT_EQ(sink.existing().size(), 1u);
    sink.begin(sample_metadata());
    sink.write(hdp);
  }
  file = read_results_file(path);
  EXPECT_EQ(file.format_minor_version, 0);  // the writer that created it
  ASSERT_EQ(file.results.size(), 2u);
  EXPECT_EQ(file.results[0].format_minor_version, 0);
  EXPECT_EQ(file.results[1].format_minor_version, kResultsFormatMinorVersion);
  expect_same(file.results[1], hdp);
}

// Opens `path` for writing into its object headers (the writer's format bounds, which
// that needs).
hid_t open_for_surgery(const std::filesystem::path& path) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  return f;
}

// Opens the group `object` of `path` for surgery and hands it to `change`.
void edit_group(const std::filesystem::path& path, const std::string& object,
                const std::function<void(hid_t)>& change) {
  hid_t f = open_for_surgery(path);
  ASSERT_GE(f, 0);
  hid_t g = H5Gopen2(f, object.c_str(), H5P_DEFAULT);
  ASSERT_GE(g, 0);
  change(g);
  H5Gclose(g);
  H5Fclose(f);
}

// Replaces the scalar attribute `key` of `g` by `value`; false when HDF5 refused.
template <typename T>
bool replace_attr(hid_t g, const char* key, hid_t file_type, hid_t mem_type, T value) {
  if (H5Adelete(g, key) < 0) return false;
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(g, key, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  const bool ok = a >= 0 && H5Awrite(a, mem_type, &value) >= 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  return ok;
}

// A measurement of `key`'s decision with the fields every measurement has.
Measurement sample_measurement(const ResultKey& key) {
  Measurement m;
  m.key = key;
  m.simulated_step_time_s = 0.0125;
  m.measured_step_time_s = 0.0131;
  m.measured_backend = "cpu: 2 worker threads";
  return m;
}

// A measurement (`gopt measure`, format 2.2) is written beside the results without a run's
// begin(), reads back field for field, replaces one of the same key, leaves the results'
// digests alone, and a changed value reads as damage.
TEST(Hdf5SinkTest, MeasurementsRoundTripAndDamageIsDetected) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  const auto metis = sample_result("metis", 1, false);
  write_file_with(path, metis);
  Measurement m = sample_measurement(metis.key);
  m.measured_spread = 0.07;
  m.repeats = 25;
  m.rounds = 5;
  m.warmup_steps = 2;
  m.cpu_share = 0.97;
  m.fusion_dropped = true;
  m.fused_groups = 3;
  m.fused_ops = 9;
  m.fused_loop_ops = 6;
  m.profile = "cpu2";
  m.measured_at = "2026-12-07T09:00:00Z";
  m.provenance = sample_metadata().provenance;
  m.provenance.command = "gopt measure r.h5";
  m.step_times_s = {0.0131, 0.0129, 0.0140};
  {
    Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    sink.write_measurement(m);
    m.measured_step_time_s = 0.0132;  // measured again: replaces the first
    sink.write_measurement(m);
  }
  auto file = read_results_file(path);
  ASSERT_EQ(file.results.size(), 1u);
  expect_same(file.results[0], metis);
  ASSERT_EQ(file.measurements.size(), 1u);
  const Measurement* back = file.measurement(metis.key);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(file.measurement(sample_result("hdp", 1, true).key), nullptr);
  EXPECT_EQ(back->simulated_step_time_s, m.simulated_step_time_s);
  EXPECT_EQ(back->measured_step_time_s, 0.0132);
  EXPECT_EQ(back->measured_spread, m.measured_spread);
  EXPECT_EQ(back->repeats, 25);
  EXPECT_EQ(back->rounds, 5);
  EXPECT_EQ(back->warmup_steps, 2);
  EXPECT_EQ(back->cpu_share, m.cpu_share);
  EXPECT_TRUE(back->fusion_dropped);
  EXPECT_EQ(back->fused_groups, 3);
  EXPECT_EQ(back->fused_ops, 9);
  EXPECT_EQ(back->fused_loop_ops, 6);
  EXPECT_EQ(back->measured_backend, m.measured_backend);
  EXPECT_EQ(back->profile, "cpu2");
  EXPECT_EQ(back->measured_at, m.measured_at);
  EXPECT_EQ(back->provenance, m.provenance);
  EXPECT_EQ(back->step_times_s, m.step_times_s);
  EXPECT_EQ(back->format_minor_version, kResultsFormatMinorVersion);

  // A changed measured time no longer matches the digest.
  const std::string object = "/measured/" + result_group_name(metis.key);
  edit_group(path, object, [](hid_t g) {
    EXPECT_TRUE(replace_attr(g, "measured_step_time_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0.001));
  });
  EXPECT_EQ(error_of(path), path.string() + ": " + object +
                                ": the measurement's contents do not match its digest (the file "
                                "is damaged)");
}

}  // namespace

TEST(Hdf5SinkTest, MeasurementsOfFormat22HaveNoStepTimesAndStepTimesAreDigested) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  const auto metis = sample_result("metis", 1, false);
  write_file_with(path, metis);
  Measurement m = sample_measurement(metis.key);
  m.repeats = 2;
  m.rounds = 1;
  m.step_times_s = {0.0131, 0.0133};
  {
    Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    sink.write_measurement(m);
  }
  const std::string object = "/measured/" + result_group_name(metis.key);

  // One step time changed: the digest covers them.
  edit_group(path, object, [](hid_t g) {
    hid_t set = H5Dopen2(g, "step_times_s", H5P_DEFAULT);
    ASSERT_GE(set, 0);
    const double forged[2] = {0.0131, 0.0010};
    EXPECT_GE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, forged), 0);
    H5Dclose(set);
  });
  EXPECT_EQ(error_of(path), path.string() + ": " + object +
                                ": the measurement's contents do not match its digest (the file "
                                "is damaged)");

  // As a 2.2 writer left it: no dataset, minor version 2, the digest without step times.
  edit_group(path, object, [&](hid_t g) {
    EXPECT_GE(H5Ldelete(g, "step_times_s", H5P_DEFAULT), 0);
    Measurement old = m;
    old.step_times_s.clear();
    EXPECT_TRUE(
        replace_attr<std::int64_t>(g, "format_minor_version", H5T_STD_I64LE, H5T_NATIVE_INT64, 2));
    EXPECT_TRUE(replace_attr<std::uint64_t>(g, "digest", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                                            h5::measurement_digest(old)));
  });
  auto file = read_results_file(path);
  const Measurement* back = file.measurement(metis.key);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->format_minor_version, 2);
  EXPECT_TRUE(back->step_times_s.empty());
  EXPECT_EQ(back->measured_step_time_s, m.measured_step_time_s);
}

// Format 2.4's fusion counts are digested, and a 2.3 measurement (none of them, its digest
// without them) reads with zeros.
TEST(Hdf5SinkTest, MeasurementsOfFormat23HaveNoFusionCountsAndCountsAreDigested) {
  auto dir = temp_dir();
  auto path = dir / "r.h5";
  const auto metis = sample_result("metis", 1, false);
  write_file_with(path, metis);
  Measurement m = sample_measurement(metis.key);
  m.fused_groups = 2;
  m.fused_ops = 5;
  m.fused_loop_ops = 3;
  {
    Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
    sink.write_measurement(m);
  }
  const std::string object = "/measured/" + result_group_name(metis.key);
  edit_group(path, object, [](hid_t g) {
    EXPECT_TRUE(replace_attr<std::int64_t>(g, "fused_ops", H5T_STD_I64LE, H5T_NATIVE_INT64, 4));
  });
  EXPECT_EQ(error_of(path), path.string() + ": " + object +
                                ": the measurement's contents do not match its digest (the file "
                                "is damaged)");
  edit_group(path, object, [&](hid_t g) {
    for (const char* name : {"fused_groups", "fused_ops", "fused_loop_ops"}) {
      EXPECT_GE(H5Adelete(g, name), 0) << name;
    }
    Measurement old = m;
    old.fused_groups = old.fused_ops = old.fused_loop_ops = 0;
    EXPECT_TRUE(
        replace_attr<std::int64_t>(g, "format_minor_version", H5T_STD_I64LE, H5T_NATIVE_INT64, 3));
    EXPECT_TRUE(replace_attr<std::uint64_t>(g, "digest", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                                            h5::measurement_digest(old)));
  });
  auto file = read_results_file(path);
  const Measurement* back = file.measurement(metis.key);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->format_minor_version, 3);
  EXPECT_EQ(back->fused_groups, 0);
  EXPECT_EQ(back->fused_ops, 0);
  EXPECT_EQ(back->fused_loop_ops, 0);
}

}  // namespace gopt::experiments
