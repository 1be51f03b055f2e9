// The contract every gopt input parser keeps, as one check per input format, shared by
// the libFuzzer harnesses (fuzz_entry.cpp, built with GOPT_FUZZ=ON), the standalone
// driver CTest runs on the normal build (standalone_driver.cpp) and the regression tests
// (tests/fuzz/fuzz_regressions_test.cpp). docs/reliability.md.
//
// Each check feeds one input to a parser. The input must either be rejected with a
// core::InputError (bad input, exit 1) or be accepted into a value that keeps every
// documented invariant. Anything else -- another exception type (an internal error,
// exit 3), a broken invariant (reported as a ContractViolation), a crash, a sanitizer
// report, a hang -- is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gopt::fuzz {

/// An accepted input that breaks a documented invariant (a negative size, a graph that
/// does not round-trip). Deliberately not a core::InputError.
class ContractViolation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// What a check made of its input, for tests and the standalone driver's statistics.
enum class Outcome { kAccepted, kRejected };

/// A graph file (docs/graph-format.md): parsed, then its sizes checked, written back and
/// re-read identically, compiled, summarized and simulated on two devices.
Outcome check_graph_json(const std::uint8_t* data, std::size_t size);

/// An experiment config (docs/config.md). Lines `#set KEY=VALUE` anywhere in the input
/// are also applied as `--set` overrides (they are YAML comments, so mutations of the
/// text and of the overrides come from one input). Every agent's options of an accepted
/// config must pass the registry's own checks.
Outcome check_experiment_yaml(const std::uint8_t* data, std::size_t size);

/// A hardware profile (docs/hardware-profiles.md): parsed, built into a cluster, and the
/// cluster's numbers checked (positive finite bandwidths and capacities).
Outcome check_hardware_yaml(const std::uint8_t* data, std::size_t size);

/// A decision file (docs/decision-format.md) for the shipped mlp_tiny graph on
/// p100x2_pcie: an accepted decision must simulate.
Outcome check_decision_json(const std::uint8_t* data, std::size_t size);

/// An ONNX model (docs/onnx-import.md), imported as is and with --batch 4 --training: an
/// accepted model must give a graph that keeps the graph invariants.
Outcome check_onnx_model(const std::uint8_t* data, std::size_t size);

/// An HDF5 results file (docs/results-format.md), read as `gopt table` reads it and
/// opened as `gopt run --resume` opens it; a refused file must be left byte-identical.
Outcome check_results_hdf5(const std::uint8_t* data, std::size_t size);

/// The checks by format name ("graph_json", ...), for drivers and tests.
struct Target {
  const char* name;
  Outcome (*check)(const std::uint8_t*, std::size_t);
};
[[nodiscard]] const std::vector<Target>& targets();

}  // namespace gopt::fuzz
