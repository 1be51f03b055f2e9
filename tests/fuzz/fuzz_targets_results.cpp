#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/errors.h"
#include "experiments/results/hdf5_sink.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_targets.h"

namespace gopt::fuzz {
namespace {

// A file of its own per process and check, on a RAM disk when there is one.
std::filesystem::path scratch_file(const char* stem) {
  std::error_code ec;
  std::filesystem::path dir = "/dev/shm";
  if (!std::filesystem::is_directory(dir, ec)) dir = std::filesystem::temp_directory_path();
  return dir / (std::string("gopt_fuzz_") + stem + "_" + std::to_string(::getpid()) + ".h5");
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

Outcome check_results_hdf5(const std::uint8_t* data, std::size_t size) {
  const auto path = scratch_file("results");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  struct Cleanup {
    std::filesystem::path path;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } cleanup{path};
  Outcome table = accept_or_reject([&] {
    auto file = experiments::read_results_file(path);
    for (const auto& r : file.results) {
      require(!r.key.workload.empty() && !r.key.agent.empty(), "a result without a key");
    }
  });
  // --resume: a file it refuses is left exactly as it was; one it accepts lists as many
  // complete results as `gopt table` reads.
  const std::string before = read_bytes(path);
  std::size_t resumable = 0;
  Outcome resume = accept_or_reject([&] {
    experiments::Hdf5Sink sink(
        path, experiments::Hdf5SinkOptions().with_open_mode(experiments::OpenMode::kResume));
    resumable = sink.existing().size();
  });
  require(read_bytes(path) == before, "opening a results file to resume changed it");
  if (resume == Outcome::kAccepted && table == Outcome::kAccepted) {
    require(resumable == experiments::read_results_file(path).results.size(),
            "--resume and gopt table disagree on the complete results");
  }
  require(resume == Outcome::kRejected || table == Outcome::kAccepted,
          "--resume accepts a file that gopt table refuses");
  return table;
}

}  // namespace gopt::fuzz
