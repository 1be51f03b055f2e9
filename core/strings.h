// Small text helpers: joining lists and "did you mean" for user-facing messages, and the one
// text hash that seeds and provenance use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gopt::core {

/// "a, b, c".
[[nodiscard]] std::string join(const std::vector<std::string>& items,
                               std::string_view separator = ", ");

/// Edit distance: insertions, deletions, substitutions and adjacent transpositions each
/// cost 1 (optimal string alignment).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` when it is close enough to be a likely typo (distance
/// at most max(1, |word| / 3)); empty otherwise.
[[nodiscard]] std::string closest_match(std::string_view word,
                                        const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" when closest_match finds one, else "".
[[nodiscard]] std::string did_you_mean(std::string_view word,
                                       const std::vector<std::string>& candidates);

/// FNV-1a (64-bit) of the bytes of `text`: stable across builds and machines, so it may
/// name things that are stored (job seeds, config hashes in results files).
[[nodiscard]] std::uint64_t fnv1a(std::string_view text);

}  // namespace gopt::core
