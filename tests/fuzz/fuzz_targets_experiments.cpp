#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>

#include "agents/registry.h"
#include "core/errors.h"
#include "datasets/workload_registry.h"
#include "experiments/config.h"
#include "experiments/hdf5_sink.h"
#include "tests/fuzz/fuzz_targets.h"

namespace gopt::fuzz {
namespace {

std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

void require(bool ok, const std::string& what) {
  if (!ok) throw ContractViolation(what);
}

template <typename F>
Outcome accept_or_reject(F&& parse) {
  try {
    parse();
  } catch (const core::InputError&) {
    return Outcome::kRejected;
  }
  return Outcome::kAccepted;
}

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

Outcome check_experiment_yaml(const std::uint8_t* data, std::size_t size) {
  static const agents::AgentRegistry registry = [] {
    agents::AgentRegistry r;
    agents::register_builtin_agents(r);
    return r;
  }();
  static const datasets::WorkloadRegistry workloads = [] {
    datasets::WorkloadRegistry r;
    datasets::register_builtin_workloads(r);
    return r;
  }();
  const std::string text(as_text(data, size));
  experiments::ConfigLoadOptions options;
  options.with_agents(registry).with_workloads(workloads);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#set ", 0) == 0) options.overrides.push_back(line.substr(5));
  }
  experiments::ExperimentConfig config;
  Outcome outcome = accept_or_reject(
      [&] { config = experiments::parse_config(text, "fuzz.yaml", GOPT_TEST_DATA_DIR, options); });
  if (outcome == Outcome::kRejected) return outcome;
  // Every option of an accepted config passes the checks agent creation makes.
  for (const auto& a : config.agents) {
    const auto& info = registry.info(a.type);
    agents::AgentOptions resolved(a.type, info.options, a.options, "fuzz.yaml");
    if (info.check_options) info.check_options(resolved);
    require(a.budget.max_steps >= 1 && a.budget.max_samples >= 1 && a.budget.max_seconds > 0,
            "agent '" + a.name + "': a budget that is not positive");
  }
  require(!config.seeds.empty() && !config.workloads.empty() && !config.agents.empty(),
          "an accepted config with nothing to run");
  return outcome;
}

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
    experiments::Hdf5Sink sink(path,
                               experiments::Hdf5SinkOptions().mode(experiments::OpenMode::kResume));
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

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"graph_json", check_graph_json},       {"experiment_yaml", check_experiment_yaml},
      {"hardware_yaml", check_hardware_yaml}, {"decision_json", check_decision_json},
      {"onnx_model", check_onnx_model},       {"results_hdf5", check_results_hdf5},
  };
  return all;
}

}  // namespace gopt::fuzz
