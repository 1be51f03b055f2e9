// Calibration fits recover known parameters from synthetic measurements; time curves
// interpolate as documented; measured profiles round-trip through YAML; the calibrated cost
// model reads the curves.
#include "hardware/calibration.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "tests/support/expect_error.h"

namespace gopt::hardware {
namespace {

// Expects `expr` to throw an InputError whose message contains `part`.
#define EXPECT_ERROR_CONTAINS(expr, part)                               \
  do {                                                                  \
    std::string what_ = gopt::testing::error_of([&] { (void)(expr); }); \
    EXPECT_TRUE(gopt::testing::contains(what_, part)) << what_;         \
  } while (false)

using core::OpKind;

TEST(CalibrationTest, RooflineFitRecoversKnownParameters) {
  // Ground truth: 4 us launch, 1e11 FLOP/s and 2e10 B/s at efficiency 1 for matmul
  // (compute) and elementwise (memory), other kinds slower.
  RooflineFit truth;
  truth.launch_overhead_s = 4e-6;
  truth.peak_flops_per_s = 1e11;
  truth.memory_bandwidth_bytes_per_s = 2e10;
  truth.compute_efficiency.fill(1.0);
  truth.memory_efficiency.fill(1.0);
  truth.compute_efficiency[static_cast<std::size_t>(OpKind::kConv)] = 0.5;
  truth.memory_efficiency[static_cast<std::size_t>(OpKind::kConv)] = 0.25;
  truth.memory_efficiency[static_cast<std::size_t>(OpKind::kReduction)] = 0.4;
  truth.compute_efficiency[static_cast<std::size_t>(OpKind::kReduction)] = 0.01;
  std::vector<OpSample> samples;
  for (double scale : {1.0, 4.0, 16.0, 64.0, 256.0}) {
    // Compute-bound matmuls and convs, memory-bound elementwise ops and reductions, and a
    // reduction that is compute-bound at its size (both pieces of its roofline are seen).
    samples.push_back({OpKind::kMatMul, 1e6 * scale, Bytes(2e3 * scale), 0, "MatMul", ""});
    samples.push_back({OpKind::kConv, 2e6 * scale, Bytes(1e4 * scale), 0, "Conv2D", ""});
    samples.push_back({OpKind::kConv, 1e4 * scale, Bytes(2e5 * scale), 0, "Conv2D", ""});
    samples.push_back({OpKind::kElementwise, 1e3 * scale, Bytes(1.2e4 * scale), 0, "AddV2", ""});
    samples.push_back({OpKind::kReduction, 1e3 * scale, Bytes(8e4 * scale), 0, "Sum", ""});
    samples.push_back({OpKind::kReduction, 1e5 * scale, Bytes(1e3 * scale), 0, "Sum", ""});
  }
  for (auto& s : samples) s.time_s = predict(truth, s);
  RooflineFit fit = fit_roofline(samples);
  EXPECT_NEAR(fit.launch_overhead_s, 4e-6, 4e-8);
  EXPECT_NEAR(fit.peak_flops_per_s, 1e11, 1e9);
  EXPECT_NEAR(fit.memory_bandwidth_bytes_per_s, 2e10, 2e8);
  for (auto k : {OpKind::kMatMul, OpKind::kConv, OpKind::kElementwise, OpKind::kReduction}) {
    SCOPED_TRACE(std::string(core::to_string(k)));
    auto i = static_cast<std::size_t>(k);
    EXPECT_TRUE(fit.fitted[i]);
    EXPECT_LT(fit.residuals[i].max_rel_error, 0.01);
  }
  EXPECT_NEAR(fit.compute_efficiency[static_cast<std::size_t>(OpKind::kConv)], 0.5, 0.005);
  EXPECT_NEAR(fit.memory_efficiency[static_cast<std::size_t>(OpKind::kConv)], 0.25, 0.0025);
  EXPECT_NEAR(fit.memory_efficiency[static_cast<std::size_t>(OpKind::kReduction)], 0.4, 0.004);
  EXPECT_NEAR(fit.compute_efficiency[static_cast<std::size_t>(OpKind::kReduction)], 0.01, 1e-4);
  EXPECT_FALSE(fit.fitted[static_cast<std::size_t>(OpKind::kSoftmax)]);
  EXPECT_LT(fit.overall.rms_rel_error, 0.01);
}

TEST(CalibrationTest, LinkFitRecoversLatencyAndBandwidth) {
  std::vector<CopySample> copies;
  for (Bytes b : {Bytes{4096}, Bytes{65536}, Bytes{1} << 20, Bytes{16} << 20}) {
    copies.push_back({b, 3e-6 + static_cast<double>(b) / 8e9});
  }
  LinkFit fit = fit_link(copies);
  EXPECT_NEAR(fit.latency_s, 3e-6, 1e-9);
  EXPECT_NEAR(fit.bandwidth_bytes_per_s, 8e9, 1e6);
  EXPECT_LT(fit.residuals.max_rel_error, 1e-6);
  EXPECT_FALSE(fit.degenerate);
  // Noise that makes bigger copies faster: the smallest copies' time and the largest's rate.
  LinkFit noisy = fit_link({{4096, 5e-6}, {4096, 7e-6}, {65536, 3e-6}, {1 << 20, 1e-6}});
  EXPECT_TRUE(noisy.degenerate);
  EXPECT_NEAR(noisy.latency_s, 7e-6, 1e-12);  // the upper median of two
  EXPECT_NEAR(noisy.bandwidth_bytes_per_s, (1 << 20) / 1e-6, 1);
}

TEST(CalibrationTest, ExecutorFitRecoversPerOpAndPerStepCosts) {
  // Ground truth: 1.5 us per op, 20 us per step; chains of 128 .. 2048 NoOps, twice each,
  // and chains of ops whose kernels took 1 ms and 5 ms in all.
  std::vector<ExecutorSample> chains;
  for (int round = 0; round < 2; ++round) {
    for (int ops : {128, 512, 2048}) chains.push_back({ops, 20e-6 + 1.5e-6 * ops, 0});
  }
  chains.push_back({36, 20e-6 + 1.5e-6 * 36 + 1e-3, 1e-3});
  chains.push_back({300, 20e-6 + 1.5e-6 * 300 + 5e-3, 5e-3});
  ExecutorFit fit = fit_executor_overhead(chains);
  EXPECT_NEAR(fit.per_op_s, 1.5e-6, 1e-12);
  EXPECT_NEAR(fit.per_step_s, 20e-6, 1e-10);
  EXPECT_EQ(fit.residuals.samples, 8);
  EXPECT_LT(fit.residuals.max_rel_error, 1e-9);
  // Step ends that cost less than nothing (noise): through the origin, never negative.
  ExecutorFit origin = fit_executor_overhead({{100, 1e-4, 0}, {200, 2.2e-4, 0}});
  EXPECT_EQ(origin.per_step_s, 0);
  EXPECT_GT(origin.per_op_s, 1e-6);
  EXPECT_LT(origin.per_op_s, 1.1e-6);
  EXPECT_ERROR_CONTAINS(fit_executor_overhead({{100, 1e-4, 0}, {100, 2e-4, 0}}),
                        "at least two lengths");
  EXPECT_ERROR_CONTAINS(fit_executor_overhead({{100, 1e-4, 0}, {200, 0, 0}}), "executor[1]");
  EXPECT_ERROR_CONTAINS(fit_executor_overhead({{100, 1e-4, 0}, {200, 1e-4, 2e-4}}),
                        "above the kernels'");
}

TEST(CalibrationTest, KernelTimesLeaveOutTheExecutorOfTheOpAndItsPlaceholders) {
  // A chain op with two placeholder inputs measured at 10 us per op: 3 executor ops of 1 us.
  OpSample mm{OpKind::kMatMul, 1e6, 100, 10e-6, "MatMul", ""};
  mm.extra_executor_ops = 2;
  OpSample tiny{OpKind::kElementwise, 10, 10, 1e-6, "Relu", ""};  // below the overhead
  auto kernels = without_executor_overhead({mm, tiny}, 1e-6);
  EXPECT_NEAR(kernels[0].time_s, 7e-6, 1e-15);
  EXPECT_NEAR(kernels[1].time_s, 0.05e-6, 1e-15);  // floored at 5% of the measurement
  EXPECT_EQ(kernels[0].op_type, "MatMul");
}

TEST(CalibrationTest, BadMeasurementsAreInputErrors) {
  EXPECT_ERROR_CONTAINS(fit_roofline({}), "no measurements");
  EXPECT_ERROR_CONTAINS(fit_roofline({{OpKind::kMatMul, 1e6, 10, 0, "MatMul", ""}}),
                        "samples[0].time_s");
  EXPECT_ERROR_CONTAINS(fit_link({{4096, 1e-6}, {4096, 2e-6}}), "at least two sizes");
}

TEST(CalibrationTest, TimeCurvesInterpolateLogLogAndStayMonotone) {
  TimeCurve c;
  c.work = {100, 10000};
  c.time_s = {1e-6, 1e-4};
  EXPECT_DOUBLE_EQ(c.at(10), 1e-6);      // below: the first time (launch-bound)
  EXPECT_NEAR(c.at(1000), 1e-5, 1e-12);  // log-log midpoint
  EXPECT_NEAR(c.at(1e5), 1e-3, 1e-12);   // above: proportional to work
  std::vector<OpSample> samples = {{OpKind::kElementwise, 0, 100, 2e-6, "Tanh", ""},
                                   {OpKind::kElementwise, 0, 200, 1e-6, "Tanh", ""},  // a dip
                                   {OpKind::kElementwise, 0, 400, 5e-6, "Tanh", ""},
                                   {OpKind::kElementwise, 0, 100, 1e-6, "AddV2", ""}};
  RooflineFit unit;  // work = max(flops, bytes): peak, bandwidth and efficiencies 1, no launch
  unit.peak_flops_per_s = 1;
  unit.memory_bandwidth_bytes_per_s = 1;
  unit.compute_efficiency.fill(1.0);
  unit.memory_efficiency.fill(1.0);
  TimeCurves curves = build_time_curves(samples, unit);
  ASSERT_EQ(curves.op_types.count("Tanh"), 1u);
  const TimeCurve& tanh = curves.op_types.at("Tanh");
  EXPECT_EQ(tanh.work, (std::vector<double>{100, 200, 400}));
  // Isotonic: the dip and its predecessor are pooled to their mean.
  EXPECT_NEAR(tanh.time_s[0], 1.5e-6, 1e-15);
  EXPECT_NEAR(tanh.time_s[1], 1.5e-6, 1e-15);
  EXPECT_NEAR(tanh.time_s[2], 5e-6, 1e-15);
  // The kind's curve pools both op types (median per work value).
  EXPECT_EQ(curves.kinds[static_cast<std::size_t>(OpKind::kElementwise)].work.size(), 3u);
}

Cluster measured_cluster() {
  ClusterSpec spec;
  spec.name = "cpu2_test";
  spec.provenance.kind = "measured";
  spec.provenance.date = "2026-11-22T00:00:00Z";
  spec.provenance.machine = "test: \"quoted\" machine";
  spec.provenance.sources = {"gopt calibrate --backend cpu --devices 2"};
  spec.provenance.notes = "fit residuals: rms 1.0%";
  for (int d = 0; d < 2; ++d) {
    DeviceSpec dev("cpu" + std::to_string(d), "cpu_worker");
    dev.peak_flops(core::DType::kFloat32, 5e10)
        .memory_bandwidth(2e10)
        .memory_capacity(Bytes{1} << 32)
        .launch_overhead(2e-6)
        .efficiency(OpKind::kConv, 0.5, 0.25)
        .without_kernel(OpKind::kReshape);
    // Against roofline work (seconds): MatMul takes 1e-5 .. 1e-3 s at 2e-5 .. 2e-3 s of
    // work; the elementwise kind 1e-6 .. 1e-4 s at 1e-7 .. 1e-5 s.
    dev.op_type_curves["MatMul"] = TimeCurve{{2e-5, 2e-3}, {1e-5, 1e-3}};
    dev.kind_curves[static_cast<std::size_t>(OpKind::kElementwise)] =
        TimeCurve{{1e-7, 1e-5}, {1e-6, 1e-4}};
    spec.add_device(dev);
  }
  spec.add_switch("host_memory");
  for (int d = 0; d < 2; ++d) {
    spec.add_link(LinkSpec("cpu" + std::to_string(d), "host_memory").bandwidth(1e10).latency(1e-6));
  }
  return Cluster::build(spec);
}

TEST(CalibrationTest, MeasuredProfilesRoundTripThroughYaml) {
  Cluster cluster = measured_cluster();
  std::string yaml = profile_yaml(cluster.spec());
  ClusterSpec back = parse_profile_yaml(yaml, "round_trip.yaml");
  ASSERT_EQ(back.devices.size(), 2u);
  EXPECT_TRUE(back.devices[0].same_numbers(cluster.device(0))) << yaml;
  EXPECT_EQ(back.provenance.machine, cluster.provenance().machine);
  EXPECT_EQ(back.provenance.kind, "measured");
  EXPECT_EQ(back.links.size(), 2u);
  EXPECT_DOUBLE_EQ(back.links[1].bandwidth_bytes_per_s, 1e10);
  Cluster rebuilt = Cluster::build(back);
  EXPECT_EQ(rebuilt.num_device_types(), 1);
}

// Every number the writer prints reads back as exactly the double it holds, however close
// its neighbours: a fit can put two curve points one ulp apart, and a writer that prints
// nine digits ("%.9g") made them equal, so the file was not strictly increasing and the
// loader refused the profile gopt calibrate had just measured.
TEST(CalibrationTest, ProfileWriterReadsBackEveryNumberExactly) {
  const auto up = [](double v, int ulps) {
    for (int i = 0; i < ulps; ++i) v = std::nextafter(v, HUGE_VAL);
    return v;
  };
  ClusterSpec spec = measured_cluster().spec();
  for (auto& d : spec.devices) {
    d.peak_flops(core::DType::kFloat32, 1e11 / 3)
        .memory_bandwidth(0.1 + 0.2)
        .launch_overhead(up(2e-6, 1))
        .executor_overhead(1.0 / 7 * 1e-5)
        .efficiency(OpKind::kConv, up(0.5, 3), 2.0 / 3);
    const double w = 1.234567891e-5;
    d.kind_curves[static_cast<std::size_t>(OpKind::kElementwise)] =
        TimeCurve{{w, up(w, 1), up(w, 2), w * (1 + 1e-10), w * (1 + 3e-10)},
                  {3e-6, up(3e-6, 1), up(3e-6, 2), up(3e-6, 3), 1.0 / 3 * 1e-5}};
    d.op_type_curves["MatMul"] = TimeCurve{{1.0, up(1.0, 1)}, {2.0 / 3, up(2.0 / 3, 1)}};
    d.op_type_shapes["MatMul"] = ShapeTable{{1e7 / 3, up(1e7 / 3, 1)}, {200, 200}, {0.1, 0.3}};
  }
  for (auto& l : spec.links) l.bandwidth(1e10 / 3).latency(up(1e-6, 1));
  const std::string yaml = profile_yaml(spec);
  ClusterSpec back;
  ASSERT_NO_THROW(back = parse_profile_yaml(yaml, "near_equal.yaml")) << yaml;
  ASSERT_EQ(back.devices.size(), spec.devices.size());
  for (std::size_t i = 0; i < spec.devices.size(); ++i) {
    EXPECT_TRUE(back.devices[i].same_numbers(spec.devices[i])) << yaml;
  }
  ASSERT_EQ(back.links.size(), spec.links.size());
  for (std::size_t i = 0; i < spec.links.size(); ++i) {
    EXPECT_EQ(back.links[i].bandwidth_bytes_per_s, spec.links[i].bandwidth_bytes_per_s);
    EXPECT_EQ(back.links[i].latency_s, spec.links[i].latency_s);
  }
  // Six digits where they suffice, as a hand-written profile would say it.
  EXPECT_NE(yaml.find("time_s: [3e-06, 3.0000000000000005e-06, "), std::string::npos) << yaml;
  EXPECT_EQ(profile_yaml(back), yaml);
}

TEST(CalibrationTest, DevicesWithoutCopyEngineRoundTrip) {
  ClusterSpec spec = measured_cluster().spec();
  for (auto& d : spec.devices) d.copy_engine(false);
  std::string yaml = profile_yaml(spec);
  EXPECT_NE(yaml.find("copy_engine: false"), std::string::npos) << yaml;
  ClusterSpec back = parse_profile_yaml(yaml, "round_trip.yaml");
  EXPECT_FALSE(back.devices[0].has_copy_engine);
  EXPECT_TRUE(back.devices[0].same_numbers(spec.devices[0]));
  // Absent (every datasheet profile): a copy engine, as on GPUs.
  EXPECT_EQ(profile_yaml(measured_cluster().spec()).find("copy_engine"), std::string::npos);
  EXPECT_TRUE(load_profile("p100x2_pcie").device(0).has_copy_engine);
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(
          std::string(yaml).replace(yaml.find("copy_engine: false"), 18, "copy_engine: maybe"),
          "bad.yaml"),
      "device_types.cpu_worker.copy_engine");
}

TEST(CalibrationTest, MalformedTimeCurvesNameTheField) {
  std::string yaml = profile_yaml(measured_cluster().spec());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = yaml;
    auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(replace("work: [2e-05, 0.002]", "work: [2e-05]"), "bad.yaml"),
      "time_curves.MatMul");
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(replace("work: [2e-05, 0.002]", "work: [0.002, 2e-05]"), "bad.yaml"),
      "strictly increasing");
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(replace("kind:elementwise", "kind:elementwize"), "bad.yaml"),
      "unknown op kind 'elementwize'");
}

