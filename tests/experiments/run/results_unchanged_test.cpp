// The runner's results are pinned: every shipped small config (experiments/configs/*_small.yaml)
// and a small generalization config (pretraining with a validation graph, fine-tuning and zero-shot
// on a held-out graph, baselines, HDP, the search reference; two seeds) give exactly the digests in
// tests/data/plan. unchanged.yaml's and table2_generalization_small's were written before the
// runner became a planner and an executor, the other small configs' before the runner, the results
// file and the tables were split into units (issue #29); every `bound` was rewritten when
// simulator/lower_bounds.h gained the communication path and fill and drain, which left every other
// field as it was. The run forces the baseline CPU code path (tests/support/run_on_cpu_path.sh), so
// the learned agents' numbers do not depend on the machine's vector units. Each shipped small
// config's run is also checked for what it says and what `gopt table` prints of it.
//
// To write the digests again after a change that is meant to alter results:
//   GOPT_WRITE_DIGEST=1 build/bin/experiments_run_tests --gtest_filter='ResultsUnchangedTest.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "experiments/results/hdf5_sink.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

namespace gopt::experiments {
namespace {

namespace fs = std::filesystem;

const std::string kGopt = GOPT_BINARY;
const std::string kData = GOPT_TEST_DATA_DIR;
const std::string kSource = GOPT_SOURCE_DIR;

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// Every number of a result that does not depend on wall time, one line per result, in key
// order (rows arrive in finishing order).
std::string digest(ResultsFile file) {
  std::sort(file.results.begin(), file.results.end(),
            [](const RunResult& a, const RunResult& b) { return a.key < b.key; });
  std::ostringstream out;
  for (const auto& r : file.results) {
    out << r.key.text() << " | seed " << r.problem_seed << " | step " << hex(r.best_step_time_s)
        << " | oom " << r.oom << " | samples " << r.samples << " | learner " << r.learner
        << " | held_out " << r.held_out << " | bound " << hex(r.lower_bound_s) << " | bytes "
        << r.bytes_moved << " | placement";
    if (r.decision.placement) {
      for (const auto d : *r.decision.placement) out << " " << d;
    }
    if (r.decision.priority) {
      out << " | priority";
      for (const auto p : *r.decision.priority) out << " " << p;
    }
    if (r.decision.fusion) {
      out << " | fusion";
      for (const auto f : *r.decision.fusion) out << " " << f;
    }
    out << " | curve";
    for (const auto& p : r.learning_curve) {
      out << " " << p.step << ":" << hex(p.best_step_time_s) << "/" << hex(p.mean_step_time_s);
    }
    out << "\n";
  }
  return out.str();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Runs `config` on the baseline CPU code path (no GPU visible: GO's `device: auto` is
// the CPU) into `out` (in `run`), and compares the digest
// of its results with `digest_file` (under tests/data/plan), or writes it there when
// GOPT_WRITE_DIGEST is set.
void expect_pinned_results(const std::string& config, const std::string& digest_file,
                           const std::string& out, gopt::testing::CommandResult& run) {
  run = gopt::testing::run_command(
      "CUDA_VISIBLE_DEVICES= GOPT_CPU_KERNEL=baseline ATEN_CPU_CAPABILITY=default "
      "OPENBLAS_CORETYPE=Prescott " +
      kGopt + " run " + config + " --jobs 2 --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const ResultsFile file = read_results_file(out);
  // The digests pin Debian's LibTorch on OpenBLAS; a LibTorch with another BLAS (a PyTorch
  // wheel's MKL, which picks its kernels by CPU whatever the environment) cannot match them.
  const std::string paths = file.metadata.provenance.cpu_numerics;
  if (contains(paths, "OpenBLAS unknown")) {
    GTEST_SKIP() << "the digests were pinned on OpenBLAS's Prescott kernels; this LibTorch's "
                    "BLAS is not OpenBLAS ("
                 << paths << ")";
  }
  EXPECT_EQ(paths.rfind("gopt kernels baseline (", 0), 0u) << paths;
  EXPECT_TRUE(contains(paths, "; ATen NO AVX; OpenBLAS Prescott")) << paths;
  const std::string got = digest(file);
  const std::string path = kData + "/plan/" + digest_file;
  if (std::getenv("GOPT_WRITE_DIGEST") != nullptr) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "wrote the digest to " << path;
  }
  EXPECT_EQ(got, gopt::testing::read_text(path));
}

std::string test_dir() {
  return gopt::testing::make_temp_dir(
      std::string("gopt_results_unchanged_") +
      ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

// A shipped small config, experiments/configs/NAME.yaml: its results match
// NAME_digest.txt, its run says `said` (a job, a phase) and `gopt table` prints `table`.
// Leaves the run and the results file's folder in `run` and `dir`.
void expect_shipped_small(const std::string& name, const std::string& said,
                          const std::string& table, gopt::testing::CommandResult& run,
                          fs::path& dir) {
  dir = test_dir();
  const auto out = (dir / (name + ".h5")).string();
  ASSERT_NO_FATAL_FAILURE(expect_pinned_results(kSource + "/experiments/configs/" + name + ".yaml",
                                                name + "_digest.txt", out, run));
  EXPECT_TRUE(contains(run.err, said)) << run.err;
  const auto printed = gopt::testing::run_command(kGopt + " table " + out);
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_TRUE(contains(printed.out, table)) << printed.out;
  if (name == "validation_small") return;
  // Issue #26: the search reference, the best baseline, bounds and convergence.
  for (const char* column :
       {"search (ms)", "best baseline (ms)", "lower bounds and optimality gaps", "best / bound",
        "samples to best baseline + 5%", "Summary: "}) {
    EXPECT_TRUE(contains(printed.out, column)) << column << "\n" << printed.out;
  }
}

// A small config added to experiments/configs is pinned too: a digest for each.
TEST(ResultsUnchangedTest, EveryShippedSmallConfigHasPinnedResults) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(kSource + "/experiments/configs")) {
    const std::string stem = entry.path().stem().string();
    if (entry.path().extension() != ".yaml" || stem.size() < 6 ||
        stem.compare(stem.size() - 6, 6, "_small") != 0) {
      continue;
    }
    EXPECT_TRUE(fs::exists(kData + "/plan/" + stem + "_digest.txt"))
        << stem << ".yaml has no pinned digest: add a ResultsUnchangedTest case for it";
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(ResultsUnchangedTest, ASmallGeneralizationConfigGivesThePinnedResults) {
  gopt::testing::CommandResult run;
  const auto out = (fs::path(test_dir()) / "unchanged.h5").string();
  expect_pinned_results(kData + "/plan/unchanged.yaml", "unchanged_digest.txt", out, run);
}

TEST(ResultsUnchangedTest, TheShippedTable1SmallConfigGivesThePinnedResults) {
  gopt::testing::CommandResult run;
  fs::path dir;
  expect_shipped_small("table1_placement_small", "transformer_xl_2 / go_one / seed 1",
                       "go_one (ms)", run, dir);
}

TEST(ResultsUnchangedTest, TheShippedTable2SmallConfigGivesThePinnedResults) {
  gopt::testing::CommandResult run;
  fs::path dir;
  ASSERT_NO_FATAL_FAILURE(
      expect_shipped_small("table2_generalization_small", "pretraining go_pretrain (seed 1)",
                           "## Generalization: step time on held-out graphs", run, dir));
  // The checkpoint lands beside the results file; fine-tuning and zero-shot rows exist for
  // the held-out graph only, pretraining rows for the training graph only.
  EXPECT_TRUE(fs::exists(dir / "table2_generalization_small.go_pretrain.seed1.ckpt"));
  EXPECT_TRUE(contains(run.err, "wavenet_2 / go_finetune / seed 1")) << run.err;
  EXPECT_TRUE(contains(run.err, "wavenet_2 / go_zero_shot / seed 1")) << run.err;
  EXPECT_FALSE(contains(run.err, "transformer_xl_2 / go_finetune")) << run.err;
  EXPECT_FALSE(contains(run.err, "wavenet_2 / go_pretrain")) << run.err;
  // The validation graph picks the checkpoint and has no rows.
  EXPECT_TRUE(
      contains(run.err, "go_pretrain (seed 1): the checkpoint holds the policy after update "))
      << run.err;
  EXPECT_FALSE(contains(run.err, "transformer_xl_3 / ")) << run.err;
}

TEST(ResultsUnchangedTest, TheShippedTable3SmallConfigGivesThePinnedResults) {
  gopt::testing::CommandResult run;
  fs::path dir;
  ASSERT_NO_FATAL_FAILURE(expect_shipped_small("table3_multitask_small",
                                               "wavenet_2 / go_multitask / seed 1",
                                               "go_multitask vs best single task", run, dir));
  const auto printed =
      gopt::testing::run_command(kGopt + " table " + (dir / "table3_multitask_small.h5").string());
  EXPECT_TRUE(contains(printed.out, "go_multitask vs best baseline")) << printed.out;
}

TEST(ResultsUnchangedTest, TheShippedValidationSmallConfigGivesThePinnedResults) {
  gopt::testing::CommandResult run;
  fs::path dir;
  expect_shipped_small("validation_small", "mlp_tiny / random / seed 2", "## Simulator validation",
                       run, dir);
}

}  // namespace
}  // namespace gopt::experiments
