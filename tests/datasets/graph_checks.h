// Structural checks shared by the datasets tests: every gradient op has a path from the
// forward op it differentiates, every update op from its variable.
#pragma once

#include <string>

#include "core/graph.h"

namespace gopt::datasets::testing {

/// Empty when the training graph is well formed, else a description of the first problem:
/// (1) every backward op is reachable from the gradient seed `gradients/Fill`; (2) for every
/// op named `gradients/<fwd>_grad/...`, `<fwd>` exists, is a forward op and reaches the
/// seed (so it reaches the gradient op); (3) every update op is reachable from the seed and
/// reads a variable in its own colocation group.
[[nodiscard]] std::string check_training_graph(const core::Graph& graph);

}  // namespace gopt::datasets::testing
