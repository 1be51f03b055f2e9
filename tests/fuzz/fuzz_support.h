// Helpers every fuzz check uses (fuzz_targets*.cpp): the input as text, a contract check,
// and the accept-or-reject rule of fuzz_targets.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/errors.h"
#include "tests/fuzz/fuzz_targets.h"

namespace gopt::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Throws ContractViolation(what) unless `ok`.
inline void require(bool ok, const std::string& what) {
  if (!ok) throw ContractViolation(what);
}

/// Runs `parse`; an InputError is the expected rejection of bad input.
template <typename F>
Outcome accept_or_reject(F&& parse) {
  try {
    parse();
  } catch (const core::InputError&) {
    return Outcome::kRejected;
  }
  return Outcome::kAccepted;
}

}  // namespace gopt::fuzz
