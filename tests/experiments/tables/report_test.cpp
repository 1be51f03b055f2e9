// `gopt report`: results pages that name no directory of the machine that ran them, with
// the tables, provenance and config of the file.
#include "experiments/tables/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "experiments/tables/tables.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

namespace gopt::experiments {
namespace {

const std::string kGopt = GOPT_BINARY;
const std::string kData = GOPT_TEST_DATA_DIR;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ReportTest, CommandsAndPathsNameNoDirectoryOfTheMachine) {
  EXPECT_EQ(portable_command("/home/me/gopt/build/bin/gopt run /home/me/cfg.yaml --jobs 2"),
            "gopt run cfg.yaml --jobs 2");
  EXPECT_EQ(portable_command("build/bin/gopt run experiments/configs/t.yaml --out=/tmp/r/x.h5"),
            "gopt run experiments/configs/t.yaml --out=x.h5");
  EXPECT_EQ(portable_command("gopt run '/a dir/my cfg.yaml' --set 'agents.go_one.seed=1'"),
            "gopt run 'my cfg.yaml' --set 'agents.go_one.seed=1'");
  EXPECT_EQ(portable_command(""), "");
  EXPECT_EQ(portable_path("results/t.h5"), "results/t.h5");
  EXPECT_EQ(portable_path("/srv/x/results/t.h5"), "t.h5");
}

TEST(ReportTest, APageHasTheProvenanceTheTablesAndTheConfig) {
  ResultsFile file = read_results_file(kData + "/results/fixture.h5");
  file.metadata.config_source = "/srv/someone/experiments/configs/fixture.yaml";
  file.metadata.provenance.command = "/srv/someone/build/bin/gopt run /srv/someone/f.yaml";
  file.metadata.provenance.git_revision = "abc1234";
  file.metadata.provenance.gopt_version = "0.1.0";
  ReportOptions options;
  options.regenerate = "gopt report results/f.h5 --out docs/f.md";
  const std::string page = render_report(file, options);
  EXPECT_TRUE(contains(page, "# Results: ")) << page;
  EXPECT_TRUE(contains(page, "Made with `gopt report results/f.h5 --out docs/f.md`")) << page;
  EXPECT_TRUE(contains(page, "| command | `gopt run f.yaml` |")) << page;
  EXPECT_TRUE(contains(page, "| gopt | 0.1.0, revision abc1234 |")) << page;
  EXPECT_TRUE(contains(page, "`fixture.yaml`")) << page;
  EXPECT_FALSE(contains(page, "/srv/")) << page;
  // Which step times are simulated, and which measured.
  ASSERT_FALSE(file.results.empty());
  EXPECT_TRUE(contains(page, "| step times | simulated on " + file.results.front().hardware +
                                 "; none of this file's decisions was executed |"))
      << page;
  Measurement m;
  m.key = file.results.front().key;
  m.measured_backend = "cpu: 2 worker threads";
  m.measured_step_time_s = m.simulated_step_time_s = 0.01;
  file.measurements.push_back(m);
  EXPECT_TRUE(contains(render_report(file, options),
                       "which set beside them 1 of the " + std::to_string(file.results.size()) +
                           " results' decisions measured on cpu: 2 worker threads"));
  file.measurements.clear();
  // The same tables as `gopt table`.
  EXPECT_TRUE(contains(page, render_tables(build_tables(file), TableFormat::kMarkdown))) << page;
  if (!file.metadata.config_yaml.empty()) {
    EXPECT_TRUE(contains(page, "```yaml\n" + file.metadata.config_yaml)) << page;
  }
}

TEST(ReportTest, GoptReportWritesThePageAndKeepsTheOldOneOnError) {
  const auto dir = gopt::testing::make_temp_dir("gopt_report");
  const std::string page = (std::filesystem::path(dir) / "page.md").string();
  auto r =
      gopt::testing::run_command(kGopt + " report " + kData + "/results/fixture.h5 --out " + page);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "wrote " + page)) << r.err;
  std::ifstream in(page);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_TRUE(contains(text, "Made with `gopt report fixture.h5 --out page.md`")) << text;
  EXPECT_TRUE(contains(text, "## Placement")) << text;
  EXPECT_FALSE(contains(text, kData)) << text;
  // A file that is not a results file: an error naming it, and the page is kept.
  auto bad = gopt::testing::run_command(kGopt + " report " + kData +
                                        "/results/truncated.h5 --out " + page);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, "truncated.h5")) << bad.err;
  std::ifstream again(page);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(again), std::istreambuf_iterator<char>()),
            text);
  gopt::testing::remove_tree(dir);
}

}  // namespace
}  // namespace gopt::experiments