TEST(CalibrationTest, EveryOpPaysTheExecutorOverhead) {
  ClusterSpec spec = measured_cluster().spec();
  for (auto& d : spec.devices) d.executor_overhead(3e-6).without_kernel(OpKind::kInput);
  // The field round-trips, and a profile without it (every datasheet profile) reads as 0.
  std::string yaml = profile_yaml(spec);
  EXPECT_NE(yaml.find("executor_overhead_s: 3e-06"), std::string::npos) << yaml;
  ClusterSpec back = parse_profile_yaml(yaml, "round_trip.yaml");
  EXPECT_TRUE(back.devices[0].same_numbers(spec.devices[0]));
  EXPECT_EQ(profile_yaml(measured_cluster().spec()).find("executor_overhead_s"), std::string::npos);
  EXPECT_EQ(load_profile("p100x2_pcie").device(0).executor_overhead_s, 0);
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(std::string(yaml).replace(yaml.find("executor_overhead_s: 3e-06"), 26,
                                                   "executor_overhead_s: -1"),
                         "bad.yaml"),
      "executor_overhead_s");

  Cluster cluster = Cluster::build(spec);
  core::GraphBuilder b("ops");
  b.add("mm", "MatMul").flops(1e7).bytes_read(100).bytes_written(100).output_bytes(100);
  b.add("conv", "Conv2D").flops(1e8).bytes_read(1e6).bytes_written(1e6).output_bytes(1e6);
  b.add("reshape", "Reshape").output_bytes(1e6);
  b.add("input", "Placeholder").output_bytes(1e6);
  auto g = core::CompiledGraph::compile(std::move(b).build());
  CalibratedCostModel calibrated(cluster);
  EXPECT_NEAR(calibrated.op_time(g, 0, 0), 1e-4 + 3e-6, 1e-12);  // the curve + overhead
  EXPECT_NEAR(calibrated.op_time(g, 1, 0), 3e-6 + 2e-6 + 1e8 / 2.5e10, 1e-12);  // roofline
  EXPECT_NEAR(calibrated.op_time(g, 2, 0), 3e-6, 1e-15);  // no kernel: the overhead alone
  EXPECT_NEAR(calibrated.op_time(g, 3, 1), 3e-6, 1e-15);
  RooflineCostModel roofline(cluster);
  EXPECT_NEAR(roofline.op_time(g, 1, 0), 3e-6 + 2e-6 + 1e8 / 2.5e10, 1e-12);
  EXPECT_NEAR(roofline.op_time(g, 2, 0), 3e-6, 1e-15);
  // A fused kernel is one op for the executor.
  std::vector<core::NodeId> members = {0, 2};
  const std::vector<Seconds> times = {calibrated.op_time(g, 0, 0), calibrated.op_time(g, 2, 0)};
  EXPECT_NEAR(calibrated.fused_time(g, members.data(), times.data(), 2, 200, 0),
              3e-6 + 2e-6 + std::max(1e7 / 5e10, 200 / 2e10), 1e-12);
  std::vector<core::NodeId> views = {2, 3};
  const std::vector<Seconds> view_times = {calibrated.op_time(g, 2, 0),
                                           calibrated.op_time(g, 3, 0)};
  EXPECT_NEAR(calibrated.fused_time(g, views.data(), view_times.data(), 2, 0, 0), 3e-6, 1e-15);
}

