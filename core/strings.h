// Small text helpers: joining lists and "did you mean" for user-facing messages, the one
// text hash that seeds and provenance use, and the one grammar of booleans and numbers
// that configs, agent options and --set values are read with (docs/config.md "Values"),
// with the one way gopt's writers print a number so that it reads back exactly.
#pragma once

#include <cstdint>
#include <optional>
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

/// A boolean: true, yes, on or 1, and false, no, off or 0, each word in lower case,
/// capitalised or upper case (true, True, TRUE). std::nullopt for any other text
/// ("y", "tRue", " true", "2").
///
///   parse_bool("yes")  // true
[[nodiscard]] std::optional<bool> parse_bool(std::string_view text);

/// What parse_bool accepts, for messages: "true or false (also yes/no, on/off, 1/0)".
inline constexpr std::string_view kBoolText = "true or false (also yes/no, on/off, 1/0)";

/// A decimal integer: an optional sign and digits, within 64 bits. std::nullopt for
/// anything else: empty text, spaces, a fraction or exponent ("1.0", "1e3"), hex ("0x10"),
/// a value out of range.
[[nodiscard]] std::optional<std::int64_t> parse_integer(std::string_view text);

/// A finite decimal number: an optional sign, digits with an optional fraction ("2",
/// "0.5", ".5", "5."), an optional exponent ("3e-4"); the nearest double, as strtod reads
/// it. std::nullopt for anything else: spaces, hex, inf, nan, a value that overflows or
/// underflows a double.
[[nodiscard]] std::optional<double> parse_number(std::string_view text);

/// The text every gopt writer prints a double as: the shortest of printf's "%.6g" to
/// "%.17g" that strtod reads back as exactly `value` (six significant digits when they
/// suffice, so 3e-4 prints "0.0003" and 1e-5 "1e-05"; 1 + 2^-52 needs all 17). Two
/// different doubles never print alike, so a sorted list stays strictly increasing when
/// read back. "inf", "-inf" and "nan" for those (which parse_number refuses).
///
///   parse_number(number_text(v)) == v  // every finite v
[[nodiscard]] std::string number_text(double value);

}  // namespace gopt::core
