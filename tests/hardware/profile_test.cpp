// Hardware profiles: the shipped ones load with their topologies, lookup by name or path,
// and bad profiles are rejected naming the file, the field and the line.
#include "hardware/profile.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "hardware/cluster.h"

namespace gopt::hardware {
namespace {

const std::string kData = std::string(GOPT_TEST_DATA_DIR) + "/hardware/";

std::string error_of(const std::string& name_or_path) {
  try {
    (void)load_profile(name_or_path);
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(ProfileTest, ShippedProfilesLoadWithProvenance) {
  auto names = list_profiles();
  for (const char* expected :
       {"p100x2_pcie", "p100x4_pcie", "p100x8_pcie", "v100x8_dgx1", "h100x8_nvswitch"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    Cluster c = load_profile(name);
    EXPECT_EQ(c.name(), name);
    EXPECT_FALSE(c.provenance().sources.empty());
    EXPECT_FALSE(c.provenance().date.empty());
    EXPECT_EQ(c.num_device_types(), 1);
    for (DeviceId s = 0; s < c.num_devices(); ++s) {
      EXPECT_FALSE(c.device(s).source.empty());
      for (DeviceId t = 0; t < c.num_devices(); ++t) {
        EXPECT_EQ(c.route(s, t).empty(), s == t) << c.describe_route(s, t);
      }
    }
  }
}

// The profile `gopt calibrate --backend cuda` wrote on an H100 (docs/hardware-backend.md):
// kept as a file, not a name, since it describes the LibTorch backend on that machine.
TEST(ProfileTest, MeasuredH100ProfileLoadsWithItsCurves) {
  Cluster c = load_profile(std::string(GOPT_SOURCE_DIR) +
                           "/hardware/profiles/measured/h100x1_libtorch_cuda.yaml");
  EXPECT_EQ(c.provenance().kind, "measured");
  ASSERT_EQ(c.num_devices(), 1);
  EXPECT_GT(c.device(0).executor_overhead_s, 0);
  EXPECT_FALSE(c.device(0).op_type_curves.empty());
  EXPECT_FALSE(c.device(0).op_type_shapes.empty());
  EXPECT_GT(c.device(0).memory_capacity_bytes, core::Bytes{64} << 30);  // an 80 GB card
  auto names = list_profiles();
  EXPECT_EQ(std::find(names.begin(), names.end(), c.name()), names.end());
}

TEST(ProfileTest, PcieTreeRoutes) {
  Cluster c = load_profile("p100x4_pcie");
  ASSERT_EQ(c.num_devices(), 4);
  EXPECT_EQ(c.describe_route(0, 1), "gpu0 -> plx0 -> gpu1");
  EXPECT_EQ(c.describe_route(0, 2), "gpu0 -> plx0 -> host -> plx1 -> gpu2");
  EXPECT_EQ(c.describe_route(3, 0), "gpu3 -> plx1 -> host -> plx0 -> gpu0");
  EXPECT_DOUBLE_EQ(c.device(0).peak_flops_per_s[static_cast<std::size_t>(core::DType::kFloat32)],
                   9.3e12);
  Cluster eight = load_profile("p100x8_pcie");
  EXPECT_EQ(eight.describe_route(0, 7), "gpu0 -> plx0 -> cpu0 -> cpu1 -> plx3 -> gpu7");
}

TEST(ProfileTest, Dgx1HybridCubeMesh) {
  Cluster c = load_profile("v100x8_dgx1");
  EXPECT_EQ(c.describe_route(0, 3), "gpu0 -> gpu3");  // NVLink x2
  EXPECT_EQ(c.describe_route(5, 1), "gpu5 -> gpu1");
  // Each GPU has NVLink to exactly four peers (six links, some bonded).
  for (DeviceId s = 0; s < 8; ++s) {
    int direct = 0;
    for (DeviceId t = 0; t < 8; ++t) direct += s != t && c.route(s, t).size() == 1;
    EXPECT_EQ(direct, 4) << "gpu" << s;
  }
  // gpu0 and gpu5 share no NVLink: PCIe through both sockets (GPUs do not forward).
  EXPECT_EQ(c.describe_route(0, 5), "gpu0 -> plx0 -> cpu0 -> cpu1 -> plx2 -> gpu5");
}

TEST(ProfileTest, NvswitchIsTwoHopsEverywhere) {
  Cluster c = load_profile("h100x8_nvswitch");
  for (DeviceId s = 0; s < 8; ++s) {
    for (DeviceId t = 0; t < 8; ++t) {
      if (s != t) {
        EXPECT_EQ(c.route(s, t).size(), 2u);
      }
    }
  }
  EXPECT_EQ(c.device(0).memory_capacity_bytes, 80LL << 30);
}

TEST(ProfileTest, ByPathWithLinkTypesOverridesAndExplicitRoutes) {
  Cluster c = load_profile(kData + "two_gpus_explicit_route.yaml");
  EXPECT_EQ(c.compute_dtype(), core::DType::kFloat16);
  EXPECT_EQ(c.device(1).compute_streams, 2);
  EXPECT_DOUBLE_EQ(c.device(0).compute_efficiency[static_cast<std::size_t>(core::OpKind::kMatMul)],
                   1.0);
  EXPECT_DOUBLE_EQ(c.device(0).compute_efficiency[static_cast<std::size_t>(core::OpKind::kConv)],
                   0.5);
  EXPECT_TRUE(c.device(0).no_kernel[static_cast<std::size_t>(core::OpKind::kReshape)]);
  EXPECT_EQ(c.describe_route(0, 1), "gpu0 -> host -> gpu1");  // explicit
  EXPECT_EQ(c.describe_route(1, 0), "gpu1 -> gpu0");          // computed: the direct link
  EXPECT_EQ(c.link(1).type, "slow");
  EXPECT_DOUBLE_EQ(c.link(2).latency_s, 3.0e-5);  // per-link override of its type
  EXPECT_DOUBLE_EQ(c.link(2).bandwidth_bytes_per_s, 1.0e9);
  EXPECT_EQ(c.link(0).name, "direct");
}

TEST(ProfileTest, UnknownNameListsTheAvailableProfiles) {
  auto what = error_of("p100x3_pcie");
  EXPECT_TRUE(contains(what, "unknown hardware profile 'p100x3_pcie'")) << what;
  EXPECT_TRUE(contains(what, "p100x4_pcie")) << what;
  EXPECT_TRUE(contains(error_of("/no/such/profile.yaml"), "/no/such/profile.yaml"));
}

TEST(ProfileTest, BadProfilesNameFileFieldAndLine) {
  auto missing = error_of(kData + "missing_bandwidth.yaml");
  EXPECT_TRUE(contains(missing, "missing_bandwidth.yaml")) << missing;
  EXPECT_TRUE(contains(missing, "device_types.toy.memory_bandwidth_bytes_per_s")) << missing;
  EXPECT_TRUE(contains(missing, "(line 7)")) << missing;
  EXPECT_TRUE(contains(missing, "missing required field")) << missing;

  auto negative = error_of(kData + "negative_bandwidth.yaml");
  EXPECT_TRUE(contains(negative, "negative_bandwidth.yaml")) << negative;
  EXPECT_TRUE(contains(negative, "links[0].bandwidth_bytes_per_s (line 15)")) << negative;
  EXPECT_TRUE(contains(negative, "expected a positive number, found -5.0e9")) << negative;

  auto route = error_of(kData + "unknown_route_device.yaml");
  EXPECT_TRUE(contains(route, "routes[0].to (line 20)")) << route;
  EXPECT_TRUE(contains(route, "unknown device 'gpu7'")) << route;

  auto disconnected = error_of(kData + "disconnected.yaml");
  EXPECT_TRUE(contains(disconnected, "no path between devices 'gpu0' and 'gpu1'")) << disconnected;
}

TEST(ProfileTest, ParseErrorsInText) {
  auto fails = [](const std::string& text) {
    try {
      (void)parse_profile_yaml(text, "inline.yaml");
    } catch (const core::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(contains(fails("format: [unclosed"), "invalid YAML")) << fails("format: [unclosed");
  EXPECT_TRUE(contains(fails("format: other\nversion: 1\n"), "expected 'gopt-hardware-profile'"));
  auto bad_kind = fails(
      "format: gopt-hardware-profile\nversion: 1\nname: x\n"
      "provenance: {kind: datasheet, date: d, sources: [s]}\n"
      "device_types:\n  t:\n    peak_flops_per_s: {float32: 1}\n"
      "    memory_bandwidth_bytes_per_s: 1\n    memory_capacity_bytes: 1\n"
      "    launch_overhead_s: 0\n    efficiency: {compute: {matmull: 0.5}}\n"
      "devices: [{name: g, type: t}]\nlinks: []\n");
  EXPECT_TRUE(contains(bad_kind, "unknown op kind 'matmull'")) << bad_kind;
  EXPECT_TRUE(contains(bad_kind, "(line 11)")) << bad_kind;
}

// The cost model charges FLOPs at the profile's compute_dtype: a device without a peak for
// it is refused when the profile loads, not later by the cost model (fuzz_hardware_yaml,
// tests/fuzz/corpus/hardware_yaml/regression-no-peak-for-compute-dtype.yaml).
TEST(ProfileTest, EveryDeviceNeedsAPeakForTheComputeDtype) {
  const std::string text =
      "format: gopt-hardware-profile\nversion: 1\nname: x\n"
      "provenance: {kind: datasheet, date: d, sources: [s]}\n"
      "device_types:\n  t:\n    peak_flops_per_s: {float16: 1.0e12}\n"
      "    memory_bandwidth_bytes_per_s: 1\n    memory_capacity_bytes: 1\n"
      "    launch_overhead_s: 0\n"
      "devices: [{name: g, type: t}]\nlinks: []\n";
  try {
    (void)Cluster::build(parse_profile_yaml(text, "inline.yaml"), "inline.yaml");
    ADD_FAILURE() << "a profile without a float32 peak loaded";
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "inline.yaml: devices[0].peak_flops_per_s.float32: the profile's compute_dtype is "
              "float32 but device 'g' has no positive peak for it");
  }
}

}  // namespace
}  // namespace gopt::hardware