// Fused loops: the ratio is fitted kernels against kernels, interpolates in log bytes,
// round-trips through YAML (malformed ones name the field), and the calibrated model costs
// a fused group as the CPU backend runs it.
TEST(CalibrationTest, FusedLoopsAreFittedReadAndCostedAsTheBackendRunsThem) {
  // exec 1 us: a 4-member group with 3 placeholders pays 7 us unfused, 4 us fused.
  const std::vector<FusionSample> samples = {
      {"a", 8192, 4, 3, 2.4e-5, 4.7e-5},   // kernels 2e-5 against 4e-5: 0.5
      {"b", 8192, 4, 3, 8.4e-5, 4.7e-5},   // 8e-5 against 4e-5: 2
      {"a", 65536, 4, 3, 3.6e-5, 5.7e-5},  // 3.2e-5 against 5e-5: 0.64
  };
  const FusedLoopRatio fit = fit_fused_loop_ratio(samples, 1e-6);
  ASSERT_EQ(fit.bytes, (std::vector<Bytes>{8192, 65536}));
  EXPECT_NEAR(fit.ratio[0], 1.0, 1e-9);  // geometric mean of 0.5 and 2
  EXPECT_NEAR(fit.ratio[1], 0.64, 1e-9);
  EXPECT_ERROR_CONTAINS(fit_fused_loop_ratio({{"a", 8192, 4, 3, 3e-6, 4.7e-5}}, 1e-6),
                        "not above its executor overhead");
  EXPECT_ERROR_CONTAINS(fit_fused_loop_ratio({}, 1e-6), "no fused-loop measurements");

  const FusedLoopRatio r{{1000, 100000}, {0.5, 1.5}};
  EXPECT_DOUBLE_EQ(r.at(10), 0.5);
  EXPECT_DOUBLE_EQ(r.at(1000), 0.5);
  EXPECT_NEAR(r.at(10000), 1.0, 1e-12);  // halfway in log bytes
  EXPECT_DOUBLE_EQ(r.at(1 << 30), 1.5);
  EXPECT_DOUBLE_EQ(FusedLoopRatio{}.at(1000), 1.0);

  ClusterSpec spec = measured_cluster().spec();
  for (auto& d : spec.devices) {
    d.executor_overhead(3e-6).without_kernel(OpKind::kReshape);
    d.fused_loop_ratio = r;
  }
  const std::string yaml = profile_yaml(spec);
  EXPECT_NE(yaml.find("fused_loop_ratio: {bytes: [1000, 100000], ratio: [0.5, 1.5]}"),
            std::string::npos)
      << yaml;
  ClusterSpec back = parse_profile_yaml(yaml, "round_trip.yaml");
  EXPECT_TRUE(back.devices[0].same_numbers(spec.devices[0]));
  EXPECT_EQ(profile_yaml(measured_cluster().spec()).find("fused_loop_ratio"), std::string::npos);
  auto with = [&](const std::string& to) {
    std::string s = yaml;
    const std::string from = "fused_loop_ratio: {bytes: [1000, 100000], ratio: [0.5, 1.5]}";
    return s.replace(s.find(from), from.size(), to);
  };
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(with("fused_loop_ratio: {bytes: [1000], ratio: [0.5, 1.5]}"), "bad.yaml"),
      "fused_loop_ratio");
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(with("fused_loop_ratio: {bytes: [1000, 10], ratio: [0.5, 1.5]}"),
                         "bad.yaml"),
      "strictly increasing bytes");
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(with("fused_loop_ratio: {bytes: [1000, 100000], ratio: [0, 1.5]}"),
                         "bad.yaml"),
      "fused_loop_ratio.ratio[0]");

  Cluster cluster = Cluster::build(spec);
  core::GraphBuilder b("group");
  auto mm = b.add("mm", "MatMul").flops(1e7).bytes_read(100).bytes_written(1000).output_bytes(1000);
  auto add =
      b.add("add", "AddV2").flops(250).bytes_read(2000).bytes_written(1000).output_bytes(1000);
  auto view = b.add("view", "Reshape").output_bytes(1000);
  b.connect(mm, add).connect(add, view);
  auto g = core::CompiledGraph::compile(std::move(b).build());
  CalibratedCostModel calibrated(cluster);
  const double exec = 3e-6;
  const double kernel_mm = calibrated.op_time(g, 0, 0) - exec;
  const double kernel_add = calibrated.op_time(g, 1, 0) - exec;
  ASSERT_GT(kernel_add, 0);
  std::vector<core::NodeId> members = {0, 1, 2};
  const std::vector<Seconds> times = {calibrated.op_time(g, 0, 0), calibrated.op_time(g, 1, 0),
                                      calibrated.op_time(g, 2, 0)};
  // One executor overhead, the product in full, the add at ratio 0.5 (1000 bytes), the view
  // nothing; the memory traffic the simulator passes plays no part.
  EXPECT_NEAR(calibrated.fused_time(g, members.data(), times.data(), 3, 12345, 0),
              exec + kernel_mm + 0.5 * kernel_add, 1e-15);
}

