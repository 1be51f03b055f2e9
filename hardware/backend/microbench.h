// Calibration measurements on a real backend: per op kind, chains of identical ops over a
// range of shapes (the time per op of a chain includes everything the executor adds per op,
// which is what the simulator must predict), and copies of a range of sizes between two
// devices. hardware/calibration.h fits the cost model to them.
//
//   auto backend = make_backend(BackendKind::kCpu, 2);
//   CalibrationMeasurements m = measure_for_calibration(*backend, MicrobenchOptions());
//   RooflineFit fit = fit_roofline(m.ops);
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/options.h"
#include "hardware/backend/backend.h"
#include "hardware/calibration.h"

namespace gopt::hardware::backend {

/// What to measure; defaults here and nowhere else.
struct MicrobenchOptions {
  GOPT_OPTION(int, chain_length, 12)  ///< identical ops per timed chain, at least
  /// A chain is made longer until its ops' inputs add up to this many bytes (at most 2048
  /// ops), so that they do not fit in the per-core cache, as in a graph's step.
  GOPT_OPTION(Bytes, working_set_bytes, Bytes{16} << 20)
  GOPT_OPTION(int, warmup_steps, 2)
  GOPT_OPTION(int, timed_steps, 5)
  GOPT_OPTION(int, rounds, 3)  ///< interleaved rounds over all benchmarks; the median is kept
  /// Multiplies every benchmark size (0.1 for a quick smoke run in tests).
  GOPT_OPTION(double, size_scale, 1.0)
  /// Called with a line of progress ("matmul 3/8").
  std::function<void(const std::string&)> progress;
};

struct CalibrationMeasurements {
  /// Chain time per op as measured, with OpSample::extra_executor_ops set to the chain's
  /// input placeholders per op (without_executor_overhead takes the executor's part out).
  std::vector<OpSample> ops;
  /// What the executor added to every chain (its step time less its ops' kernel times):
  /// chains of NoOps of several lengths and every op chain above. Its cost per op.
  std::vector<ExecutorSample> executor;
  std::vector<CopySample> copies;  ///< empty with one device
  /// Fused groups against their ops unfused (measure_fused_loops); empty on CUDA, where the
  /// backend generates no fused loops.
  std::vector<FusionSample> fusion;
  /// Two independent chains on devices 0 and 1 against both on device 0 (time on one over
  /// time on two): 2 when the devices really run in parallel, about 1 when they share one
  /// processor (a CPU machine busy with other work). 0 with one device.
  double parallel_speedup = 0;
};

/// One microbenchmark: a single op of `op_type` with an output shape, FLOPs and the bytes
/// of each data input (so its bytes read follow the graphs' conventions).
struct MicrobenchOp {
  std::string op_type;
  core::Shape output;
  core::Flops flops = 0;
  std::vector<Bytes> inputs;
};

/// The shapes measured per kind (sizes multiplied by `size_scale`).
[[nodiscard]] std::vector<MicrobenchOp> calibration_ops(double size_scale);

/// A graph of `length` copies of `op` in a chain (control edges), each with its own
/// input placeholders: the graph a chain benchmark runs.
[[nodiscard]] core::Graph chain_graph(const MicrobenchOp& op, int length);
/// The same for a chain of different ops, in order; the graph is named `name`.
[[nodiscard]] core::Graph chain_graph(const std::vector<const MicrobenchOp*>& ops,
                                      const std::string& name);

/// The graph of a fused-loop sample: `groups` fused groups in a chain (control edges
/// between them), each a data chain of the ops of `mix` over `elements` floats, binary ops
/// reading a second input placeholder. Under fusion priorities 1 for every op each group
/// fuses whole (simulator/fusion.h).
[[nodiscard]] core::Graph fused_loop_graph(const std::vector<std::string>& mix, Bytes elements,
                                           int groups);

/// Fused-loop samples on device 0: two mixes (an LSTM cell's Mul, AddV2, Sigmoid, Tanh; a
/// chain of eight cheap ops) at four sizes (2,048 to 1M floats, times `size_scale`), each
/// run fused and unfused in interleaved rounds (median kept), the chain long enough that its
/// operands exceed `working_set_bytes`.
[[nodiscard]] std::vector<FusionSample> measure_fused_loops(Backend& backend,
                                                            const MicrobenchOptions& options);

/// Runs chains of NoOps of several lengths (the executor's own cost per op), every
/// calibration op chain on device 0 and, with two or more devices, chains
/// alternating between devices 0 and 1 (the cost of a cross-device edge: copy + handoff).
[[nodiscard]] CalibrationMeasurements measure_for_calibration(Backend& backend,
                                                              const MicrobenchOptions& options);

}  // namespace gopt::hardware::backend
