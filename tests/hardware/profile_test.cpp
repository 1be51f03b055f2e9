// Hardware profiles: the shipped ones load with their topologies, lookup by name or path,
// and bad profiles are rejected naming the file, the field and the line.
#include "hardware/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "core/errors.h"
#include "core/graph_io.h"
#include "core/strings.h"
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
  EXPECT_TRUE(contains(missing,
                       "missing_bandwidth.yaml:7:5: device_types.toy.memory_bandwidth_bytes_per_s: "
                       "missing required key 'memory_bandwidth_bytes_per_s'"))
      << missing;

  auto negative = error_of(kData + "negative_bandwidth.yaml");
  EXPECT_TRUE(contains(negative,
                       "negative_bandwidth.yaml:15:47: links[0].bandwidth_bytes_per_s: expected a "
                       "positive number, found '-5.0e9'"))
      << negative;

  auto route = error_of(kData + "unknown_route_device.yaml");
  EXPECT_TRUE(
      contains(route, "unknown_route_device.yaml:20:22: routes[0].to: unknown device 'gpu7'"))
      << route;

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
  EXPECT_TRUE(contains(fails("format: [unclosed"), "not valid YAML")) << fails("format: [unclosed");
  EXPECT_TRUE(contains(fails("format: other\nversion: 1\n"), "expected 'gopt-hardware-profile'"));
  auto bad_kind = fails(
      "format: gopt-hardware-profile\nversion: 1\nname: x\n"
      "provenance: {kind: datasheet, date: d, sources: [s]}\n"
      "device_types:\n  t:\n    peak_flops_per_s: {float32: 1}\n"
      "    memory_bandwidth_bytes_per_s: 1\n    memory_capacity_bytes: 1\n"
      "    launch_overhead_s: 0\n    efficiency: {compute: {matmull: 0.5}}\n"
      "devices: [{name: g, type: t}]\nlinks: []\n");
  EXPECT_TRUE(contains(bad_kind, "unknown op kind 'matmull'")) << bad_kind;
  EXPECT_TRUE(contains(bad_kind, "inline.yaml:11:")) << bad_kind;
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

// A small valid profile whose device type's fields are `fields` (YAML lines, 4-space
// indented).
std::string profile_with(const std::string& fields, const std::string& top = "") {
  return "format: gopt-hardware-profile\nversion: 1\n" + top + "name: x\n" +
         "provenance: {kind: datasheet, date: d, sources: [s]}\n"
         "device_types:\n  t:\n    peak_flops_per_s: {float32: 1.0e12}\n"
         "    memory_bandwidth_bytes_per_s: 1.0e11\n    launch_overhead_s: 0\n" +
         fields + "devices: [{name: g, type: t}]\nlinks: []\n";
}

