// The gopt version and the git revision it was built from, recorded in every result file
// and printed by `gopt --version`.
#pragma once

#include <string_view>

namespace gopt::experiments {

[[nodiscard]] std::string_view version();       ///< "0.1.0"
[[nodiscard]] std::string_view git_revision();  ///< short hash, or "unknown"

}  // namespace gopt::experiments
