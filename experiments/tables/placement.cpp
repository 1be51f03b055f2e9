// The placement tables (Tables 1 and 2) and the lower-bound tables
// (experiments/tables/families.h).
#include <algorithm>
#include <optional>

#include "experiments/tables/families.h"

namespace gopt::experiments::tables {
namespace {

// Whom a placement table compares: the subjects are the learned agents, or, when GO agents
// are present, the GO agents alone: then the other learners (HDP) are references too, as in
// the paper's tables.
struct Subjects {
  bool go = false;
  std::vector<const ResultAgent*> learners;
  std::vector<const ResultAgent*> baselines;
  /// The baselines less the search reference, when the table has one (else empty).
  std::vector<const ResultAgent*> paper_baselines;
  const ResultAgent* reference = nullptr;  // the paper's (paper_reference)

  // Whether the table has improvement columns.
  [[nodiscard]] bool improvements() const { return !learners.empty() && !baselines.empty(); }
};

Subjects subjects_of(const Grid& g) {
  Subjects s;
  s.go = std::any_of(g.agents.begin(), g.agents.end(), is_go);
  for (const auto& a : g.agents) {
    ((s.go ? is_go(a) : a.learner) ? s.learners : s.baselines).push_back(&a);
  }
  s.reference = paper_reference(s.baselines);
  if (std::any_of(s.baselines.begin(), s.baselines.end(),
                  [](const ResultAgent* b) { return is_search_reference(*b); })) {
    for (const auto* b : s.baselines) {
      if (!is_search_reference(*b)) s.paper_baselines.push_back(b);
    }
  }
  return s;
}

// The header: each agent's time, then (with improvements) the best subject, its reduction
// relative to each baseline, the best baseline and its time, and each subject against it.
std::vector<std::string> placement_header(const Grid& g, const Subjects& s) {
  std::vector<std::string> header{"workload"};
  for (const auto& a : g.agents) header.push_back(a.name + " (ms)");
  if (!s.improvements()) return header;
  header.push_back(s.go ? "best GO" : "best learned");
  for (const auto* b : s.baselines) header.push_back("vs " + b->name);
  header.push_back("best baseline");
  header.push_back("best baseline (ms)");
  for (const auto* l : s.learners) header.push_back(l->name + " vs best baseline");
  return header;
}

// What the improvement columns collect over the workloads, for the average row and the
// summaries.
struct Improvements {
  std::vector<std::vector<double>> vs_baseline;  // the best subject, per baseline
  std::vector<std::vector<double>> vs_best;      // per subject
  std::vector<double> best_vs_reference;         // the best subject per workload
  std::vector<double> best_vs_best;
  std::vector<double> best_vs_paper_best;  // vs the best of Subjects::paper_baselines
};

// Each time of `agent` on the workloads against the best of `s.paper_baselines` there.
std::vector<double> against_paper_best(const Grid& g, const std::vector<std::string>& workloads,
                                       const Subjects& s, const ResultAgent& agent) {
  std::vector<double> out;
  for (const auto& w : workloads) {
    const auto t = g.time(w, agent.name);
    const Best pb = best_of(g, w, s.paper_baselines);
    if (t && pb.agent) out.push_back(reduction(*t, pb.time_s));
  }
  return out;
}

// The improvement cells of workload `w`, appended to `row`.
void append_improvement_cells(const Grid& g, const std::string& w, const Subjects& s,
                              Improvements& acc, std::vector<std::string>& row) {
  const ResultAgent* best = nullptr;
  double best_t = 0;
  for (const auto* l : s.learners) {
    auto lt = g.time(w, l->name);
    if (lt && (!best || *lt < best_t)) {
      best = l;
      best_t = *lt;
    }
  }
  row.push_back(best ? best->name : "-");
  for (std::size_t i = 0; i < s.baselines.size(); ++i) {
    auto bt = g.time(w, s.baselines[i]->name);
    if (!best || !g.cell(w, s.baselines[i]->name)) {
      row.push_back("-");
    } else if (!bt) {
      row.push_back("OOM");
    } else {
      double v = reduction(best_t, *bt);
      acc.vs_baseline[i].push_back(v);
      row.push_back(percent(v));
      if (s.baselines[i] == s.reference) acc.best_vs_reference.push_back(v);
    }
  }
  const Best bb = best_of(g, w, s.baselines);
  if (best && bb.agent) acc.best_vs_best.push_back(reduction(best_t, bb.time_s));
  const Best pb = best_of(g, w, s.paper_baselines);
  if (best && pb.agent) acc.best_vs_paper_best.push_back(reduction(best_t, pb.time_s));
  append_best_baseline_cells(g, w, bb, s.learners, acc.vs_best, row);
}

// The average row under the workloads' rows.
std::vector<std::string> average_row(const Grid& g, const Improvements& acc) {
  std::vector<std::string> row{"average"};
  row.resize(1 + g.agents.size() + 1);
  for (const auto& c : acc.vs_baseline) row.push_back(average_text(c));
  row.resize(row.size() + 2);  // best baseline and its time
  for (const auto& c : acc.vs_best) row.push_back(average_text(c));
  return row;
}

// What the improvement columns mean, and the summary lines: of the best subject, then of
// each subject when there are several.
void add_improvement_notes(const Grid& g, const std::vector<std::string>& workloads,
                           const Subjects& s, const Improvements& acc, Table& t) {
  t.notes.push_back(s.go ? "vs X: step-time reduction of the best GO agent on that workload "
                           "relative to agent X (positive: GO is faster)."
                         : "vs X: step-time reduction of the best learned agent on that "
                           "workload relative to baseline X (positive: the learned agent is "
                           "faster).");
  t.notes.push_back(best_baseline_note(s.go));
  const std::string best_label = s.go ? "the best GO agent" : "the best learned agent";
  const bool search = !s.paper_baselines.empty();
  t.notes.push_back(summary_line(best_label, s.reference->name, acc.best_vs_reference,
                                 acc.best_vs_best, search ? &acc.best_vs_paper_best : nullptr));
  if (s.learners.size() <= 1) return;
  for (std::size_t i = 0; i < s.learners.size(); ++i) {
    std::vector<double> vs_reference;
    for (const auto& w : workloads) {
      auto lt = g.time(w, s.learners[i]->name);
      auto rt = g.time(w, s.reference->name);
      if (lt && rt) vs_reference.push_back(reduction(*lt, *rt));
    }
    if (vs_reference.empty() && acc.vs_best[i].empty()) continue;  // no rows in this table
    const auto vs_paper_best = against_paper_best(g, workloads, s, *s.learners[i]);
    t.notes.push_back(summary_line(s.learners[i]->name, s.reference->name, vs_reference,
                                   acc.vs_best[i], search ? &vs_paper_best : nullptr));
  }
}

// The bounds table's row of workload `w`: the bounds, each agent's gap and the best one's,
// collected in `gaps` (per agent, then the best) for the average row.
std::vector<std::string> bounds_row(const Grid& g, const std::string& w, std::size_t columns,
                                    std::vector<std::vector<double>>& gaps) {
  const double bound = g.bound_s.at(w);
  if (!(bound > 0)) {  // results without bounds (hand-made files)
    std::vector<std::string> row(columns, "-");
    row[0] = w;
    return row;
  }
  std::vector<std::string> row{w, ms(bound), ms(g.basic_bound_s.at(w))};
  std::optional<double> best;
  for (std::size_t i = 0; i < g.agents.size(); ++i) {
    const Cell* c = g.cell(w, g.agents[i].name);
    auto time = g.time(w, g.agents[i].name);
    if (!c) {
      row.emplace_back("-");
    } else if (!time) {
      row.emplace_back("OOM");
    } else {
      gaps[i].push_back(*time / bound);
      row.push_back(ratio_text(gaps[i].back()));
      if (!best || *time < *best) best = time;
    }
  }
  if (best) {
    gaps.back().push_back(*best / bound);
    row.push_back(ratio_text(gaps.back().back()));
  } else {
    row.emplace_back("-");
  }
  return row;
}

}  // namespace

Table placement_table(const Grid& g, const std::vector<std::string>& workloads, std::string id,
                      std::string title) {
  Table t;
  t.id = std::move(id);
  t.title = std::move(title);
  const Subjects s = subjects_of(g);
  t.header = placement_header(g, s);
  Improvements acc;
  acc.vs_baseline.resize(s.baselines.size());
  acc.vs_best.resize(s.learners.size());
  for (const auto& w : workloads) {
    std::vector<std::string> row{w};
    for (const auto& a : g.agents) row.push_back(time_cell(g, w, a.name));
    if (s.improvements()) append_improvement_cells(g, w, s, acc, row);
    t.rows.push_back(std::move(row));
  }
  if (s.improvements() && workloads.size() > 1) t.rows.push_back(average_row(g, acc));
  t.notes.push_back("Step times are simulated, means over seeds, in milliseconds.");
  if (s.improvements()) add_improvement_notes(g, workloads, s, acc, t);
  return t;
}

Table bounds_table(const Grid& g, const std::vector<std::string>& workloads, std::string id,
                   std::string title, bool fused) {
  Table t;
  t.id = std::move(id);
  t.title = std::move(title);
  t.header = {"workload", "bound (ms)", "max(critical path, work) (ms)"};
  for (const auto& a : g.agents) t.header.push_back(a.name + " gap");
  t.header.push_back("best / bound");
  std::vector<std::vector<double>> gaps(g.agents.size() + 1);
  for (const auto& w : workloads) t.rows.push_back(bounds_row(g, w, t.header.size(), gaps));
  if (workloads.size() > 1) {
    std::vector<std::string> row{"average", "", ""};
    for (const auto& v : gaps) {
      if (v.empty()) {
        row.emplace_back("-");
        continue;
      }
      double sum = 0;
      for (double x : v) sum += x;
      row.push_back(ratio_text(sum / static_cast<double>(v.size())));
    }
    t.rows.push_back(std::move(row));
  }
  t.notes.emplace_back(
      "bound: a lower bound on the step time no placement or schedule of the unfused graph "
      "beats (simulator/lower_bounds.h; docs/simulator.md \"Lower bounds\" has each bound "
      "and its proof); max(critical path, work): the basic bound, the only one in early "
      "version-1 files. X gap: X's mean step time over the bound (1.00x: provably optimal). "
      "best / bound: the fastest agent's step time over the bound.");
  if (fused) {
    t.notes.emplace_back(
        "Fusion removes launches and memory traffic, so fused decisions can beat the bound "
        "(a gap below 1.00x).");
  }
  return t;
}

}  // namespace gopt::experiments::tables
