// An order of decisions, so that identical decisions are executed on the backend once
// (`gopt measure`, measured rewards): std::map<core::Decision, T, DecisionLess>.
#pragma once

#include <tuple>

#include "core/decision.h"

namespace gopt::experiments {

/// Orders decisions by placement, then priority, then fusion (an absent field first).
struct DecisionLess {
  bool operator()(const core::Decision& a, const core::Decision& b) const {
    return std::tie(a.placement, a.priority, a.fusion) <
           std::tie(b.placement, b.priority, b.fusion);
  }
};

}  // namespace gopt::experiments
