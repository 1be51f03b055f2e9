#include "hardware/validation.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/errors.h"

namespace gopt::hardware {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double relative_iqr(const std::vector<double>& v) {
  const double m = median(v);
  if (!(m > 0)) return 0;
  return (quantile(v, 0.75) - quantile(v, 0.25)) / m;
}

double ValidationCase::pct_error() const { return 100.0 * (simulated_s - measured_s) / measured_s; }

double kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      double da = a[i] - a[j];
      double db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) {
        ++ties_a;
      } else if (db == 0) {
        ++ties_b;
      } else if ((da > 0) == (db > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  }
  double denom = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return denom > 0 ? (concordant - discordant) / denom : 0;
}

ValidationSummary summarize_validation(const std::vector<ValidationCase>& cases) {
  ValidationSummary s;
  s.cases = static_cast<int>(cases.size());
  std::vector<double> measured, simulated;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_graph;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    if (!(c.measured_s > 0)) {
      throw core::InputError("validation", "cases[" + std::to_string(i) + "].measured_s",
                             "expected a positive measured time for " + c.graph + " / " +
                                 c.decision + ", found " + std::to_string(c.measured_s));
    }
    double e = c.pct_error();
    s.mape += std::abs(e);
    s.mean_pct_error += e;
    if (std::abs(e) >= s.max_abs_pct_error) {
      s.max_abs_pct_error = std::abs(e);
      s.worst_case = c.graph + " / " + c.decision;
    }
    measured.push_back(c.measured_s);
    simulated.push_back(c.simulated_s);
    by_graph[c.graph].first.push_back(c.measured_s);
    by_graph[c.graph].second.push_back(c.simulated_s);
  }
  if (s.cases > 0) {
    s.mape /= s.cases;
    s.mean_pct_error /= s.cases;
  }
  s.kendall_tau = kendall_tau_b(measured, simulated);
  double sum = 0;
  for (const auto& [graph, times] : by_graph) {
    if (times.first.size() < 2) continue;
    sum += kendall_tau_b(times.first, times.second);
    ++s.graphs;
  }
  s.mean_graph_kendall_tau = s.graphs > 0 ? sum / s.graphs : 0;
  return s;
}

}  // namespace gopt::hardware
