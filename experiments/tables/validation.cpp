// The simulator-validation table: measured against simulated step times
// (experiments/tables/families.h).
#include <algorithm>
#include <cstdio>

#include "experiments/tables/families.h"
#include "hardware/validation.h"

namespace gopt::experiments::tables {

Table validation_table(const ResultsFile& file) {
  Table t;
  t.id = "validation";
  t.title = "Simulator validation: measured vs simulated step time";
  std::vector<hardware::ValidationCase> cases, out_of_sample;
  std::vector<double> spreads;
  std::string backend;
  bool profiled = false;
  for (const auto& r : file.results) {
    if (r.measured_step_time_s < 0) continue;
    cases.push_back({r.key.workload, r.key.agent, r.measured_step_time_s, r.best_step_time_s});
    if (!r.op_times_in_sample) out_of_sample.push_back(cases.back());
    spreads.push_back(r.measured_spread);
    backend = r.measured_backend;
    profiled = profiled || r.op_times == "profiled";
  }
  if (cases.empty()) {
    t.notes.push_back(
        "No real-hardware measurements in this file: `gopt run` simulates only; measure with "
        "`gopt validate --profile PROFILE.yaml --out FILE.h5` (docs/hardware-backend.md).");
    return t;
  }
  t.header = {"workload", "decision", "measured (ms)", "simulated (ms)", "error"};
  char buf[64];
  for (const auto& c : cases) {
    std::vector<std::string> row = {c.graph, c.decision};
    std::snprintf(buf, sizeof buf, "%.3f", 1e3 * c.measured_s);
    row.emplace_back(buf);
    std::snprintf(buf, sizeof buf, "%.3f", 1e3 * c.simulated_s);
    row.emplace_back(buf);
    std::snprintf(buf, sizeof buf, "%+.1f%%", c.pct_error());
    row.emplace_back(buf);
    t.rows.push_back(std::move(row));
  }
  auto s = hardware::summarize_validation(cases);
  std::sort(spreads.begin(), spreads.end());
  char line[512];
  std::snprintf(
      line, sizeof line,
      "%d cases over %d graphs: MAPE %.1f%%, max |error| %.1f%% (%s), mean error %+.1f%%.", s.cases,
      s.graphs, s.mape, s.max_abs_pct_error, s.worst_case.c_str(), s.mean_pct_error);
  t.notes.emplace_back(line);
  std::snprintf(line, sizeof line,
                "Kendall tau %.3f between measured and simulated times over all cases; %.3f on "
                "average within a graph.",
                s.kendall_tau, s.mean_graph_kendall_tau);
  t.notes.emplace_back(line);
  if (profiled) {
    // Profiled op times were measured with every op on one device: those cases are in sample.
    auto o = hardware::summarize_validation(out_of_sample);
    std::snprintf(line, sizeof line,
                  "Op times profiled (each graph's ops measured on the backend). Out of sample "
                  "(%d cases not on one device): MAPE %.1f%%, max |error| %.1f%%, mean error "
                  "%+.1f%%, Kendall tau %.3f (%.3f within a graph).",
                  o.cases, o.mape, o.max_abs_pct_error, o.mean_pct_error, o.kendall_tau,
                  o.mean_graph_kendall_tau);
    t.notes.emplace_back(line);
  }
  std::snprintf(line, sizeof line,
                "Measured on %s; median run-to-run spread of a case (max - min over median) "
                "%.1f%%.",
                backend.c_str(), 100 * spreads[spreads.size() / 2]);
  t.notes.emplace_back(line);
  return t;
}

}  // namespace gopt::experiments::tables
