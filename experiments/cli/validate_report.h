// What `gopt validate` measures and how it reports it (internal to
// experiments/cli/validate_command.cpp, which runs the cases): the command's arguments, a case
// (a graph under one decision, simulated and measured), the run's shared state and
// statistics, and the three outputs: the results file (--out), JSON (--json) and the
// human-readable report (validate_report.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/registry.h"
#include "core/decision.h"
#include "datasets/workload_registry.h"
#include "experiments/cli/cli.h"
#include "hardware/backend/backend.h"
#include "hardware/cost_model.h"
#include "hardware/validation.h"
#include "simulator/simulator.h"

namespace gopt::experiments::validate {

/// The command line of `gopt validate` (add_validate_command has each option's help).
struct ValidateArgs {
  std::string profile;
  std::string backend = "cpu";
  std::vector<std::string> graphs;
  int decisions = 5;
  int rounds = 3;
  int warmup = 2;
  int steps = 5;
  std::string op_times = "calibrated";
  int profile_steps = 10;
  std::uint64_t seed = 1;
  std::string out;
  std::string ops_csv;
  bool overwrite = false;
  bool json = false;
};

/// A graph to validate: a suite name or a file, with its overrides.
struct GraphSpec {
  std::string label;  ///< "rnnlm_2[batch=8]", "model[batch=4]" for model.onnx
  std::string graph;  ///< suite name or path
  datasets::LoadOptions load;
};

using hardware::median;

/// One graph under one decision: its simulated and measured step times.
struct Case {
  hardware::ValidationCase c;
  bool in_sample = false;  ///< profiled op times measured under this placement
  core::Decision decision;
  std::string agent_type;
  std::uint64_t seed = 0;
  simulator::SimulationResult sim;
  std::vector<double> step_times_s;
  std::vector<double> cpu_shares;
  double spread = 0;
  std::int32_t proxy_ops = 0;
  std::int64_t num_nodes = 0;
  std::string graph;
};

/// What every graph of a validation run shares, and what the graphs add up to.
struct Validation {
  Validation(const ValidateArgs& a, CliContext& c, hardware::Cluster profile)
      : args(a), ctx(c), profiled(a.op_times == "profiled"), cluster(std::move(profile)) {}

  const ValidateArgs& args;
  CliContext& ctx;
  bool profiled = false;  ///< --op-times profiled
  hardware::Cluster cluster;
  std::unique_ptr<hardware::CostModel> cost;
  std::unique_ptr<hardware::backend::Backend> backend;
  datasets::WorkloadRegistry workloads;
  agents::AgentRegistry registry;
  std::string ops_csv = "graph,decision,op,op_type,kind,device,flops,bytes,measured_s,model_s\n";
  std::int64_t proxy_total = 0;  ///< ops run as proxy kernels (first case of each graph)
  std::map<std::string, std::int32_t> proxy_types;
};

/// The statistics of the cases: over all of them, over those out of sample, and the noise.
struct Summary {
  hardware::ValidationSummary all;
  // Profiled op times were measured under the single-device placement: the statistics that
  // say how well the simulator predicts what it was not given are over the other cases.
  hardware::ValidationSummary out_of_sample;
  double median_spread = 0;
  double median_share = 0;
  double wall_s = 0;
};

/// --out: the cases as a results file (`gopt table` shows the validation table).
void write_results(const Validation& v, const std::vector<GraphSpec>& specs,
                   const std::vector<Case>& cases);
/// --json: one object with the statistics and a row per case.
void print_json(const Validation& v, const std::vector<Case>& cases, const Summary& s);
/// The human-readable report: a line per case, then the statistics, the noise and the proxy
/// kernels.
void print_report(const Validation& v, const std::vector<Case>& cases, const Summary& s);

}  // namespace gopt::experiments::validate
