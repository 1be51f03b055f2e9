#include "experiments/tables.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "experiments/machine_info.h"
#include "hardware/validation.h"

namespace gopt::experiments {
namespace {

// Mean step time over the seeds of one (workload, agent); nullopt when every seed OOMed.
struct Cell {
  double sum_s = 0;
  int valid = 0;
  int oom = 0;
  [[nodiscard]] std::optional<double> mean_s() const {
    if (valid == 0) return std::nullopt;
    return sum_s / valid;
  }
};

struct Agent {
  std::string name;
  std::string type;
  bool learner = false;
};

// Results arranged by workload and agent, in order of first appearance.
struct Grid {
  std::vector<std::string> workloads;
  std::vector<Agent> agents;
  std::map<std::string, bool> held_out;
  std::map<std::pair<std::string, std::string>, Cell> cells;
  std::map<std::string, double> bound_s;        // per workload: the tightest recorded bound
  std::map<std::string, double> basic_bound_s;  // max(critical path, work)
  std::vector<const RunResult*> results;        // in job order

  [[nodiscard]] const Cell* cell(const std::string& w, const std::string& a) const {
    auto it = cells.find({w, a});
    return it == cells.end() ? nullptr : &it->second;
  }
  [[nodiscard]] std::optional<double> time(const std::string& w, const std::string& a) const {
    const Cell* c = cell(w, a);
    return c ? c->mean_s() : std::nullopt;
  }
};

Grid arrange(const ResultsFile& file) {
  Grid g;
  for (const auto& r : file.results) {  // sorted by job order
    if (std::find(g.workloads.begin(), g.workloads.end(), r.key.workload) == g.workloads.end()) {
      g.workloads.push_back(r.key.workload);
    }
    if (std::none_of(g.agents.begin(), g.agents.end(),
                     [&](const Agent& a) { return a.name == r.key.agent; })) {
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

// Step-time reduction of `t` relative to `reference`, percent (positive: faster).
double reduction(double t, double reference) { return 100.0 * (reference - t) / reference; }

bool is_go(const Agent& a) { return a.type.rfind("go_", 0) == 0; }

// The fastest of `candidates` on workload `w` by mean step time (the first in config order
// on a tie); agent nullptr when none has a time there.
struct Best {
  const Agent* agent = nullptr;
  double time_s = 0;
};

Best best_of(const Grid& g, const std::string& w, const std::vector<const Agent*>& candidates) {
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

// The agent the paper's headline column compares with: the first human_expert (by type,
// or by label in older files), else the first of `baselines`.
const Agent* paper_reference(const std::vector<const Agent*>& baselines) {
  for (const auto* b : baselines) {
    if (b->type == "human_expert") return b;
  }
  for (const auto* b : baselines) {
    if (b->name == "human_expert") return b;
  }
  return baselines.empty() ? nullptr : baselines.front();
}

// Summary of subject `label` (an agent, or "the best GO agent") against a paper reference
// and the per-workload best baseline: both averages and how often it is ahead.
std::string summary_line(const std::string& label, const std::string& reference,
                         const std::vector<double>& vs_reference,
                         const std::vector<double>& vs_best) {
  int ahead = 0;
  for (double v : vs_best) ahead += v > 0 ? 1 : 0;
  std::string line =
      "Summary: " + label + " is " + average_text(vs_reference) + " vs " + reference +
      " on average (the paper's comparison) and " + average_text(vs_best) +
      " vs the best baseline of each workload, ahead of it on " + std::to_string(ahead) + " of " +
      std::to_string(vs_best.size()) + " workloads.";
  return line;
}

// The note under a table with best-baseline columns; `go`: the subjects are GO agents.
std::string best_baseline_note(bool go) {
  return std::string("best baseline: the fastest agent on that workload other than ") +
         (go ? "the GO agents (HDP and the search reference included)" : "the learned agents") +
         ", by mean step time; X vs best baseline: X's step-time reduction relative to it "
         "(positive: X is faster), averaged over the workloads where both have a time.";
}

// Table 1 (and Table 2 on held-out graphs): step times, and the best learned agent's
// improvement over each non-learning baseline, with an average row.
Table placement_table(const Grid& g, const std::vector<std::string>& workloads, std::string id,
                      std::string title) {
  Table t;
  t.id = std::move(id);
  t.title = std::move(title);
  t.header.push_back("workload");
  // The subjects are the learned agents, or, when GO agents are present, the GO agents
  // alone: then the other learners (HDP) are references too, as in the paper's tables.
  const bool go = std::any_of(g.agents.begin(), g.agents.end(), is_go);
  std::vector<const Agent*> learners;
  std::vector<const Agent*> baselines;
  for (const auto& a : g.agents) {
    t.header.push_back(a.name + " (ms)");
    ((go ? is_go(a) : a.learner) ? learners : baselines).push_back(&a);
  }
  const bool improvements = !learners.empty() && !baselines.empty();
  if (improvements) {
    t.header.push_back(go ? "best GO" : "best learned");
    for (const auto* b : baselines) t.header.push_back("vs " + b->name);
    t.header.push_back("best baseline");
    t.header.push_back("best baseline (ms)");
    for (const auto* l : learners) t.header.push_back(l->name + " vs best baseline");
  }
  const Agent* reference = paper_reference(baselines);
  std::vector<std::vector<double>> columns(baselines.size());
  std::vector<std::vector<double>> vs_best(learners.size());
  std::vector<double> best_vs_reference;  // the best subject per workload
  std::vector<double> best_vs_best;
  for (const auto& w : workloads) {
    std::vector<std::string> row{w};
    for (const auto& a : g.agents) row.push_back(time_cell(g, w, a.name));
    if (improvements) {
      const Agent* best = nullptr;
      double best_t = 0;
      for (const auto* l : learners) {
        auto lt = g.time(w, l->name);
        if (lt && (!best || *lt < best_t)) {
          best = l;
          best_t = *lt;
        }
      }
      row.push_back(best ? best->name : "-");
      for (std::size_t i = 0; i < baselines.size(); ++i) {
        auto bt = g.time(w, baselines[i]->name);
        if (!best || !g.cell(w, baselines[i]->name)) {
          row.push_back("-");
        } else if (!bt) {
          row.push_back("OOM");
        } else {
          double v = reduction(best_t, *bt);
          columns[i].push_back(v);
          row.push_back(percent(v));
          if (baselines[i] == reference) best_vs_reference.push_back(v);
        }
      }
      const Best bb = best_of(g, w, baselines);
      row.push_back(bb.agent ? bb.agent->name : "-");
      row.push_back(bb.agent ? ms(bb.time_s) : "-");
      if (best && bb.agent) best_vs_best.push_back(reduction(best_t, bb.time_s));
      for (std::size_t i = 0; i < learners.size(); ++i) {
        auto lt = g.time(w, learners[i]->name);
        if (!bb.agent || !g.cell(w, learners[i]->name)) {
          row.push_back("-");
        } else if (!lt) {
          row.push_back("OOM");
        } else {
          vs_best[i].push_back(reduction(*lt, bb.time_s));
          row.push_back(percent(vs_best[i].back()));
        }
      }
    }
    t.rows.push_back(std::move(row));
  }
  if (improvements && workloads.size() > 1) {
    std::vector<std::string> row{"average"};
    row.resize(1 + g.agents.size() + 1);
    for (const auto& c : columns) row.push_back(average_text(c));
    row.resize(row.size() + 2);  // best baseline and its time
    for (const auto& c : vs_best) row.push_back(average_text(c));
    t.rows.push_back(std::move(row));
  }
  t.notes.push_back("Step times are simulated, means over seeds, in milliseconds.");
  if (improvements) {
    t.notes.push_back(go ? "vs X: step-time reduction of the best GO agent on that workload "
                           "relative to agent X (positive: GO is faster)."
                         : "vs X: step-time reduction of the best learned agent on that "
                           "workload relative to baseline X (positive: the learned agent is "
                           "faster).");
    t.notes.push_back(best_baseline_note(go));
    const std::string best_label = go ? "the best GO agent" : "the best learned agent";
    t.notes.push_back(summary_line(best_label, reference->name, best_vs_reference, best_vs_best));
    if (learners.size() > 1) {
      for (std::size_t i = 0; i < learners.size(); ++i) {
        std::vector<double> vs_reference;
        for (const auto& w : workloads) {
          auto lt = g.time(w, learners[i]->name);
          auto rt = g.time(w, reference->name);
          if (lt && rt) vs_reference.push_back(reduction(*lt, *rt));
        }
        if (vs_reference.empty() && vs_best[i].empty()) continue;  // no rows in this table
        t.notes.push_back(
            summary_line(learners[i]->name, reference->name, vs_reference, vs_best[i]));
      }
    }
  }
  return t;
}

// Table 3: step times of the two references, every other agent's step-time reduction
// relative to each (TensorFlow's default: an agent of type tf_default, or one labelled
// tf_default in older files; the unoptimised single GPU: the first single_device agent),
// and multi-task GO against the best single-task and the best two-task GO variant on the
// same workload. An average row follows when there is more than one workload.
Table multitask_table(const Grid& g) {
  Table t;
  t.id = "multitask";
  t.title = "Multi-task: step-time reduction over TensorFlow default and single GPU";
  const Agent* tf_default = nullptr;
  const Agent* single = nullptr;
  for (const auto& a : g.agents) {
    if (a.type == "tf_default" && !tf_default) tf_default = &a;
  }
  for (const auto& a : g.agents) {
    if (a.name == "tf_default" && !tf_default) tf_default = &a;
    if (a.type == "single_device" && !single) single = &a;
  }
  std::vector<std::pair<const Agent*, std::string>> refs;
  if (tf_default) refs.emplace_back(tf_default, "TF default");
  if (single) refs.emplace_back(single, "single GPU");
  static const std::vector<std::string> kSingleTask = {"go_placement", "go_scheduling",
                                                       "go_fusion"};
  static const std::vector<std::string> kTwoTask = {"go_placement_scheduling",
                                                    "go_placement_fusion", "go_scheduling_fusion"};
  auto of_types = [&g](const std::vector<std::string>& types) {
    std::vector<const Agent*> agents;
    for (const auto& a : g.agents) {
      if (std::find(types.begin(), types.end(), a.type) != types.end()) agents.push_back(&a);
    }
    return agents;
  };
  const std::vector<const Agent*> single_task = of_types(kSingleTask);
  const std::vector<const Agent*> two_task = of_types(kTwoTask);
  t.header.push_back("workload");
  for (const auto& [ref, label] : refs) t.header.push_back(label + " (ms)");
  // Each comparison: an agent against a reference, or (reference nullptr) against the
  // fastest agent of a group on each workload.
  struct Column {
    const Agent* agent;
    const Agent* ref;
    const std::vector<const Agent*>* group;
  };
  std::vector<Column> columns;
  for (const auto& a : g.agents) {
    if (&a == tf_default || &a == single) continue;
    for (const auto& [ref, label] : refs) {
      t.header.push_back(a.name + " vs " + label);
      columns.push_back({&a, ref, nullptr});
    }
    if (a.type != "go_multitask") continue;
    if (!single_task.empty()) {
      t.header.push_back(a.name + " vs best single task");
      columns.push_back({&a, nullptr, &single_task});
    }
    if (!two_task.empty()) {
      t.header.push_back(a.name + " vs best two tasks");
      columns.push_back({&a, nullptr, &two_task});
    }
  }
  // The best baseline: the fastest non-GO agent of each workload; each GO agent against it.
  std::vector<const Agent*> non_go;
  std::vector<const Agent*> go_agents;
  for (const auto& a : g.agents) (is_go(a) ? go_agents : non_go).push_back(&a);
  const bool best_columns = !non_go.empty() && !go_agents.empty();
  if (best_columns) {
    t.header.push_back("best baseline");
    t.header.push_back("best baseline (ms)");
    for (const auto* a : go_agents) t.header.push_back(a->name + " vs best baseline");
  }
  std::vector<std::vector<double>> vs_best(go_agents.size());
  std::vector<std::vector<double>> values(columns.size());
  for (const auto& w : g.workloads) {
    std::vector<std::string> row{w};
    for (const auto& ref_label : refs) row.push_back(time_cell(g, w, ref_label.first->name));
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const Agent* a = columns[i].agent;
      const Agent* ref = columns[i].ref;
      std::optional<double> rt;
      bool has_ref = false;
      if (ref) {
        rt = g.time(w, ref->name);
        has_ref = g.cell(w, ref->name) != nullptr;
      } else {
        for (const auto* s : *columns[i].group) {
          auto st = g.time(w, s->name);
          has_ref = has_ref || g.cell(w, s->name) != nullptr;
          if (st && (!rt || *st < *rt)) rt = st;
        }
      }
      auto at = g.time(w, a->name);
      if (!g.cell(w, a->name) || !has_ref) {
        row.push_back("-");
      } else if (!at || !rt) {
        row.push_back("OOM");
      } else {
        values[i].push_back(reduction(*at, *rt));
        row.push_back(percent(values[i].back()));
      }
    }
    if (best_columns) {
      const Best bb = best_of(g, w, non_go);
      row.push_back(bb.agent ? bb.agent->name : "-");
      row.push_back(bb.agent ? ms(bb.time_s) : "-");
      for (std::size_t i = 0; i < go_agents.size(); ++i) {
        auto at = g.time(w, go_agents[i]->name);
        if (!bb.agent || !g.cell(w, go_agents[i]->name)) {
          row.push_back("-");
        } else if (!at) {
          row.push_back("OOM");
        } else {
          vs_best[i].push_back(reduction(*at, bb.time_s));
          row.push_back(percent(vs_best[i].back()));
        }
      }
    }
    t.rows.push_back(std::move(row));
  }
  if (g.workloads.size() > 1 && (!columns.empty() || best_columns)) {
    std::vector<std::string> row{"average"};
    row.resize(1 + refs.size());
    for (const auto& v : values) row.push_back(average_text(v));
    if (best_columns) {
      row.resize(row.size() + 2);  // best baseline and its time
      for (const auto& v : vs_best) row.push_back(average_text(v));
    }
    t.rows.push_back(std::move(row));
  }
  if (!tf_default || !single) {
    t.notes.push_back(
        "Missing reference agents: add a tf_default agent (TensorFlow's default placement, "
        "FIFO scheduling and XLA-style fusion) and a single_device agent (an unoptimised "
        "single GPU).");
  }
  t.notes.push_back(
      "Step times are simulated, means over seeds, in milliseconds. X vs R: step-time "
      "reduction of X relative to R, (R - X) / R (positive: X is faster); the average is over "
      "the workloads where both have a time.");
  if (!single_task.empty()) {
    t.notes.push_back(
        "vs best single task: relative to the fastest of go_placement, go_scheduling and "
        "go_fusion on that workload.");
  }
  if (!two_task.empty()) {
    t.notes.push_back(
        "vs best two tasks: relative to the fastest of go_placement_scheduling, "
        "go_placement_fusion and go_scheduling_fusion on that workload.");
  }
  if (best_columns) {
    t.notes.push_back(best_baseline_note(true));
    for (std::size_t i = 0; i < go_agents.size(); ++i) {
      if (go_agents[i]->type != "go_multitask") continue;
      std::vector<double> vs_tf;
      for (std::size_t c = 0; c < columns.size(); ++c) {
        if (columns[c].agent == go_agents[i] && columns[c].ref == tf_default) vs_tf = values[c];
      }
      t.notes.push_back(
          summary_line(go_agents[i]->name, tf_default ? "TF default" : "-", vs_tf, vs_best[i]));
    }
  }
  return t;
}

// Lower bounds and optimality gaps of `workloads`: the bound recorded with the results
// (simulator/lower_bounds.h), the basic one, each agent's step time over the bound and the
// best step time any agent found over it.
Table bounds_table(const Grid& g, const std::vector<std::string>& workloads, std::string id,
                   std::string title, bool fused) {
  Table t;
  t.id = std::move(id);
  t.title = std::move(title);
  t.header = {"workload", "bound (ms)", "max(critical path, work) (ms)"};
  for (const auto& a : g.agents) t.header.push_back(a.name + " gap");
  t.header.push_back("best / bound");
  std::vector<std::vector<double>> gaps(g.agents.size() + 1);
  for (const auto& w : workloads) {
    const double bound = g.bound_s.at(w);
    if (!(bound > 0)) {  // results without bounds (hand-made files)
      std::vector<std::string> row(t.header.size(), "-");
      row[0] = w;
      t.rows.push_back(std::move(row));
      continue;
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
    t.rows.push_back(std::move(row));
  }
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
      "and its proof); max(critical path, work): the basic bound, the only one in files "
      "written before 2026-11-24. X gap: X's mean step time over the bound (1.00x: provably "
      "optimal). best / bound: the fastest agent's step time over the bound.");
  if (fused) {
    t.notes.emplace_back(
        "Fusion removes launches and memory traffic, so fused decisions can beat the bound "
        "(a gap below 1.00x).");
  }
  return t;
}

// Samples a learning curve needed to reach a best step time <= target; nullopt: never.
std::optional<std::int64_t> samples_to_reach(const RunResult& r, double target_s) {
  for (const auto& p : r.learning_curve) {
    if (p.best_step_time_s <= target_s * (1 + 1e-12)) return p.samples;
  }
  return std::nullopt;
}

// Convergence: for every agent with a learning curve, the simulations it took to reach
// three targets, per seed, averaged over the seeds that reached them: HDP's final best of
// the same seed (the paper's measure), the human expert's step time, and 5% above the best
// baseline of that seed (the fastest non-GO agent).
Table convergence_table(const Grid& g) {
  Table t;
  t.id = "convergence";
  t.title = "Convergence: simulations to reach a reference step time";
  const Agent* hdp = nullptr;
  const Agent* expert = nullptr;
  // Baselines as in the placement table: every non-GO agent when there are GO agents,
  // else the agents that do not learn.
  const bool go = std::any_of(g.agents.begin(), g.agents.end(), is_go);
  std::vector<const Agent*> non_go;
  for (const auto& a : g.agents) {
    if (a.type == "hdp" && !hdp) hdp = &a;
    if ((a.type == "human_expert" || a.type == "tf_default") && !expert) expert = &a;
    if (go ? !is_go(a) : !a.learner) non_go.push_back(&a);
  }
  // One result per (workload, agent, seed).
  std::map<std::tuple<std::string, std::string, std::uint64_t>, const RunResult*> by_key;
  for (const auto* r : g.results) by_key[{r->key.workload, r->key.agent, r->key.seed}] = r;
  auto valid_time = [&](const std::string& w, const Agent* a,
                        std::uint64_t seed) -> std::optional<double> {
    if (!a) return std::nullopt;
    auto it = by_key.find({w, a->name, seed});
    if (it == by_key.end() || it->second->oom) return std::nullopt;
    return it->second->best_step_time_s;
  };
  t.header = {"workload", "agent", "samples"};
  if (hdp) {
    t.header.push_back(hdp->name + " final best (ms)");
    t.header.push_back("samples to " + hdp->name + " final best");
  }
  if (expert) {
    t.header.push_back(expert->name + " (ms)");
    t.header.push_back("samples to " + expert->name);
  }
  t.header.emplace_back("best baseline + 5% (ms)");
  t.header.emplace_back("samples to best baseline + 5%");
  for (const auto& w : g.workloads) {
    for (const auto& a : g.agents) {
      std::vector<const RunResult*> runs;
      for (const auto* r : g.results) {
        if (r->key.workload == w && r->key.agent == a.name && !r->learning_curve.empty()) {
          runs.push_back(r);
        }
      }
      if (runs.empty()) continue;
      std::vector<std::string> row{w, a.name};
      double samples = 0;
      for (const auto* r : runs) samples += static_cast<double>(r->samples);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f", samples / static_cast<double>(runs.size()));
      row.emplace_back(buf);
      // A target per seed: its mean in ms, then the mean samples over the seeds reaching it.
      auto measure = [&](const std::function<std::optional<double>(std::uint64_t)>& target) {
        double target_sum = 0;
        int targets = 0;
        double reached_sum = 0;
        int reached = 0;
        for (const auto* r : runs) {
          auto tt = target(r->key.seed);
          if (!tt) continue;
          target_sum += *tt;
          ++targets;
          if (auto n = samples_to_reach(*r, *tt)) {
            reached_sum += static_cast<double>(*n);
            ++reached;
          }
        }
        if (targets == 0) {
          row.emplace_back("-");
          row.emplace_back("-");
          return;
        }
        row.push_back(ms(target_sum / targets));
        if (reached == 0) {
          row.emplace_back("never");
          return;
        }
        std::snprintf(buf, sizeof buf, "%.0f", reached_sum / reached);
        std::string cell = buf;
        if (reached < targets) {
          cell += " (" + std::to_string(reached) + " of " + std::to_string(targets) + " seeds)";
        }
        row.push_back(cell);
      };
      if (hdp) measure([&](std::uint64_t seed) { return valid_time(w, hdp, seed); });
      if (expert) measure([&](std::uint64_t seed) { return valid_time(w, expert, seed); });
      measure([&](std::uint64_t seed) -> std::optional<double> {
        std::optional<double> best;
        for (const auto* b : non_go) {
          auto bt = valid_time(w, b, seed);
          if (bt && (!best || *bt < *best)) best = bt;
        }
        if (!best) return std::nullopt;
        return *best * 1.05;
      });
      t.rows.push_back(std::move(row));
    }
  }
  t.notes.emplace_back(
      "samples: simulations each agent used (training and the final evaluation), mean over "
      "seeds. samples to R: the simulations its learning curve took to reach a best step time "
      "at or below R's, per seed, averaged over the seeds that reached it (\"never\": none "
      "did; \"k of n seeds\": only k did).");
  if (hdp) {
    t.notes.push_back("samples to " + hdp->name +
                      " final best: the paper's convergence measure (GO needs 15x fewer "
                      "samples than HDP); undefined where HDP found nothing that fits.");
  }
  t.notes.push_back(std::string("best baseline + 5%: 1.05 times the step time of the same "
                                "seed's fastest ") +
                    (go ? "non-GO agent (HDP and the search reference included)."
                        : "agent that does not learn."));
  return t;
}

// Measured against simulated step time per case (results written by `gopt validate`),
// with the summary statistics of hardware/validation.h in the notes.
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

// A running job's state as a reader should see it: "running" from a process that is gone
// (killed, or the machine restarted) is not running any more.
std::string running_state(const RunningJob& j) {
  if (j.state == "failed") return "failed: " + j.message;
  if (j.state == "stopped") return "stopped (--resume continues it)";
  if (j.host == host_name() && j.pid > 0 && ::kill(static_cast<pid_t>(j.pid), 0) != 0 &&
      errno == ESRCH) {
    return "not running: its process " + std::to_string(j.pid) + " is gone (--resume continues it)";
  }
  return j.state;
}

// Jobs that were training when the file was last written, with their curves so far.
Table running_table(const ResultsFile& file) {
  Table t;
  t.id = "running";
  t.title = "Running: jobs still training (their learning curves so far)";
  t.header = {"workload",         "agent",          "seed",         "state", "updates", "samples",
              "best so far (ms)", "last mean (ms)", "written (UTC)"};
  for (const auto& j : file.running) {
    std::string workloads = j.rows.front().workload;
    if (j.rows.size() > 1) {
      workloads = "pretraining on " + std::to_string(j.rows.size()) + " graphs (" + workloads;
      for (std::size_t i = 1; i < j.rows.size() && i < 3; ++i)
        workloads += ", " + j.rows[i].workload;
      workloads += j.rows.size() > 3 ? ", ...)" : ")";
    }
    const auto* last = j.learning_curve.empty() ? nullptr : &j.learning_curve.back();
    std::string updates = last ? std::to_string(last->step) : "0";
    if (j.max_steps > 0) updates += " of " + std::to_string(j.max_steps);
    auto finite_ms = [](double s) { return std::isfinite(s) ? ms(s) : std::string("none yet"); };
    t.rows.push_back({workloads, j.rows.front().agent, std::to_string(j.rows.front().seed),
                      running_state(j), updates, last ? std::to_string(last->samples) : "0",
                      last ? finite_ms(last->best_step_time_s) : "",
                      last ? finite_ms(last->mean_step_time_s) : "", j.updated});
  }
  t.notes.push_back(
      "Written by `gopt run` while the jobs train (every --curve-every seconds, default 30); a "
      "job leaves this table when its result is written. Their cells in the tables above stay "
      "empty until then.");
  return t;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

// "steps 200, samples 400, seconds 60", each limit only when set.
std::string budget_text(const agents::TrainBudget& b) {
  std::string s = "steps " + std::to_string(b.max_steps);
  if (b.max_samples != agents::TrainBudget{}.max_samples) {
    s += ", samples " + std::to_string(b.max_samples);
  }
  if (std::isfinite(b.max_seconds)) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", b.max_seconds);
    s += std::string(", seconds ") + seconds;
  }
  return s;
}

}  // namespace

std::vector<Table> build_tables(const ResultsFile& file) {
  std::vector<Table> tables;
  Grid g = arrange(file);
  std::vector<std::string> seen;
  std::vector<std::string> held_out;
  for (const auto& w : g.workloads) (g.held_out[w] ? held_out : seen).push_back(w);
  const bool multitask = file.metadata.table == "multitask";
  const bool validation = file.metadata.table == "validation";
  if (!seen.empty()) {
    tables.push_back(
        placement_table(g, seen, "placement", "Placement: step time per workload and agent"));
    if (!validation && !multitask) {
      tables.push_back(bounds_table(g, seen, "placement_bounds",
                                    "Placement: lower bounds and optimality gaps", false));
    }
  }
  if (!held_out.empty()) {
    tables.push_back(placement_table(g, held_out, "generalization",
                                     "Generalization: step time on held-out graphs"));
    tables.push_back(bounds_table(g, held_out, "generalization_bounds",
                                  "Generalization: lower bounds and optimality gaps", false));
  }
  if (multitask && !g.workloads.empty()) {
    tables.push_back(multitask_table(g));
    tables.push_back(bounds_table(g, g.workloads, "multitask_bounds",
                                  "Multi-task: lower bounds and optimality gaps", true));
  }
  if (!validation && std::any_of(file.results.begin(), file.results.end(),
                                 [](const RunResult& r) { return !r.learning_curve.empty(); })) {
    tables.push_back(convergence_table(g));
  }
  if (file.metadata.table == "validation") tables.push_back(validation_table(file));
  if (!file.running.empty()) tables.push_back(running_table(file));
  if (tables.empty()) {
    Table t;
    t.id = "empty";
    t.title = "No results";
    t.notes.push_back("The file holds no finished results yet.");
    tables.push_back(std::move(t));
  }
  return tables;
}

std::vector<std::string> provenance_warnings(const ResultsFile& file) {
  // Distinct values in order of first appearance, with their counts of rows.
  using Counts = std::vector<std::pair<std::string, int>>;
  auto count = [](Counts& counts, const std::string& value) {
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == value; });
    if (it == counts.end()) {
      counts.emplace_back(value, 1);
    } else {
      ++it->second;
    }
  };
  auto listed = [](const Counts& counts) {
    std::string s;
    for (const auto& [value, n] : counts) {
      s += (s.empty() ? "" : "; ") + value + " (" + std::to_string(n) +
           (n == 1 ? " result)" : " results)");
    }
    return s;
  };
  Counts revisions;
  std::vector<std::pair<std::string, Counts>> budgets;  // by agent label
  for (const auto& r : file.results) {
    if (!r.provenance.git_revision.empty()) count(revisions, r.provenance.git_revision);
    if (!r.budget) continue;
    auto agent = std::find_if(budgets.begin(), budgets.end(),
                              [&](const auto& b) { return b.first == r.key.agent; });
    if (agent == budgets.end()) agent = budgets.insert(budgets.end(), {r.key.agent, {}});
    count(agent->second, budget_text(*r.budget));
  }
  std::vector<std::string> warnings;
  if (revisions.size() > 1) {
    warnings.push_back(
        "the results come from " + std::to_string(revisions.size()) +
        " git revisions, which may simulate or train differently: " + listed(revisions));
  }
  for (const auto& [agent, counts] : budgets) {
    if (counts.size() > 1) {
      warnings.push_back(
          "agent " + agent + " trained under " + std::to_string(counts.size()) +
          " budgets, so its results are not comparable with each other: " + listed(counts));
    }
  }
  return warnings;
}

std::string render_tables(const std::vector<Table>& tables, TableFormat format) {
  std::ostringstream out;
  bool first = true;
  for (const auto& t : tables) {
    if (!first) out << "\n";
    first = false;
    if (format == TableFormat::kCsv) {
      out << "# " << t.title << "\n";
      if (!t.header.empty()) {
        for (std::size_t i = 0; i < t.header.size(); ++i) {
          out << (i ? "," : "") << csv_cell(t.header[i]);
        }
        out << "\n";
      }
      for (const auto& row : t.rows) {
        for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << csv_cell(row[i]);
        out << "\n";
      }
      for (const auto& n : t.notes) out << "# " << n << "\n";
      continue;
    }
    out << "## " << t.title << "\n\n";
    if (!t.header.empty()) {
      std::vector<std::size_t> width(t.header.size(), 3);
      for (std::size_t i = 0; i < t.header.size(); ++i)
        width[i] = std::max(width[i], t.header[i].size());
      for (const auto& row : t.rows) {
        for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
          width[i] = std::max(width[i], row[i].size());
        }
      }
      auto line = [&](const std::vector<std::string>& cells) {
        out << "|";
        for (std::size_t i = 0; i < width.size(); ++i) {
          std::string c = i < cells.size() ? cells[i] : "";
          // Numbers right-aligned, text left-aligned.
          bool numeric = !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) ||
                                        c[0] == '+' || c[0] == '-');
          std::string pad(width[i] - c.size(), ' ');
          out << " " << (numeric && i > 0 ? pad + c : c + pad) << " |";
        }
        out << "\n";
      };
      line(t.header);
      out << "|";
      for (std::size_t i = 0; i < width.size(); ++i) {
        out << (i == 0 ? ":" : "") << std::string(width[i] + (i == 0 ? 1 : 1), '-')
            << (i == 0 ? "" : ":") << "|";
      }
      out << "\n";
      for (const auto& row : t.rows) line(row);
      out << "\n";
    }
    for (const auto& n : t.notes) out << n << "\n";
  }
  return out.str();
}

}  // namespace gopt::experiments
