// Every committed fuzz corpus input through its format's check (tests/fuzz/fuzz_targets.h):
// the seeds, and every input the fuzzers found a defect with (named regression-*), so that a
// fixed finding stays fixed in the normal test run. The specific messages those inputs
// must get are asserted next to the code they test (graph_io_test, config_test, ...).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"

namespace gopt::fuzz {
namespace {

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FuzzCorpusTest : public ::testing::TestWithParam<Target> {};

}  // namespace

// Names the format in test listings (instead of the bytes of the struct).
void PrintTo(const Target& target, std::ostream* out) { *out << target.name; }

namespace {

TEST_P(FuzzCorpusTest, EveryCorpusInputKeepsTheContract) {
  const Target& target = GetParam();
  const std::filesystem::path dir = std::filesystem::path(GOPT_FUZZ_CORPUS_DIR) / target.name;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const auto bytes = read_file(entry.path());
    EXPECT_NO_THROW((void)target.check(bytes.data(), bytes.size())) << entry.path().filename();
    ++inputs;
  }
  EXPECT_GT(inputs, 0) << "no corpus inputs for " << target.name;
}

INSTANTIATE_TEST_SUITE_P(Formats, FuzzCorpusTest, ::testing::ValuesIn(targets()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace gopt::fuzz
