// The multi-task table (Table 3, experiments/tables/families.h).
#include <algorithm>
#include <optional>

#include "experiments/tables/families.h"

namespace gopt::experiments::tables {
namespace {

// The GO variants the multi-task agent is compared with, by type.
const std::vector<std::string>& single_task_types() {
  static const std::vector<std::string> kTypes = {"go_placement", "go_scheduling", "go_fusion"};
  return kTypes;
}
const std::vector<std::string>& two_task_types() {
  static const std::vector<std::string> kTypes = {"go_placement_scheduling", "go_placement_fusion",
                                                  "go_scheduling_fusion"};
  return kTypes;
}

// One comparison column: an agent against a reference, or (ref nullptr) against the
// fastest agent of a group on each workload.
struct Column {
  const ResultAgent* agent;
  const ResultAgent* ref;
  std::vector<const ResultAgent*> group;
};

// What the table shows: the references, the comparison columns and the best-baseline
// columns (the fastest non-GO agent of each workload; each GO agent against it).
struct Layout {
  const ResultAgent* tf_default = nullptr;
  const ResultAgent* single = nullptr;
  std::vector<std::pair<const ResultAgent*, std::string>> refs;  // with their labels
  std::vector<const ResultAgent*> single_task;
  std::vector<const ResultAgent*> two_task;
  std::vector<Column> columns;
  std::vector<const ResultAgent*> non_go;
  std::vector<const ResultAgent*> go_agents;
  bool best_columns = false;
};

std::vector<const ResultAgent*> of_types(const Grid& g, const std::vector<std::string>& types) {
  std::vector<const ResultAgent*> agents;
  for (const auto& a : g.agents) {
    if (std::find(types.begin(), types.end(), a.type) != types.end()) agents.push_back(&a);
  }
  return agents;
}

// The two references: TensorFlow's default (by type, else by label in older files) and the
// first single_device agent.
void find_references(const Grid& g, Layout& l) {
  for (const auto& a : g.agents) {
    if (a.type == "tf_default" && !l.tf_default) l.tf_default = &a;
  }
  for (const auto& a : g.agents) {
    if (a.name == "tf_default" && !l.tf_default) l.tf_default = &a;
    if (a.type == "single_device" && !l.single) l.single = &a;
  }
  if (l.tf_default) l.refs.emplace_back(l.tf_default, "TF default");
  if (l.single) l.refs.emplace_back(l.single, "single GPU");
}

// The layout of the table, and its header in `header`.
Layout layout_of(const Grid& g, std::vector<std::string>& header) {
  Layout l;
  find_references(g, l);
  l.single_task = of_types(g, single_task_types());
  l.two_task = of_types(g, two_task_types());
  header.push_back("workload");
  for (const auto& [ref, label] : l.refs) header.push_back(label + " (ms)");
  for (const auto& a : g.agents) {
    if (&a == l.tf_default || &a == l.single) continue;
    for (const auto& [ref, label] : l.refs) {
      header.push_back(a.name + " vs " + label);
      l.columns.push_back({&a, ref, {}});
    }
    if (a.type != "go_multitask") continue;
    if (!l.single_task.empty()) {
      header.push_back(a.name + " vs best single task");
      l.columns.push_back({&a, nullptr, l.single_task});
    }
    if (!l.two_task.empty()) {
      header.push_back(a.name + " vs best two tasks");
      l.columns.push_back({&a, nullptr, l.two_task});
    }
  }
  for (const auto& a : g.agents) (is_go(a) ? l.go_agents : l.non_go).push_back(&a);
  l.best_columns = !l.non_go.empty() && !l.go_agents.empty();
  if (l.best_columns) {
    header.push_back("best baseline");
    header.push_back("best baseline (ms)");
    for (const auto* a : l.go_agents) header.push_back(a->name + " vs best baseline");
  }
  return l;
}

// The cell of column `c` on workload `w`; a numeric one goes to `values` too.
std::string column_cell(const Grid& g, const std::string& w, const Column& c,
                        std::vector<double>& values) {
  std::optional<double> rt;
  bool has_ref = false;
  if (c.ref) {
    rt = g.time(w, c.ref->name);
    has_ref = g.cell(w, c.ref->name) != nullptr;
  } else {
    for (const auto* s : c.group) {
      auto st = g.time(w, s->name);
      has_ref = has_ref || g.cell(w, s->name) != nullptr;
      if (st && (!rt || *st < *rt)) rt = st;
    }
  }
  auto at = g.time(w, c.agent->name);
  if (!g.cell(w, c.agent->name) || !has_ref) return "-";
  if (!at || !rt) return "OOM";
  values.push_back(reduction(*at, *rt));
  return percent(values.back());
}

// What the columns mean, and a summary line per multi-task GO agent.
void add_notes(const Layout& l, const std::vector<std::vector<double>>& values,
               const std::vector<std::vector<double>>& vs_best, Table& t) {
  if (!l.tf_default || !l.single) {
    t.notes.push_back(
        "Missing reference agents: add a tf_default agent (TensorFlow's default placement, "
        "FIFO scheduling and XLA-style fusion) and a single_device agent (an unoptimised "
        "single GPU).");
  }
  t.notes.push_back(
      "Step times are simulated, means over seeds, in milliseconds. X vs R: step-time "
      "reduction of X relative to R, (R - X) / R (positive: X is faster); the average is over "
      "the workloads where both have a time.");
  if (!l.single_task.empty()) {
    t.notes.push_back(
        "vs best single task: relative to the fastest of go_placement, go_scheduling and "
        "go_fusion on that workload.");
  }
  if (!l.two_task.empty()) {
    t.notes.push_back(
        "vs best two tasks: relative to the fastest of go_placement_scheduling, "
        "go_placement_fusion and go_scheduling_fusion on that workload.");
  }
  if (!l.best_columns) return;
  t.notes.push_back(best_baseline_note(true));
  for (std::size_t i = 0; i < l.go_agents.size(); ++i) {
    if (l.go_agents[i]->type != "go_multitask") continue;
    std::vector<double> vs_tf;
    for (std::size_t c = 0; c < l.columns.size(); ++c) {
      if (l.columns[c].agent == l.go_agents[i] && l.columns[c].ref == l.tf_default) {
        vs_tf = values[c];
      }
    }
    t.notes.push_back(
        summary_line(l.go_agents[i]->name, l.tf_default ? "TF default" : "-", vs_tf, vs_best[i]));
  }
}

}  // namespace

Table multitask_table(const Grid& g) {
  Table t;
  t.id = "multitask";
  t.title = "Multi-task: step-time reduction over TensorFlow default and single GPU";
  const Layout l = layout_of(g, t.header);
  std::vector<std::vector<double>> vs_best(l.go_agents.size());
  std::vector<std::vector<double>> values(l.columns.size());
  for (const auto& w : g.workloads) {
    std::vector<std::string> row{w};
    for (const auto& ref_label : l.refs) row.push_back(time_cell(g, w, ref_label.first->name));
    for (std::size_t i = 0; i < l.columns.size(); ++i) {
      row.push_back(column_cell(g, w, l.columns[i], values[i]));
    }
    if (l.best_columns) {
      append_best_baseline_cells(g, w, best_of(g, w, l.non_go), l.go_agents, vs_best, row);
    }
    t.rows.push_back(std::move(row));
  }
  if (g.workloads.size() > 1 && (!l.columns.empty() || l.best_columns)) {
    std::vector<std::string> row{"average"};
    row.resize(1 + l.refs.size());
    for (const auto& v : values) row.push_back(average_text(v));
    if (l.best_columns) {
      row.resize(row.size() + 2);  // best baseline and its time
      for (const auto& v : vs_best) row.push_back(average_text(v));
    }
    t.rows.push_back(std::move(row));
  }
  add_notes(l, values, vs_best, t);
  return t;
}

}  // namespace gopt::experiments::tables
