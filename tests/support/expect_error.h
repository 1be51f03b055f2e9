// Helpers for tests of error messages: the message of the InputError a call throws, and
// substring checks on it.
#pragma once

#include <functional>
#include <string>

#include "core/errors.h"

namespace gopt::testing {

/// The what() of the core::InputError `f` throws, or "(no error)" when it throws none.
/// Other exception types propagate (a test should not mistake them for input errors).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

/// True when `text` contains `part`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace gopt::testing