TEST(CalibrationTest, ShapeTablesHoldTheMedianOfEachMeasuredShape) {
  std::vector<OpSample> samples = {{OpKind::kMatMul, 2e6, 300, 3e-6, "MatMul", ""},
                                   {OpKind::kMatMul, 1e6, 200, 1e-6, "MatMul", ""},
                                   {OpKind::kMatMul, 1e6, 200, 5e-6, "MatMul", ""},
                                   {OpKind::kMatMul, 1e6, 200, 2e-6, "MatMul", ""},
                                   {OpKind::kMatMul, 1e6, 900, 4e-6, "MatMul", ""},
                                   {OpKind::kElementwise, 10, 10, 1e-6, "", ""}};  // no type
  auto tables = build_shape_tables(samples);
  ASSERT_EQ(tables.size(), 1u);
  const ShapeTable& mm = tables.at("MatMul");
  EXPECT_EQ(mm.flops, (std::vector<double>{1e6, 1e6, 2e6}));
  EXPECT_EQ(mm.bytes, (std::vector<Bytes>{200, 900, 300}));
  EXPECT_EQ(mm.time_s, (std::vector<double>{2e-6, 4e-6, 3e-6}));
}

TEST(CalibrationTest, CalibratedModelReproducesMeasuredShapesAndBlendsNearby) {
  ClusterSpec spec = measured_cluster().spec();
  // The MatMul curve gives 1e-4 s at 1e7 FLOPs and 200 bytes (see the test below); the
  // table says that shape measured 2e-4 s.
  for (auto& d : spec.devices) d.op_type_shapes["MatMul"] = ShapeTable{{1e7}, {200}, {2e-4}};
  std::string yaml = profile_yaml(spec);
  EXPECT_NE(yaml.find("shape_tables:"), std::string::npos) << yaml;
  ClusterSpec back = parse_profile_yaml(yaml, "round_trip.yaml");
  EXPECT_TRUE(back.devices[1].same_numbers(spec.devices[1]));
  EXPECT_ERROR_CONTAINS(
      parse_profile_yaml(std::string(yaml).replace(yaml.find("bytes: [200]"), 12, "bytes: []"),
                         "bad.yaml"),
      "shape_tables.MatMul");

  Cluster cluster = Cluster::build(back);
  core::GraphBuilder b("ops");
  b.add("same", "MatMul").flops(1e7).bytes_read(100).bytes_written(100).output_bytes(100);
  // 100x the FLOPs and bytes: far from the measured shape (about ln(100) * sqrt(2)).
  b.add("far", "MatMul").flops(1e9).bytes_read(1e4).bytes_written(1e4).output_bytes(1e4);
  b.add("tanh", "Tanh").flops(4e4).bytes_read(5000).bytes_written(5000).output_bytes(5000);
  auto g = core::CompiledGraph::compile(std::move(b).build());
  CalibratedCostModel model(cluster);
  EXPECT_NEAR(model.op_time(g, 0, 0), 2e-4, 2e-4 * 1e-5);  // the measured time
  // Far away the correction fades: the curve's 1e-2 s times 2^(w / (w + 1 / reach^2)), with
  // w = 1 / d^2 the measured shape's weight.
  double dx = std::log1p(1e9) - std::log1p(1e7), dy = std::log1p(2e4) - std::log1p(200);
  double d2 = dx * dx + dy * dy;
  double w = 1 / (d2 + 1e-6),
         prior = 1 / (CalibratedCostModel::kShapeReach * CalibratedCostModel::kShapeReach);
  EXPECT_NEAR(model.op_time(g, 1, 1), 1e-2 * std::pow(2.0, w / (w + prior)), 1e-9);
  EXPECT_NEAR(model.op_time(g, 2, 0), 8e-6, 1e-12);  // no table: the kind's curve alone
}

