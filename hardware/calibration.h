// Calibration of the roofline cost model from measurements: least-squares fits of the
// launch overhead and the per-op-kind efficiency factors from timed microbenchmarks, and of
// a link's latency and bandwidth from timed copies (the measured profile they go into is
// written by profile_yaml, hardware/profile.h). LibTorch-free: the backends measure, this file only
// fits numbers, so its tests feed it synthetic measurements with known parameters.
//
//   RooflineFit fit = fit_roofline(samples);               // samples from the backend
//   LinkFit link = fit_link(copy_samples);
//   std::string yaml = profile_yaml(spec);  // hardware/profile.h; spec filled from the fits
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "hardware/cluster.h"

namespace gopt::hardware {

/// One timed op: its kind, FLOPs, bytes read + written, and the measured time.
struct OpSample {
  core::OpKind kind = core::OpKind::kOther;
  core::Flops flops = 0;
  Bytes bytes = 0;
  Seconds time_s = 0;
  std::string op_type;  ///< framework op type ("MatMul"), for the time curves
  std::string label;    ///< what ran, for reports ("MatMul [64x256]")
  /// Ops without a kernel that the measurement ran per timed op (a chain benchmark's input
  /// placeholders): each cost the executor overhead, which is not the op's own time.
  int extra_executor_ops = 0;
};

/// One fused-loop measurement: a fused group of `members` elementwise ops of `bytes_written`
/// bytes each (and `inputs` input placeholders), timed as one fused task and unfused, each
/// the time per group of a chain of such groups on one device, executor overhead included.
struct FusionSample {
  std::string mix;  ///< which ops ("lstm_cell": Mul, AddV2, Sigmoid, Tanh), for reports
  Bytes bytes_written = 0;
  int members = 0;
  int inputs = 0;
  Seconds fused_s = 0;
  Seconds unfused_s = 0;
};

/// The measured FusedLoopRatio: per size, the geometric mean over the samples of that size
/// of (fused − executor overhead once and per input) / (unfused − executor overhead per
/// member and per input), kernels against kernels. Throws InputError when there are no
/// samples or one has a time not above its executor overhead.
[[nodiscard]] FusedLoopRatio fit_fused_loop_ratio(const std::vector<FusionSample>& samples,
                                                  Seconds executor_overhead_s);

/// One timed copy between devices.
struct CopySample {
  Bytes bytes = 0;
  Seconds time_s = 0;
};

/// Fit quality of a set of samples: relative errors (prediction - measured) / measured.
struct FitResiduals {
  int samples = 0;
  double rms_rel_error = 0;  ///< root mean square
  double max_rel_error = 0;  ///< largest absolute value
};

/// The fitted roofline of one device type:
///   time = launch_overhead_s + max(flops / (peak * compute[kind]),
///                                  bytes / (bandwidth * memory[kind]))
/// `peak` and `bandwidth` are the best rates any kind reached, so every efficiency is in
/// (0, 1] and the best kind has 1.
struct RooflineFit {
  Seconds launch_overhead_s = 0;
  FlopsPerSecond peak_flops_per_s = 0;
  BytesPerSecond memory_bandwidth_bytes_per_s = 0;
  std::array<double, core::kNumOpKinds> compute_efficiency{};
  std::array<double, core::kNumOpKinds> memory_efficiency{};
  std::array<bool, core::kNumOpKinds> fitted{};  ///< the kind had samples
  std::array<FitResiduals, core::kNumOpKinds> residuals{};
  FitResiduals overall;
};

/// One timed chain of `ops` ops (kernels and placeholders) run by a real executor: its step
/// time and the sum of its ops' kernel times (0 for a chain of ops without kernels); the
/// difference is what the executor added.
struct ExecutorSample {
  int ops = 0;
  Seconds time_s = 0;         ///< step time of the whole chain
  Seconds kernel_time_s = 0;  ///< sum of its kernels' own times
};

/// The executor's fixed cost per op and per step, from `time = per_step + ops * per_op`.
struct ExecutorFit {
  Seconds per_op_s = 0;    ///< charged to every op (DeviceSpec::executor_overhead_s)
  Seconds per_step_s = 0;  ///< starting and ending a step (reported, not modelled)
  FitResiduals residuals;
};

/// Fits the executor overhead per op by least squares on relative error over chains of
/// several lengths: `time - kernel_time = per_step + ops * per_op`, both >= 0. Throws
/// InputError for fewer than two distinct lengths, a non-positive time or kernel times that
/// exceed the step time.
[[nodiscard]] ExecutorFit fit_executor_overhead(const std::vector<ExecutorSample>& samples);

/// The samples with the executor's part taken out: each time less `per_op_s` for the op
/// itself and for each of its OpSample::extra_executor_ops, so that what remains is the
/// kernel's time, which the roofline and the time curves describe (the cost model adds
/// the executor overhead back once per op). A time never drops below 5% of the measured
/// one (a kernel takes some time; the overhead is a median over other ops).
[[nodiscard]] std::vector<OpSample> without_executor_overhead(std::vector<OpSample> samples,
                                                              Seconds per_op_s);

/// Fits the launch overhead (shared by all kinds) and per-kind compute and memory
/// efficiencies by minimising the squared relative error (so microsecond and millisecond
/// ops weigh alike). For a given overhead each kind is a two-piece linear fit (each sample
/// assigned to the term that dominates it, refitted until the assignment is stable); the
/// overhead is found by golden-section search. Kinds without samples get efficiency 1.
/// Throws InputError when there are no samples or a sample has a non-positive time.
[[nodiscard]] RooflineFit fit_roofline(const std::vector<OpSample>& samples);

/// Measured time curves (DeviceSpec::op_type_curves and kind_curves) from samples, against
/// their roofline work under `fit` (TimeCurve): one point per distinct work value (the
/// median time of the samples with that value), made
/// non-decreasing in work by isotonic regression (more work never takes less time; a dip is
/// measurement noise).
struct TimeCurves {
  std::map<std::string, TimeCurve> op_types;
  std::array<TimeCurve, core::kNumOpKinds> kinds{};
  /// Interpolation error at each op type's interior points, each predicted by the curve
  /// without it (how far off a shape between the measured ones can be).
  FitResiduals leave_one_out;
};

[[nodiscard]] TimeCurves build_time_curves(const std::vector<OpSample>& samples,
                                           const RooflineFit& fit);

/// The lookup tables of measured shapes per op type (DeviceSpec::op_type_shapes): one entry
/// per distinct (FLOPs, bytes) of an op type, the median time of its samples, sorted by
/// FLOPs then bytes.
[[nodiscard]] std::map<std::string, ShapeTable> build_shape_tables(
    const std::vector<OpSample>& samples);

/// Predicted time of one sample under a fit (the formula above).
[[nodiscard]] Seconds predict(const RooflineFit& fit, const OpSample& sample);

/// A link's latency and bandwidth.
struct LinkFit {
  Seconds latency_s = 0;
  BytesPerSecond bandwidth_bytes_per_s = 0;
  FitResiduals residuals;
  /// The times did not grow with size (noise): latency is the smallest copies' median time
  /// and bandwidth the largest copies' median rate instead of a least-squares fit.
  bool degenerate = false;
};

/// Fits `time = latency + bytes / bandwidth` by least squares on relative error (see
/// LinkFit::degenerate when the slope is not positive). Throws InputError for fewer than
/// two distinct sizes.
[[nodiscard]] LinkFit fit_link(const std::vector<CopySample>& samples);

}  // namespace gopt::hardware
