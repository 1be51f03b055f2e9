// The profile-driven cost model: measured op times where given, the base model elsewhere,
// the executor overhead charged once, and only for the graph it was built for.
#include "hardware/profiled_cost_model.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "core/graph.h"

namespace gopt::hardware {
namespace {

// cpu0 and cpu1 of one type (executor overhead 0.2 us), gpu0 of another.
Cluster toy_cluster() {
  ClusterSpec spec;
  for (const char* name : {"cpu0", "cpu1"}) {
    spec.add_device(DeviceSpec(name, "cpu_worker")
                        .peak_flops(core::DType::kFloat32, 1e10)
                        .memory_bandwidth(1e10)
                        .memory_capacity(1 << 30)
                        .launch_overhead(1e-6)
                        .executor_overhead(2e-7)
                        .without_kernel(core::OpKind::kReshape));
  }
  spec.add_device(DeviceSpec("gpu0", "toy_gpu")
                      .peak_flops(core::DType::kFloat32, 1e12)
                      .memory_bandwidth(1e11)
                      .memory_capacity(1 << 30)
                      .launch_overhead(5e-6)
                      .without_kernel(core::OpKind::kReshape));
  spec.add_link(LinkSpec("cpu0", "cpu1").bandwidth(1e9).latency(1e-6));
  spec.add_link(LinkSpec("cpu0", "gpu0").bandwidth(1e10).latency(2e-6));
  spec.add_link(LinkSpec("cpu1", "gpu0").bandwidth(1e10).latency(2e-6));
  return Cluster::build(spec);
}

core::CompiledGraph toy_graph(int extra_ops = 0) {
  core::GraphBuilder b("ops");
  b.add("mm", "MatMul").flops(2e6).bytes_read(40'000).bytes_written(40'000).output_bytes(40'000);
  b.add("relu", "Relu").flops(1e4).bytes_read(40'000).bytes_written(40'000).output_bytes(40'000);
  b.add("reshape", "Reshape").output_bytes(40'000);
  b.connect("mm", "relu").connect("relu", "reshape");
  for (int i = 0; i < extra_ops; ++i) {
    b.add("extra" + std::to_string(i), "Relu").flops(1).output_bytes(4);
  }
  return core::CompiledGraph::compile(std::move(b).build());
}

TEST(ProfiledCostModelTest, MeasuredTimesPlusTheExecutorOverheadElseTheBase) {
  Cluster cluster = toy_cluster();
  ASSERT_EQ(cluster.device_type_index(0), cluster.device_type_index(1));
  ASSERT_NE(cluster.device_type_index(0), cluster.device_type_index(2));
  auto g = toy_graph();
  RooflineCostModel base(cluster);
  // mm measured at 1 ms, relu not measured, reshape (no kernel) measured 0.
  ProfiledCostModel model(base, {1e-3, std::numeric_limits<double>::quiet_NaN(), 0.0});
  EXPECT_EQ(model.name(), "profiled");
  EXPECT_EQ(model.num_nodes(), 3);
  EXPECT_EQ(model.num_measured(), 2);
  EXPECT_TRUE(model.measured(0));
  EXPECT_FALSE(model.measured(1));
  // The measured kernel plus the executor's 0.2 us, on both devices of the measured type.
  EXPECT_DOUBLE_EQ(model.op_time(g, 0, 0), 1e-3 + 2e-7);
  EXPECT_DOUBLE_EQ(model.op_time(g, 0, 1), 1e-3 + 2e-7);
  EXPECT_DOUBLE_EQ(model.op_time(g, 2, 0), 2e-7);
  // Unmeasured ops and devices of another type: the base model.
  EXPECT_DOUBLE_EQ(model.op_time(g, 1, 0), base.op_time(g, 1, 0));
  EXPECT_DOUBLE_EQ(model.op_time(g, 0, 2), base.op_time(g, 0, 2));
  EXPECT_NE(model.op_time(g, 0, 2), model.op_time(g, 0, 0));
  // Fused kernels and links are the base model's.
  core::NodeId members[] = {0, 1};
  const Seconds times[] = {model.op_time(g, 0, 1), model.op_time(g, 1, 1)};
  EXPECT_DOUBLE_EQ(model.fused_time(g, members, times, 2, 80'000, 1),
                   base.fused_time(g, members, times, 2, 80'000, 1));
  for (LinkId l = 0; l < cluster.num_links(); ++l) {
    EXPECT_DOUBLE_EQ(model.link_cost(l).latency_s, base.link_cost(l).latency_s);
    EXPECT_DOUBLE_EQ(model.link_cost(l).seconds_per_byte, base.link_cost(l).seconds_per_byte);
  }
  EXPECT_DOUBLE_EQ(model.transfer_time(1'000'000, 0, 2), base.transfer_time(1'000'000, 0, 2));
}

TEST(ProfiledCostModelTest, NegativeAndInfiniteTimesAreNotMeasured) {
  Cluster cluster = toy_cluster();
  auto g = toy_graph();
  RooflineCostModel base(cluster);
  ProfiledCostModel model(base, {-1.0, std::numeric_limits<double>::infinity(), 5e-6},
                          /*measured_device=*/1);
  EXPECT_EQ(model.num_measured(), 1);
  EXPECT_DOUBLE_EQ(model.op_time(g, 0, 0), base.op_time(g, 0, 0));
  EXPECT_DOUBLE_EQ(model.op_time(g, 1, 1), base.op_time(g, 1, 1));
  EXPECT_DOUBLE_EQ(model.op_time(g, 2, 0), 5e-6 + 2e-7);
}

TEST(ProfiledCostModelTest, MeasuredOnAnotherDeviceTypeAppliesThere) {
  Cluster cluster = toy_cluster();
  auto g = toy_graph();
  RooflineCostModel base(cluster);
  ProfiledCostModel model(base, {1e-4, 1e-5, 0.0}, /*measured_device=*/2);
  EXPECT_DOUBLE_EQ(model.op_time(g, 0, 2), 1e-4);  // the GPU has no executor overhead
  EXPECT_DOUBLE_EQ(model.op_time(g, 0, 0), base.op_time(g, 0, 0));
}

TEST(ProfiledCostModelTest, RejectsAGraphOfAnotherSize) {
  Cluster cluster = toy_cluster();
  RooflineCostModel base(cluster);
  ProfiledCostModel model(base, {1e-3, 1e-4, 0.0});
  auto other = toy_graph(/*extra_ops=*/2);
  EXPECT_THROW((void)model.op_time(other, 0, 0), std::logic_error);
  EXPECT_THROW(ProfiledCostModel(base, {1e-3}, /*measured_device=*/3), std::logic_error);
}

}  // namespace
}  // namespace gopt::hardware
