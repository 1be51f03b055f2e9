// The runner's results are pinned: the shipped table2_generalization_small.yaml and a
// small generalization config (pretraining with a validation graph, fine-tuning and
// zero-shot on a held-out graph, baselines, HDP, the search reference; two seeds) give
// exactly the digests in tests/data/plan, which the runner wrote before it became a
// planner and an executor. The run forces the baseline CPU
// code path (tests/support/run_on_cpu_path.sh), so the learned agents' numbers do not
// depend on the machine's vector units.
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

#include "experiments/hdf5_sink.h"
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

// Runs `config` on the baseline CPU code path and compares its digest with `digest_file`
// (under tests/data/plan), or writes it there when GOPT_WRITE_DIGEST is set.
void expect_pinned_results(const std::string& config, const std::string& digest_file) {
  const auto dir =
      gopt::testing::make_temp_dir(std::string("gopt_results_unchanged_") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  const auto out = (fs::path(dir) / "unchanged.h5").string();
  const auto r = gopt::testing::run_command(
      "GOPT_CPU_KERNEL=baseline ATEN_CPU_CAPABILITY=default OPENBLAS_CORETYPE=Prescott " + kGopt +
      " run " + config + " --jobs 2 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string got = digest(read_results_file(out));
  const std::string path = kData + "/plan/" + digest_file;
  if (std::getenv("GOPT_WRITE_DIGEST") != nullptr) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "wrote the digest to " << path;
  }
  EXPECT_EQ(got, gopt::testing::read_text(path));
}

TEST(ResultsUnchangedTest, ASmallGeneralizationConfigGivesThePinnedResults) {
  expect_pinned_results(kData + "/plan/unchanged.yaml", "unchanged_digest.txt");
}

TEST(ResultsUnchangedTest, TheShippedTable2SmallConfigGivesThePinnedResults) {
  expect_pinned_results(kSource + "/experiments/configs/table2_generalization_small.yaml",
                        "table2_generalization_small_digest.txt");
}

}  // namespace
}  // namespace gopt::experiments
