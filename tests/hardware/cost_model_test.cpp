// The roofline cost model against hand-computed times.
#include "hardware/cost_model.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/graph.h"
#include "hardware/profile.h"

namespace gopt::hardware {
namespace {

TEST(CostModelTest, RooflineTakesTheSlowerOfComputeAndMemory) {
  ClusterSpec spec;
  spec.add_device(DeviceSpec("gpu0", "toy")
                      .peak_flops(core::DType::kFloat32, 1e12)
                      .memory_bandwidth(1e11)
                      .memory_capacity(1 << 30)
                      .launch_overhead(5e-6)
                      .efficiency_all(0.5, 0.8)
                      .efficiency(core::OpKind::kMatMul, 1.0, 1.0)
                      .without_kernel(core::OpKind::kReshape));
  Cluster cluster = Cluster::build(spec);
  core::GraphBuilder b("ops");
  // 2e9 FLOP at 1e12 FLOP/s = 2 ms; 8 MB at 1e11 B/s = 80 us: compute-bound.
  b.add("mm", "MatMul")
      .flops(2e9)
      .bytes_read(4'000'000)
      .bytes_written(4'000'000)
      .output_bytes(4'000'000);
  // 1e6 FLOP at 0.5e12 = 2 us; 8e6 B at 0.8e11 = 100 us: memory-bound.
  b.add("relu", "Relu")
      .flops(1e6)
      .bytes_read(4'000'000)
      .bytes_written(4'000'000)
      .output_bytes(4'000'000);
  b.add("reshape", "Reshape").output_bytes(4'000'000);
  b.connect("mm", "relu").connect("relu", "reshape");
  auto g = core::CompiledGraph::compile(std::move(b).build());
  RooflineCostModel model(cluster);
  EXPECT_DOUBLE_EQ(model.op_time(g, 0, 0), 5e-6 + 2e-3);
  EXPECT_DOUBLE_EQ(model.op_time(g, 1, 0), 5e-6 + 1e-4);
  EXPECT_DOUBLE_EQ(model.op_time(g, 2, 0), 0.0);
  // Fused mm + relu: compute 2 ms + 2 us; traffic given as 8 MB at min efficiency 0.8.
  core::NodeId members[] = {0, 1};
  const Seconds times[] = {model.op_time(g, 0, 0), model.op_time(g, 1, 0)};
  EXPECT_DOUBLE_EQ(model.fused_time(g, members, times, 2, 8'000'000, 0), 5e-6 + 2e-3 + 2e-6);
  EXPECT_DOUBLE_EQ(model.fused_time(g, members + 1, times + 1, 1, 8'000'000, 0),
                   model.op_time(g, 1, 0));
}

TEST(CostModelTest, TransferTimeOverAProfileRoute) {
  Cluster cluster = load_profile("p100x4_pcie");
  RooflineCostModel model(cluster);
  // gpu0 -> gpu2 crosses 4 PCIe hops of 1.5 us at 12 GB/s.
  EXPECT_DOUBLE_EQ(model.transfer_time(12'000'000, 0, 2), 4 * 1.5e-6 + 1e-3);
  EXPECT_DOUBLE_EQ(model.transfer_time(12'000'000, 0, 1), 2 * 1.5e-6 + 1e-3);
  EXPECT_DOUBLE_EQ(model.transfer_time(12'000'000, 1, 1), 0.0);
}

TEST(CostModelTest, ComputeDtypeWithoutPeakIsAnError) {
  ClusterSpec spec;
  spec.add_device(DeviceSpec("gpu0", "toy")
                      .peak_flops(core::DType::kFloat32, 1e12)
                      .memory_bandwidth(1e11)
                      .memory_capacity(1 << 30));
  Cluster cluster = Cluster::build(spec);
  EXPECT_THROW(
      RooflineCostModel(cluster, RooflineOptions().with_compute_dtype(core::DType::kFloat16)),
      core::InputError);
}

TEST(ClusterTest, RejectsBadSpecs) {
  ClusterSpec spec;
  spec.add_device(DeviceSpec("gpu0", "toy")
                      .peak_flops(core::DType::kFloat32, 1)
                      .memory_bandwidth(1)
                      .memory_capacity(1));
  spec.add_device(DeviceSpec("gpu1", "toy")
                      .peak_flops(core::DType::kFloat32, 1)
                      .memory_bandwidth(1)
                      .memory_capacity(1));
  auto no_link = spec;
  EXPECT_THROW((void)Cluster::build(no_link), core::InputError);
  auto bad_end = spec;
  bad_end.add_link(LinkSpec("gpu0", "gpu9").bandwidth(1));
  EXPECT_THROW((void)Cluster::build(bad_end), core::InputError);
  auto duplicate = spec;
  duplicate.devices[1].name = "gpu0";
  EXPECT_THROW((void)Cluster::build(duplicate), core::InputError);
  auto ok = spec;
  ok.add_link(LinkSpec("gpu0", "gpu1").bandwidth(1));
  Cluster c = Cluster::build(ok);
  EXPECT_EQ(c.num_device_types(), 1);
  EXPECT_EQ(c.find_device("gpu1"), 1);
  EXPECT_EQ(c.find_device("gpu2"), -1);
}

}  // namespace
}  // namespace gopt::hardware
