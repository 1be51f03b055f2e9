// The table builders' shared grid, formats and comparisons (experiments/tables/grid.h).
#include "experiments/tables/grid.h"

#include <algorithm>
#include <cstdio>

namespace gopt::experiments::tables {

Grid arrange(const ResultsFile& file) {
  Grid g;
  for (const auto& r : file.results) {  // sorted by job order
    if (std::find(g.workloads.begin(), g.workloads.end(), r.key.workload) == g.workloads.end()) {
      g.workloads.push_back(r.key.workload);
    }
    if (std::none_of(g.agents.begin(), g.agents.end(),
                     [&](const ResultAgent& a) { return a.name == r.key.agent; })) {
      g.agents.push_back({r.key.agent, r.agent_type, r.learner});
    }
    g.held_out[r.key.workload] = r.held_out;
    g.results.push_back(&r);
    const double basic = std::max(r.lower_bound_critical_path_s, r.lower_bound_work_s);
    double& bound = g.bound_s[r.key.workload];
    bound = std::max({bound, basic, r.lower_bound_s});
    double& b = g.basic_bound_s[r.key.workload];
    b = std::max(b, basic);
    Cell& c = g.cells[{r.key.workload, r.key.agent}];
    if (r.oom) {
      ++c.oom;
    } else {
      c.sum_s += r.best_step_time_s;
      ++c.valid;
    }
  }
  // Agents in order of their first result in job order, which is config order.
  return g;
}

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", seconds * 1e3);
  return buf;
}

std::string percent(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", value);
  return buf;
}

std::string time_cell(const Grid& g, const std::string& w, const std::string& a) {
  const Cell* c = g.cell(w, a);
  if (!c) return "";
  auto t = c->mean_s();
  if (!t) return "OOM";
  std::string s = ms(*t);
  if (c->oom > 0) s += " (" + std::to_string(c->oom) + " OOM)";
  return s;
}

double reduction(double t, double reference) { return 100.0 * (reference - t) / reference; }

bool is_go(const ResultAgent& a) { return a.type.rfind("go_", 0) == 0; }

Best best_of(const Grid& g, const std::string& w,
             const std::vector<const ResultAgent*>& candidates) {
  Best best;
  for (const auto* a : candidates) {
    auto t = g.time(w, a->name);
    if (t && (!best.agent || *t < best.time_s)) best = {a, *t};
  }
  return best;
}

std::string average_text(const std::vector<double>& values) {
  if (values.empty()) return "-";
  double sum = 0;
  for (double v : values) sum += v;
  return percent(sum / static_cast<double>(values.size()));
}

std::string ratio_text(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", ratio);
  return buf;
}

const ResultAgent* paper_reference(const std::vector<const ResultAgent*>& baselines) {
  for (const auto* b : baselines) {
    if (b->type == "human_expert") return b;
  }
  for (const auto* b : baselines) {
    if (b->name == "human_expert") return b;
  }
  return baselines.empty() ? nullptr : baselines.front();
}

namespace {

std::string ahead_text(const std::vector<double>& v) {
  int ahead = 0;
  for (double x : v) ahead += x > 0 ? 1 : 0;
  return std::to_string(ahead) + " of " + std::to_string(v.size());
}

}  // namespace

std::string summary_line(const std::string& label, const std::string& reference,
                         const std::vector<double>& vs_reference,
                         const std::vector<double>& vs_best,
                         const std::vector<double>* vs_paper_best) {
  std::string line = "Summary: " + label + " is " + average_text(vs_reference) + " vs " +
                     reference + " on average (the paper's comparison) and " +
                     average_text(vs_best) + " vs the best baseline of each workload, ahead of " +
                     "it on " + ahead_text(vs_best) + " workloads";
  if (vs_paper_best) {
    line += "; " + average_text(*vs_paper_best) +
            " vs the best of the paper's baselines (the search reference left out), ahead on " +
            ahead_text(*vs_paper_best);
  }
  return line + ".";
}

bool is_search_reference(const ResultAgent& a) { return a.type == "annealing"; }

std::string best_baseline_note(bool go) {
  return std::string("best baseline: the fastest agent on that workload other than ") +
         (go ? "the GO agents (HDP and the search reference included)" : "the learned agents") +
         ", by mean step time; X vs best baseline: X's step-time reduction relative to it "
         "(positive: X is faster), averaged over the workloads where both have a time.";
}

void append_best_baseline_cells(const Grid& g, const std::string& w, const Best& bb,
                                const std::vector<const ResultAgent*>& subjects,
                                std::vector<std::vector<double>>& vs_best,
                                std::vector<std::string>& row) {
  row.push_back(bb.agent ? bb.agent->name : "-");
  row.push_back(bb.agent ? ms(bb.time_s) : "-");
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    auto t = g.time(w, subjects[i]->name);
    if (!bb.agent || !g.cell(w, subjects[i]->name)) {
      row.push_back("-");
    } else if (!t) {
      row.push_back("OOM");
    } else {
      vs_best[i].push_back(reduction(*t, bb.time_s));
      row.push_back(percent(vs_best[i].back()));
    }
  }
}

}  // namespace gopt::experiments::tables
