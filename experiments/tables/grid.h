// The shared vocabulary of the table builders (internal to `gopt table`,
// experiments/tables/tables.cpp): a results file's rows arranged by workload and agent (`Grid`),
// the cell and percentage formats, and the comparisons every table family makes (the best
// baseline of a workload, the paper's reference agent, the summary line).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/results/results_file.h"

namespace gopt::experiments::tables {

/// Mean step time over the seeds of one (workload, agent); nullopt when every seed OOMed.
struct Cell {
  double sum_s = 0;
  int valid = 0;
  int oom = 0;
  [[nodiscard]] std::optional<double> mean_s() const {
    if (valid == 0) return std::nullopt;
    return sum_s / valid;
  }
};

/// An agent of the file: its label (a column), its registry type and whether it learned.
struct ResultAgent {
  std::string name;
  std::string type;
  bool learner = false;
};

/// Results arranged by workload and agent, in order of first appearance.
struct Grid {
  std::vector<std::string> workloads;
  std::vector<ResultAgent> agents;
  std::map<std::string, bool> held_out;
  std::map<std::pair<std::string, std::string>, Cell> cells;
  std::map<std::string, double> bound_s;        ///< per workload: the tightest recorded bound
  std::map<std::string, double> basic_bound_s;  ///< max(critical path, work)
  std::vector<const RunResult*> results;        ///< in job order

  [[nodiscard]] const Cell* cell(const std::string& w, const std::string& a) const {
    auto it = cells.find({w, a});
    return it == cells.end() ? nullptr : &it->second;
  }
  [[nodiscard]] std::optional<double> time(const std::string& w, const std::string& a) const {
    const Cell* c = cell(w, a);
    return c ? c->mean_s() : std::nullopt;
  }
};

/// The file's results as a Grid; agents in order of their first result in job order, which
/// is config order.
[[nodiscard]] Grid arrange(const ResultsFile& file);

/// Seconds as milliseconds with three decimals ("12.345").
[[nodiscard]] std::string ms(double seconds);
/// A signed percentage with one decimal ("+12.3%").
[[nodiscard]] std::string percent(double value);
/// A ratio with two decimals ("1.23x").
[[nodiscard]] std::string ratio_text(double ratio);
/// The mean of `values` as a percentage, "-" when there are none.
[[nodiscard]] std::string average_text(const std::vector<double>& values);
/// A step-time cell: the mean in ms (with "(k OOM)" when some seeds ran out of memory),
/// "OOM" when all did, "" when the agent has no result on the workload.
[[nodiscard]] std::string time_cell(const Grid& g, const std::string& w, const std::string& a);

/// Step-time reduction of `t` relative to `reference`, percent (positive: faster).
[[nodiscard]] double reduction(double t, double reference);

/// A GO agent (its type starts with "go_").
[[nodiscard]] bool is_go(const ResultAgent& a);

/// The fastest of some agents on one workload; agent nullptr when none has a time there.
struct Best {
  const ResultAgent* agent = nullptr;
  double time_s = 0;
};
/// The fastest of `candidates` on workload `w` by mean step time (the first in config order
/// on a tie).
[[nodiscard]] Best best_of(const Grid& g, const std::string& w,
                           const std::vector<const ResultAgent*>& candidates);

/// The agent the paper's headline column compares with: the first human_expert (by type,
/// or by label in older files), else the first of `baselines`.
[[nodiscard]] const ResultAgent* paper_reference(const std::vector<const ResultAgent*>& baselines);

/// Summary of subject `label` (an agent, or "the best GO agent") against a paper reference
/// and the per-workload best baseline: both averages and how often it is ahead.
/// With `vs_paper_best` (a table that has the search reference), also the average against
/// the best of the paper's baselines, the search reference left out.
[[nodiscard]] std::string summary_line(const std::string& label, const std::string& reference,
                                       const std::vector<double>& vs_reference,
                                       const std::vector<double>& vs_best,
                                       const std::vector<double>* vs_paper_best = nullptr);

/// The search reference (an `annealing` agent): not one of the paper's baselines.
[[nodiscard]] bool is_search_reference(const ResultAgent& a);

/// The note under a table with best-baseline columns; `go`: the subjects are GO agents.
[[nodiscard]] std::string best_baseline_note(bool go);

/// The best-baseline cells of workload `w` appended to `row`: the best baseline `bb`, its
/// time, and each subject's step-time reduction relative to it ("-" without either result,
/// "OOM" when the subject ran out of memory), which also goes to the subject's `vs_best`.
void append_best_baseline_cells(const Grid& g, const std::string& w, const Best& bb,
                                const std::vector<const ResultAgent*>& subjects,
                                std::vector<std::vector<double>>& vs_best,
                                std::vector<std::string>& row);

}  // namespace gopt::experiments::tables