TEST(CalibrationTest, CalibratedCostModelPrefersOpTypeThenKindCurves) {
  Cluster cluster = measured_cluster();
  auto model = make_cost_model(cluster);
  EXPECT_EQ(model->name(), "calibrated");
  core::GraphBuilder b("ops");
  b.add("mm", "MatMul").flops(1e7).bytes_read(100).bytes_written(100).output_bytes(100);
  b.add("tanh", "Tanh").flops(4e4).bytes_read(5000).bytes_written(5000).output_bytes(5000);
  b.add("conv", "Conv2D").flops(1e8).bytes_read(1e6).bytes_written(1e6).output_bytes(1e6);
  b.add("reshape", "Reshape").output_bytes(1e6);
  auto g = core::CompiledGraph::compile(std::move(b).build());
  // MatMul: roofline work max(1e7 / 5e10, 200 / 2e10) = 2e-4 s, the log-log midpoint of its
  // own curve's (2e-5, 1e-5) and (2e-3, 1e-3): 1e-4 s.
  EXPECT_NEAR(model->op_time(g, 0, 0), 1e-4, 1e-12);
  // Tanh: no curve of its own; work max(4e4 / 5e10, 1e4 / 2e10) = 8e-7 s on the elementwise
  // kind's curve (1e-7, 1e-6) .. (1e-5, 1e-4), of slope 1 in log-log: 8e-6 s.
  EXPECT_NEAR(model->op_time(g, 1, 1), 8e-6, 1e-12);
  // Conv2D: no curve, the roofline: 2 us + 1e8 / (5e10 * 0.5).
  EXPECT_NEAR(model->op_time(g, 2, 0), 2e-6 + 1e8 / 2.5e10, 1e-12);
  EXPECT_EQ(model->op_time(g, 3, 0), 0);
  // Datasheet profiles keep the roofline.
  EXPECT_EQ(make_cost_model(load_profile("p100x2_pcie"))->name(), "roofline");
}

}  // namespace
}  // namespace gopt::hardware
