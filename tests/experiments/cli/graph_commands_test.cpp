// `gopt graph list|generate|info|validate|import` end to end with suite names.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "core/graph_io.h"
#include "tests/support/run_command.h"

namespace gopt::datasets {
namespace {

using gopt::testing::run_command;

const std::string kGopt = GOPT_BINARY;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(GraphCommandsTest, ListShowsTheSuite) {
  auto r = run_command(kGopt + " graph list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name :
       {"rnnlm_2", "gnmt_8", "transformer_xl_4", "inception_v3", "amoebanet", "wavenet_5"}) {
    EXPECT_TRUE(contains(r.out, name)) << name;
  }
  auto v = run_command(kGopt + " graph list --verbose");
  EXPECT_TRUE(contains(v.out, "hidden=1024")) << v.out;
  EXPECT_TRUE(contains(v.out, "[1, 32]")) << v.out;
}

TEST(GraphCommandsTest, ListOfAConfigIsTheRealHardwareTableOfTheDocs) {
  const std::string docs =
      core::read_text_file(std::string(GOPT_SOURCE_DIR) + "/docs/workloads.md");
  // The real-hardware tables' graphs: Table 1's, and Table 2's (the same sizes, more depths).
  for (const char* name : {"table1_real_cpu", "table2_real_cpu"}) {
    auto r = run_command(kGopt + " graph list --config " + std::string(GOPT_SOURCE_DIR) +
                         "/experiments/configs/" + name + ".yaml");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The config's overrides applied: rnnlm_2 at hidden 512 is far smaller than the suite's.
    EXPECT_TRUE(contains(r.out, "| rnnlm_2 | rnnlm_2 | 1065 |")) << r.out;
    EXPECT_TRUE(contains(r.out, "hidden=512")) << r.out;
    // Every row is in the docs' table (Table 2's graphs include Table 1's).
    std::istringstream rows(r.out);
    for (std::string row; std::getline(rows, row);) {
      EXPECT_TRUE(contains(docs, row))
          << row
          << "\nregenerate the real-hardware table in docs/workloads.md with `gopt graph "
             "list --config experiments/configs/table2_real_cpu.yaml`";
    }
  }
  auto bad = run_command(kGopt + " graph list --config missing.yaml");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, "missing.yaml")) << bad.err;
}

TEST(GraphCommandsTest, GenerateWritesAGraphFile) {
  auto out = std::filesystem::temp_directory_path() / "gopt_cli_gnmt.json";
  auto r = run_command(kGopt + " graph generate gnmt_2 --set src_len=3 --set tgt_len=3 --out " +
                       out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "gnmt_2")) << r.out;
  auto g = core::read_graph_file(out);
  EXPECT_EQ(g.attrs().at("src_len"), "3");
  EXPECT_EQ(g.family(), "gnmt");
  auto v = run_command(kGopt + " graph validate " + out.string());
  EXPECT_EQ(v.exit_code, 0) << v.err;
  std::filesystem::remove(out);
}

TEST(GraphCommandsTest, InfoAndValidateAcceptSuiteNames) {
  auto r = run_command(kGopt + " graph info wavenet_2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "workload:       wavenet_2")) << r.out;
  EXPECT_TRUE(contains(r.out, "Conv2D")) << r.out;
  auto v = run_command(kGopt + " graph validate rnnlm_2 --set seq_len=3");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_TRUE(contains(v.out, "rnnlm_2: ok")) << v.out;
}

TEST(GraphCommandsTest, BadNamesAndOverridesExitOne) {
  auto unknown = run_command(kGopt + " graph generate gnmt_3 --out /tmp/x.json");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(contains(unknown.err, "gnmt_3")) << unknown.err;
  EXPECT_TRUE(contains(unknown.err, "gnmt_8")) << unknown.err;
  auto range = run_command(kGopt + " graph generate gnmt_8 --set hidden=0 --out /tmp/x.json");
  EXPECT_EQ(range.exit_code, 1);
  EXPECT_TRUE(contains(range.err, "hidden")) << range.err;
  EXPECT_TRUE(contains(range.err, "[8, 16384]")) << range.err;
  auto neither = run_command(kGopt + " graph info no_such_graph");
  EXPECT_EQ(neither.exit_code, 1);
  EXPECT_TRUE(contains(neither.err, "not a suite workload")) << neither.err;
  auto usage = run_command(kGopt + " graph generate gnmt_8");
  EXPECT_EQ(usage.exit_code, 2);  // --out is required
}

}  // namespace
}  // namespace gopt::datasets
