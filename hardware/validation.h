// Statistics of simulator validation: how well simulated step times agree with measured
// ones over a set of (graph, decision) cases. Mean absolute percentage error and the largest
// error say how close the numbers are; Kendall's tau between the measured and the simulated
// orderings says whether the simulator ranks decisions as the hardware does, which is what a
// learning agent depends on (Proteus reports the same pair).
//
//   std::vector<ValidationCase> cases = ...;     // measured and simulated per case
//   ValidationSummary s = summarize_validation(cases);
//   report(s.mape, s.max_abs_pct_error, s.kendall_tau);
#pragma once

#include <string>
#include <vector>

#include "core/units.h"

namespace gopt::hardware {

/// One validated case: a decision for a graph, run for real and simulated.
struct ValidationCase {
  std::string graph;
  std::string decision;
  core::Seconds measured_s = 0;
  core::Seconds simulated_s = 0;

  /// 100 * (simulated - measured) / measured.
  [[nodiscard]] double pct_error() const;
};

struct ValidationSummary {
  int cases = 0;
  double mape = 0;               ///< mean of |pct_error|, percent
  double max_abs_pct_error = 0;  ///< largest |pct_error|, percent
  std::string worst_case;        ///< "graph / decision" of the largest error
  double mean_pct_error = 0;     ///< mean signed error, percent (bias: > 0 = overestimates)
  /// Kendall's tau-b between measured and simulated times over all cases.
  double kendall_tau = 0;
  /// Mean over graphs (with at least two cases) of tau-b among that graph's decisions:
  /// whether the simulator orders the decisions of one graph correctly.
  double mean_graph_kendall_tau = 0;
  int graphs = 0;
};

/// The median of `v` (the mean of the middle two for an even count; 0 when empty).
[[nodiscard]] double median(std::vector<double> v);

/// The `q` quantile of `v` (0 <= q <= 1), interpolated linearly between order statistics
/// (the definition numpy's percentile uses by default); 0 when empty.
[[nodiscard]] double quantile(std::vector<double> v, double q);

/// The interquartile range of `v` over its median: a spread of repeated timings that one
/// slow outlier does not set, unlike (max - min) / median. 0 when empty or the median is 0.
[[nodiscard]] double relative_iqr(const std::vector<double>& v);

/// Kendall's tau-b of two equally long samples (ties in either count as neither concordant
/// nor discordant, with the tau-b normalisation). 0 when fewer than two pairs are untied.
[[nodiscard]] double kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b);

/// Summary statistics of `cases`. Throws InputError for a case whose measured time is not
/// positive.
[[nodiscard]] ValidationSummary summarize_validation(const std::vector<ValidationCase>& cases);

}  // namespace gopt::hardware
