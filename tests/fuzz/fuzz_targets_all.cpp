// The list of every check, for drivers and tests that run them all.
#include "tests/fuzz/fuzz_targets.h"

namespace gopt::fuzz {

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"graph_json", check_graph_json},       {"experiment_yaml", check_experiment_yaml},
      {"hardware_yaml", check_hardware_yaml}, {"decision_json", check_decision_json},
      {"onnx_model", check_onnx_model},       {"results_hdf5", check_results_hdf5},
  };
  return all;
}

}  // namespace gopt::fuzz
