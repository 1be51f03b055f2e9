// Hardware profiles: versioned YAML files under hardware/profiles/ describing a cluster
// (device types, devices, switches, link types, links, optional explicit routes) with the
// provenance of every number (docs/hardware-profiles.md). A profile is named by file name
// without directory and extension ("p100x4_pcie", looked up in the shipped profile
// directory, never relative to the working directory) or by a path to a .yaml file.
//
//   Cluster cluster = load_profile("p100x4_pcie");            // throws InputError
//   Cluster custom  = load_profile("/tmp/my_machine.yaml");
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/cluster.h"

namespace gopt::hardware {

/// The format name and version this build reads and writes.
inline constexpr std::string_view kProfileFormatName = "gopt-hardware-profile";
inline constexpr int kProfileFormatVersion = 1;
/// The minor version this build writes (key `minor_version`; absent: 0) and the newest it
/// reads. A minor version only adds optional fields:
///
///   1.0  devices, links, routes, efficiency factors, no_kernel_kinds
///   1.1  time_curves: measured time curves per op type and kind
///   1.2  executor_overhead_s, shape_tables
///   1.3  copy_engine
///   1.4  fused_loop_ratio
inline constexpr int kProfileFormatMinorVersion = 4;

/// The directory of the profiles shipped with gopt (set at build time).
[[nodiscard]] std::filesystem::path default_profile_dir();

/// Names (file stems) of the profiles in `dir`, sorted.
[[nodiscard]] std::vector<std::string> list_profiles(
    const std::filesystem::path& dir = default_profile_dir());

/// The file a profile argument refers to: a path when it names an existing file or
/// contains a '/' or ends in ".yaml"/".yml"; otherwise `dir/<name>.yaml`. Throws
/// InputError listing the available profiles when nothing is found.
[[nodiscard]] std::filesystem::path resolve_profile_path(
    const std::string& name_or_path, const std::filesystem::path& dir = default_profile_dir());

/// Parses profile YAML into a spec. Values are read in the configs' grammar
/// (core/yaml_values.h, docs/config.md "Values": "1e3" is a number, not an integer), and
/// every error is an InputError located as a config problem is, with `source:line:column`
/// as its source and the field path as its location:
/// "my.yaml:26:28: device_types.p100.memory_capacity_bytes: expected a positive integer
/// (bytes), found '16e9'".
[[nodiscard]] ClusterSpec parse_profile_yaml(std::string_view text, const std::string& source);

/// Writes a cluster spec as profile YAML of this format and version that parse_profile_yaml
/// reads back to the same spec: one device type per distinct `type`, links inline (a link
/// type's numbers on each of its links; the type's name is not kept), routes when there
/// are any. Every number reads back as exactly the double written (core::number_text).
[[nodiscard]] std::string profile_yaml(const ClusterSpec& spec);

/// Resolves, reads, parses and builds a profile (see resolve_profile_path).
[[nodiscard]] Cluster load_profile(const std::string& name_or_path,
                                   const std::filesystem::path& dir = default_profile_dir());

}  // namespace gopt::hardware
