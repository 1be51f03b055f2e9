// Graph files: the versioned JSON format other tools write and gopt reads (see
// docs/graph-format.md). Reading validates everything and reports the file, the node or
// field, what was expected and what was found; writing is atomic (a temporary file
// renamed into place), so a crash never leaves a half-written graph.
//
//   Graph g = read_graph_file("model.json");      // throws InputError / GraphError
//   write_graph_file(g, "copy.json");             // read_graph_file("copy.json") == g
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/graph.h"

namespace gopt::core {

/// The format name and the version this build reads and writes.
inline constexpr std::string_view kGraphFormatName = "gopt-graph";
inline constexpr int kGraphFormatVersion = 1;

/// Parses graph JSON. `source` names the text in error messages (a file name).
/// The result is completed (derived sizes filled) and validated.
[[nodiscard]] Graph parse_graph_json(std::string_view text, const std::string& source);

/// Reads and parses a graph file; throws InputError if it cannot be read.
[[nodiscard]] Graph read_graph_file(const std::filesystem::path& path);

/// Serialises a graph. Fields equal to their documented default are left out, so that
/// files stay small and reading them back gives the same graph.
[[nodiscard]] std::string to_graph_json(const Graph& graph, bool pretty = false);

/// Writes a graph file atomically; throws InputError if it cannot be written.
void write_graph_file(const Graph& graph, const std::filesystem::path& path, bool pretty = false);

/// Reads a whole file into a string; throws InputError naming the file if it cannot.
[[nodiscard]] std::string read_text_file(const std::filesystem::path& path);

/// Writes `text` to `path` through a temporary file renamed into place.
void write_text_file_atomic(const std::filesystem::path& path, std::string_view text);

/// Throws InputError naming `option` and `path` unless a file can be written there: its
/// directory exists and takes new files, and `path` is not a directory. For commands that
/// measure for minutes before they write, so that a bad path fails before the work.
///
///   check_can_write(args.out, "--out");
void check_can_write(const std::filesystem::path& path, const std::string& option);

}  // namespace gopt::core
