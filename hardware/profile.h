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

/// The format name and version this build reads.
inline constexpr std::string_view kProfileFormatName = "gopt-hardware-profile";
inline constexpr int kProfileFormatVersion = 1;

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

/// Parses profile YAML into a spec. Every error names `source`, the field and its line.
[[nodiscard]] ClusterSpec parse_profile_yaml(std::string_view text, const std::string& source);

/// Resolves, reads, parses and builds a profile (see resolve_profile_path).
[[nodiscard]] Cluster load_profile(const std::string& name_or_path,
                                   const std::filesystem::path& dir = default_profile_dir());

}  // namespace gopt::hardware