std::string parse_error(const std::string& text) {
  try {
    (void)parse_profile_yaml(text, "inline.yaml");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

// Profiles read scalars in the configs' grammar (core::parse_integer, parse_number,
// parse_bool): "1e3" is a number but not an integer, in a profile as in a config, and
// YAML's own spellings that the config grammar lacks are refused.
TEST(ProfileTest, ScalarsReadInTheConfigsGrammar) {
  const auto exponent = parse_error(profile_with("    memory_capacity_bytes: 1e3\n"));
  EXPECT_TRUE(contains(exponent,
                       "inline.yaml:10:28: device_types.t.memory_capacity_bytes: "
                       "expected a positive integer (bytes), found '1e3'"))
      << exponent;
  EXPECT_EQ(parse_profile_yaml(profile_with("    memory_capacity_bytes: 1000\n"), "inline.yaml")
                .devices[0]
                .memory_capacity_bytes,
            1000);
  const auto yaml_infinity =
      parse_error(profile_with("    memory_capacity_bytes: 1\n    executor_overhead_s: .inf\n"));
  EXPECT_FALSE(yaml_infinity.empty());
  const auto yaml_bool =
      parse_error(profile_with("    memory_capacity_bytes: 1\n    copy_engine: True-ish\n"));
  EXPECT_TRUE(contains(yaml_bool, "copy_engine")) << yaml_bool;
  EXPECT_TRUE(contains(yaml_bool, "true or false (also yes/no, on/off, 1/0)")) << yaml_bool;
  const auto spec = parse_profile_yaml(
      profile_with("    memory_capacity_bytes: 1\n    copy_engine: no\n"), "inline.yaml");
  EXPECT_FALSE(spec.devices[0].has_copy_engine);
}

// The writer records the format's name, version and minor version from profile.h's
// constants, and its text reads back to the same spec and the same text.
TEST(ProfileTest, TheWriterRecordsTheFormatAndReadsBack) {
  const auto spec = parse_profile_yaml(profile_with("    memory_capacity_bytes: 1024\n"), "x.yaml");
  const std::string yaml = profile_yaml(spec);
  const std::string header = "format: " + std::string(kProfileFormatName) +
                             "\nversion: " + std::to_string(kProfileFormatVersion) +
                             "\nminor_version: " + std::to_string(kProfileFormatMinorVersion) +
                             "\n";
  EXPECT_TRUE(contains(yaml, header)) << yaml.substr(0, 200);
  EXPECT_EQ(profile_yaml(parse_profile_yaml(yaml, "written.yaml")), yaml);
}

// A file without a minor version is 1.0 and reads; a newer minor than this build knows is
// refused by name.
TEST(ProfileTest, MinorVersionsAreReadUpToThisBuildsAndNamedAboveIt) {
  EXPECT_EQ(parse_error(profile_with("    memory_capacity_bytes: 1\n")), "");
  EXPECT_EQ(parse_error(profile_with("    memory_capacity_bytes: 1\n", "minor_version: 1\n")), "");
  const auto newer = parse_error(
      profile_with("    memory_capacity_bytes: 1\n",
                   "minor_version: " + std::to_string(kProfileFormatMinorVersion + 1) + "\n"));
  EXPECT_TRUE(contains(newer, "inline.yaml:3:16: minor_version: ")) << newer;
  EXPECT_TRUE(contains(newer, "is not one this build reads")) << newer;
}

// One rule for a value in a config and in a profile: each field accepts exactly the texts
// the config grammar (core::parse_integer, parse_number, parse_bool; docs/config.md
// "Values") accepts, with the same value, whatever YAML itself would make of them.
TEST(ProfileTest, ValuesMeanWhatTheyMeanInAConfig) {
  const auto device_field = [](const std::string& key, const std::string& text) {
    const std::string capacity =
        key == "memory_capacity_bytes" ? "" : "    memory_capacity_bytes: 1\n";
    return profile_with(capacity + "    " + key + ": " + text + "\n");
  };
  const auto read = [](const std::string& text) -> std::optional<DeviceSpec> {
    try {
      return parse_profile_yaml(text, "inline.yaml").devices[0];
    } catch (const core::InputError&) {
      return std::nullopt;
    }
  };
  // The text a scalar holds: YAML's quotes are not part of it.
  const auto scalar_of = [](const std::string& yaml) {
    return yaml.size() > 1 && yaml.front() == '"' ? yaml.substr(1, yaml.size() - 2) : yaml;
  };
  // memory_capacity_bytes: an integer > 0, as a config's integer fields read it.
  for (const char* text : {"1000", "+1000", "007", "1e3", "1.0", "1000.", "0x10", "1_000", "0",
                           "-5", "\" 1000\"", "\"1000\"", "99999999999999999999"}) {
    SCOPED_TRACE(text);
    const auto expected = core::parse_integer(scalar_of(text));
    const auto spec = read(device_field("memory_capacity_bytes", text));
    ASSERT_EQ(spec.has_value(), expected.has_value() && *expected > 0);
    if (spec) {
      EXPECT_EQ(spec->memory_capacity_bytes, *expected);
    }
  }
  // executor_overhead_s: a number >= 0.
  for (const char* text : {"5e-6", "5.0e-6", ".5", "5.", "+2", "1e3", "0", ".inf", "inf", ".nan",
                           "0x10", "1e999", "1_0", "-1"}) {
    SCOPED_TRACE(text);
    const auto expected = core::parse_number(text);
    const auto spec = read(device_field("executor_overhead_s", text));
    ASSERT_EQ(spec.has_value(), expected.has_value() && *expected >= 0);
    if (spec) {
      EXPECT_EQ(spec->executor_overhead_s, *expected);
    }
  }
  // copy_engine: a boolean; YAML's y/n are not booleans in a config, 1/0 are.
  for (const char* text : {"true", "True", "TRUE", "yes", "on", "1", "false", "No", "OFF", "0", "y",
                           "n", "Y", "tRue", "2", "maybe"}) {
    SCOPED_TRACE(text);
    const auto expected = core::parse_bool(text);
    const auto spec = read(device_field("copy_engine", text));
    ASSERT_EQ(spec.has_value(), expected.has_value());
    if (spec) {
      EXPECT_EQ(spec->has_copy_engine, *expected);
    }
  }
}

// A value the config grammar rejects is an InputError in the configs' style: where
// (file:line:column), the field path, what was expected and the text found.
TEST(ProfileTest, RejectedValuesNameFileLineColumnAndField) {
  const std::string text = profile_with("    memory_capacity_bytes: 1\n    compute_streams: 1e3\n");
  try {
    (void)parse_profile_yaml(text, "inline.yaml");
    ADD_FAILURE() << "compute_streams: 1e3 was read as an integer";
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "inline.yaml:11:22: device_types.t.compute_streams: expected an integer in [1, 64], "
              "found '1e3'");
    EXPECT_EQ(e.source(), "inline.yaml:11:22");
    EXPECT_EQ(e.location(), "device_types.t.compute_streams");
  }
  const auto boolean =
      parse_error(profile_with("    memory_capacity_bytes: 1\n    copy_engine: y\n"));
  EXPECT_EQ(boolean,
            "inline.yaml:11:18: device_types.t.copy_engine: expected true or false (also yes/no, "
            "on/off, 1/0), found 'y'");
  const auto version = parse_error(
      "format: gopt-hardware-profile\nversion: 1.0\nname: x\n"
      "provenance: {kind: datasheet, date: d, sources: [s]}\n");
  EXPECT_EQ(version, "inline.yaml:2:10: version: expected an integer, found '1.0'");
  const auto typo =
      parse_error(profile_with("    memory_capacity_bytes: 1\n    compute_stream: 2\n"));
  EXPECT_TRUE(contains(typo,
                       "inline.yaml:11:5: device_types.t.compute_stream: unknown key "
                       "'compute_stream' (did you mean 'compute_streams'?)"))
      << typo;
}

// Every field the parser fills except a link's type name: the writer puts each link
// type's numbers on its links.
void expect_same_spec(const ClusterSpec& a, const ClusterSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.provenance.kind, b.provenance.kind);
  EXPECT_EQ(a.provenance.date, b.provenance.date);
  EXPECT_EQ(a.provenance.machine, b.provenance.machine);
  EXPECT_EQ(a.provenance.sources, b.provenance.sources);
  EXPECT_EQ(a.provenance.notes, b.provenance.notes);
  EXPECT_EQ(a.compute_dtype, b.compute_dtype);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    EXPECT_EQ(a.devices[i].name, b.devices[i].name);
    EXPECT_EQ(a.devices[i].type, b.devices[i].type);
    EXPECT_EQ(a.devices[i].source, b.devices[i].source);
    EXPECT_TRUE(a.devices[i].same_numbers(b.devices[i])) << a.devices[i].name;
  }
  EXPECT_EQ(a.switches, b.switches);
  ASSERT_EQ(a.links.size(), b.links.size());
  for (std::size_t i = 0; i < a.links.size(); ++i) {
    EXPECT_EQ(a.links[i].name, b.links[i].name);
    EXPECT_EQ(a.links[i].a, b.links[i].a);
    EXPECT_EQ(a.links[i].b, b.links[i].b);
    EXPECT_EQ(a.links[i].bandwidth_bytes_per_s, b.links[i].bandwidth_bytes_per_s);
    EXPECT_EQ(a.links[i].latency_s, b.links[i].latency_s);
    EXPECT_EQ(a.links[i].source, b.links[i].source);
  }
  ASSERT_EQ(a.routes.size(), b.routes.size());
  for (std::size_t i = 0; i < a.routes.size(); ++i) {
    EXPECT_EQ(a.routes[i].from, b.routes[i].from);
    EXPECT_EQ(a.routes[i].to, b.routes[i].to);
    EXPECT_EQ(a.routes[i].via, b.routes[i].via);
  }
}

// Every shipped profile (measured ones too) and the valid test profile with explicit routes
// parse in the config grammar, and what the writer makes of them parses back to the same
// spec and the same text.
TEST(ProfileTest, EveryProfileWrittenReadsBackToTheSameSpec) {
  std::vector<std::filesystem::path> files;
  for (const auto& dir : {default_profile_dir(), default_profile_dir() / "measured"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
  }
  files.push_back(kData + "two_gpus_explicit_route.yaml");
  EXPECT_GE(files.size(), 7u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    ClusterSpec spec;
    ASSERT_NO_THROW(spec = parse_profile_yaml(core::read_text_file(file), file.string()));
    const std::string yaml = profile_yaml(spec);
    ClusterSpec back;
    ASSERT_NO_THROW(back = parse_profile_yaml(yaml, "written.yaml")) << yaml;
    expect_same_spec(spec, back);
    EXPECT_EQ(profile_yaml(back), yaml);
    EXPECT_NO_THROW((void)Cluster::build(back, "written.yaml"));
  }
}

}  // namespace
}  // namespace gopt::hardware
