// The measured tables: results' decisions executed on a real backend (`gopt measure`)
// beside their simulated times (experiments/tables/families.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/strings.h"
#include "experiments/tables/families.h"
#include "hardware/validation.h"

namespace gopt::experiments::tables {
namespace {

// One (workload, agent): the means over its measured seeds.
struct MeasuredCell {
  double simulated_sum_s = 0;
  double measured_sum_s = 0;
  double spread_max = 0;
  int seeds = 0;
  int oom = 0;  // seeds the simulator said ran out of memory
  [[nodiscard]] double simulated_s() const { return simulated_sum_s / seeds; }
  [[nodiscard]] double measured_s() const { return measured_sum_s / seeds; }
};

struct MeasuredGrid {
  std::map<std::pair<std::string, std::string>, MeasuredCell> cells;
  std::vector<hardware::ValidationCase> cases;  // one per measured result
  std::vector<double> spreads;
  std::vector<double> cpu_shares;
  std::string backend;
  int fusion_dropped = 0;
  std::int64_t repeats = 0;
  std::int64_t rounds = 0;
  int without_step_times = 0;  // format 2.2 measurements: their spread is the range

  [[nodiscard]] const MeasuredCell* cell(const std::string& w, const std::string& a) const {
    const auto it = cells.find({w, a});
    return it == cells.end() ? nullptr : &it->second;
  }
};

// A measurement's noise: the interquartile range of its timed steps over their median, or,
// for a format 2.2 measurement that kept no step times, its (max - min) / median.
double spread_of(const Measurement& x) {
  return x.step_times_s.empty() ? x.measured_spread : hardware::relative_iqr(x.step_times_s);
}

MeasuredGrid arrange_measured(const ResultsFile& file) {
  MeasuredGrid m;
  for (const auto& r : file.results) {
    const Measurement* x = file.measurement(r.key);
    if (x == nullptr) continue;
    MeasuredCell& c = m.cells[{r.key.workload, r.key.agent}];
    c.simulated_sum_s += x->simulated_step_time_s;
    c.measured_sum_s += x->measured_step_time_s;
    c.spread_max = std::max(c.spread_max, spread_of(*x));
    ++c.seeds;
    if (r.oom) ++c.oom;
    m.cases.push_back({r.key.workload, r.key.agent + " seed " + std::to_string(r.key.seed),
                       x->measured_step_time_s, x->simulated_step_time_s});
    m.spreads.push_back(spread_of(*x));
    if (x->step_times_s.empty()) ++m.without_step_times;
    m.cpu_shares.push_back(x->cpu_share);
    m.backend = x->measured_backend;
    m.repeats = x->repeats;
    m.rounds = x->rounds;
    if (x->fusion_dropped) ++m.fusion_dropped;
  }
  return m;
}

// The fastest agent of workload `w` among `agents` by the simulated or the measured mean.
struct Winner {
  const ResultAgent* agent = nullptr;
  const MeasuredCell* cell = nullptr;
};
Winner winner(const MeasuredGrid& m, const std::string& w,
              const std::vector<const ResultAgent*>& agents, bool measured) {
  Winner best;
  for (const auto* a : agents) {
    const MeasuredCell* c = m.cell(w, a->name);
    if (c == nullptr) continue;
    const double t = measured ? c->measured_s() : c->simulated_s();
    if (best.cell == nullptr ||
        t < (measured ? best.cell->measured_s() : best.cell->simulated_s())) {
      best = {a, c};
    }
  }
  return best;
}

// An unsigned percentage with one decimal ("12.3%").
std::string unsigned_percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v);
  return buf;
}

std::string three_decimals(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// The first result of each agent of the file, by label.
std::map<std::string, const RunResult*> first_results(const Grid& g) {
  std::map<std::string, const RunResult*> first;
  for (const RunResult* r : g.results) first.emplace(r->key.agent, r);
  return first;
}

// Learners trained on measured rewards against their twins trained on the simulator, both
// measured (`reward: measured`, experiments/run/measured_reward.h); empty when no agent of
// the file trained on measured rewards.
std::optional<Table> reward_table(const MeasuredGrid& m, const Grid& g) {
  const auto first = first_results(g);
  // Each agent on measured rewards and its twin: the first agent of its type on simulated
  // rewards with the same resolved options.
  std::vector<std::pair<const ResultAgent*, const ResultAgent*>> pairs;
  std::vector<std::string> unpaired;
  for (const auto& a : g.agents) {
    const RunResult* r = first.at(a.name);
    if (r->reward != "measured") continue;
    const ResultAgent* twin = nullptr;
    for (const auto& b : g.agents) {
      const RunResult* o = first.at(b.name);
      if (o->reward == "simulated" && o->agent_type == r->agent_type &&
          o->resolved_options == r->resolved_options) {
        twin = &b;
        break;
      }
    }
    if (twin == nullptr) {
      unpaired.push_back(a.name);
    } else {
      pairs.emplace_back(&a, twin);
    }
  }
  if (pairs.empty() && unpaired.empty()) return std::nullopt;
  Table t;
  t.id = "measured_rewards";
  t.title = "Trained on measured rewards against trained on the simulator, both measured";
  t.header = {"workload",
              "measured rewards",
              "simulated rewards",
              "measured (ms)",
              "twin measured (ms)",
              "change, measured",
              "simulated (ms)",
              "twin simulated (ms)",
              "best in training (ms)",
              "training - measured",
              "decisions executed"};
  // Per (workload, agent on measured rewards): the decisions executed and the best reward
  // its training saw (the learning curve's last best, in measured times), summed over seeds.
  struct Training {
    double executions = 0;
    double best_s = 0;
    int seeds = 0;
    int with_curve = 0;
  };
  std::map<std::pair<std::string, std::string>, Training> training;
  for (const RunResult* r : g.results) {
    if (r->reward != "measured") continue;
    auto& e = training[{r->key.workload, r->key.agent}];
    e.executions += static_cast<double>(r->reward_executions);
    ++e.seeds;
    if (!r->learning_curve.empty() && std::isfinite(r->learning_curve.back().best_step_time_s)) {
      e.best_s += r->learning_curve.back().best_step_time_s;
      ++e.with_curve;
    }
  }
  std::vector<double> changes, optimisms;
  for (const auto& [with, twin] : pairs) {
    for (const auto& w : g.workloads) {
      const MeasuredCell* a = m.cell(w, with->name);
      const MeasuredCell* b = m.cell(w, twin->name);
      if (a == nullptr || b == nullptr) continue;
      changes.push_back(reduction(a->measured_s(), b->measured_s()));
      const Training& e = training[{w, with->name}];
      char count[32];
      std::snprintf(count, sizeof count, "%.0f", e.seeds > 0 ? e.executions / e.seeds : 0.0);
      std::string best = "-", optimism = "-";
      if (e.with_curve > 0) {
        const double best_s = e.best_s / e.with_curve;
        optimisms.push_back(100.0 * (best_s / a->measured_s() - 1));
        best = ms(best_s);
        optimism = percent(optimisms.back());
      }
      t.rows.push_back({w, with->name, twin->name, ms(a->measured_s()), ms(b->measured_s()),
                        percent(changes.back()), ms(a->simulated_s()), ms(b->simulated_s()), best,
                        optimism, count});
    }
  }
  if (changes.size() > 1) {
    t.rows.push_back({"average", "", "", "", "", average_text(changes), "", "", "",
                      optimisms.size() > 1 ? average_text(optimisms) : "", ""});
  }
  t.notes.push_back(
      "Each agent trained on measured rewards (every sample executed on the backend) beside "
      "the first agent of its type and options trained on the simulator, each row's means "
      "over the seeds measured; change: the measured step-time reduction of training on "
      "measured rewards (positive: faster than its twin). Both decisions were measured by "
      "`gopt measure` at the end; best in training: the fastest reward the agent saw in "
      "training (one warm-up and the median of three steps of a decision); training - "
      "measured: how far that is from the measurement of the decision the job proposed "
      "(negative: training saw faster than the end measures, as the minimum of many noisy "
      "times is); decisions executed: distinct decisions timed in training, the mean over seeds.");
  if (!unpaired.empty()) {
    t.notes.push_back("No agent of the same type and options trained on the simulator for: " +
                      core::join(unpaired) + ".");
  }
  return t;
}

// Each agent's gain over the reference of the file's table (TF default in a multi-task file,
// else the paper's reference baseline), simulated and measured: whether a simulated gain
// holds when the decisions run.
std::optional<Table> gains_table(const MeasuredGrid& m, const Grid& g) {
  const ResultAgent* reference = nullptr;
  std::vector<const ResultAgent*> baselines;
  for (const auto& a : g.agents) {
    if (a.type == "tf_default" && reference == nullptr) reference = &a;
    if (!is_go(a)) baselines.push_back(&a);
  }
  if (reference == nullptr) reference = paper_reference(baselines);
  if (reference == nullptr) return std::nullopt;
  Table t;
  t.id = "measured_gains";
  t.title = "Measured on hardware: each agent's gain over " + reference->name +
            ", simulated and measured";
  t.header = {"workload", "agent", "gain, simulated", "gain, measured", "measured - simulated"};
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_agent;
  for (const auto& w : g.workloads) {
    const MeasuredCell* ref = m.cell(w, reference->name);
    if (ref == nullptr) continue;
    for (const auto& a : g.agents) {
      if (&a == reference) continue;
      const MeasuredCell* c = m.cell(w, a.name);
      if (c == nullptr) continue;
      const double simulated = reduction(c->simulated_s(), ref->simulated_s());
      const double measured = reduction(c->measured_s(), ref->measured_s());
      by_agent[a.name].first.push_back(simulated);
      by_agent[a.name].second.push_back(measured);
      t.rows.push_back(
          {w, a.name, percent(simulated), percent(measured), percent(measured - simulated)});
    }
  }
  if (t.rows.empty()) return std::nullopt;
  for (const auto& a : g.agents) {
    const auto it = by_agent.find(a.name);
    if (it == by_agent.end() || it->second.first.size() < 2) continue;
    double sim = 0, real = 0;
    for (double x : it->second.first) sim += x;
    for (double x : it->second.second) real += x;
    const auto n = static_cast<double>(it->second.first.size());
    t.rows.push_back(
        {"average", a.name, percent(sim / n), percent(real / n), percent((real - sim) / n)});
  }
  t.notes.push_back("Gain: the step-time reduction against " + reference->name +
                    " on the same workload, each world's means over the measured seeds "
                    "(positive: faster than " +
                    reference->name +
                    "); measured - simulated: how many points of the simulated gain the "
                    "measurements add (positive) or take away (negative).");
  return t;
}

}  // namespace

std::vector<Table> measured_tables(const ResultsFile& file, const Grid& g) {
  const MeasuredGrid m = arrange_measured(file);
  Table t;
  t.id = "measured";
  t.title = "Measured on hardware: step time per workload and agent, measured and simulated";
  if (m.cases.empty()) {
    t.notes.push_back(
        "No result of this file has been executed on hardware: `gopt measure FILE` runs each "
        "result's decision on this machine's backend when the file's hardware is a measured "
        "profile (docs/hardware-backend.md, \"Measuring results\").");
    return {t};
  }
  t.header = {"workload",      "agent",           "seeds", "simulated (ms)",
              "measured (ms)", "simulator error", "spread"};
  for (const auto& w : g.workloads) {
    for (const auto& a : g.agents) {
      const MeasuredCell* c = m.cell(w, a.name);
      if (c == nullptr) continue;
      std::string seeds = std::to_string(c->seeds);
      if (c->oom > 0) seeds += " (" + std::to_string(c->oom) + " OOM simulated)";
      t.rows.push_back({w, a.name, seeds, ms(c->simulated_s()), ms(c->measured_s()),
                        percent(100 * (c->simulated_s() - c->measured_s()) / c->measured_s()),
                        unsigned_percent(100 * c->spread_max)});
    }
  }
  const auto s = hardware::summarize_validation(m.cases);
  char line[768];
  std::snprintf(line, sizeof line,
                "Simulator error over the %d measured results (%d workloads): MAPE %.1f%%, "
                "max |error| %.1f%% (%s), mean error %+.1f%%; Kendall tau %.3f over all, %.3f "
                "on average within a workload.",
                s.cases, s.graphs, s.mape, s.max_abs_pct_error, s.worst_case.c_str(),
                s.mean_pct_error, s.kendall_tau, s.mean_graph_kendall_tau);
  t.notes.emplace_back(line);
  std::snprintf(line, sizeof line,
                "Measured: median of %lld timed steps (%lld interleaved rounds) on %s; "
                "simulated: the same decision as executed, on the file's hardware profile; the "
                "error is (simulated - measured) / measured; spread: the interquartile range of "
                "the timed steps over their median, the largest over the agent's seeds; median "
                "spread %.1f%%.",
                static_cast<long long>(m.repeats), static_cast<long long>(m.rounds),
                m.backend.c_str(), 100 * hardware::median(m.spreads));
  t.notes.emplace_back(line);
  if (m.without_step_times > 0) {
    t.notes.push_back(std::to_string(m.without_step_times) +
                      " measurements were written by a gopt that kept no step times (results "
                      "format 2.2): their spread is (max - min) / median instead.");
  }
  if (m.fusion_dropped > 0) {
    t.notes.push_back(std::to_string(m.fusion_dropped) +
                      " measured decisions fuse ops, which the backend does not execute: they ran "
                      "unfused, and their simulated times here are of the unfused decision, not "
                      "the fused times of the tables above.");
  }
  const double share = hardware::median(m.cpu_shares);
  if (share < 0.9) {
    t.notes.push_back(
        "The busiest worker had " + unsigned_percent(100 * share) +
        " of a CPU in the median step: other processes shared the machine, and the measured "
        "times include waiting for it.");
  }

  // Per workload: whether the simulator picks the measured winner, and the best GO agent
  // against the best baseline in each world.
  Table w;
  w.id = "measured_winners";
  w.title = "Measured on hardware: the simulated winner against the measured one";
  std::vector<const ResultAgent*> all, go, baselines;
  for (const auto& a : g.agents) {
    all.push_back(&a);
    (is_go(a) ? go : baselines).push_back(&a);
  }
  const bool with_go = !go.empty() && !baselines.empty();
  w.header = {"workload", "simulated winner", "measured winner", "same", "Kendall tau"};
  if (with_go) {
    w.header.emplace_back("GO vs best baseline, simulated");
    w.header.emplace_back("GO vs best baseline, measured");
  }
  int agree = 0, compared = 0;
  std::vector<double> taus, go_simulated, go_measured;
  for (const auto& workload : g.workloads) {
    const Winner sim = winner(m, workload, all, false);
    const Winner real = winner(m, workload, all, true);
    if (sim.cell == nullptr) continue;
    // The same, or the simulated winner's measured time within the measured noise of the
    // measured winner's.
    std::string same = "yes";
    if (sim.agent != real.agent) {
      const double gap =
          (sim.cell->measured_s() - real.cell->measured_s()) / real.cell->measured_s();
      same = gap <= std::max(sim.cell->spread_max, real.cell->spread_max) ? "within spread" : "no";
    }
    ++compared;
    if (same != "no") ++agree;
    std::vector<double> simulated, measured;
    for (const auto* a : all) {
      if (const MeasuredCell* c = m.cell(workload, a->name)) {
        simulated.push_back(c->simulated_s());
        measured.push_back(c->measured_s());
      }
    }
    std::string tau = "-";
    if (simulated.size() >= 2) {
      taus.push_back(hardware::kendall_tau_b(measured, simulated));
      tau = three_decimals(taus.back());
    }
    std::vector<std::string> row = {workload, sim.agent->name, real.agent->name, same, tau};
    if (with_go) {
      const Winner go_sim = winner(m, workload, go, false), go_real = winner(m, workload, go, true);
      const Winner bb_sim = winner(m, workload, baselines, false);
      const Winner bb_real = winner(m, workload, baselines, true);
      if (go_sim.cell != nullptr && bb_sim.cell != nullptr) {
        go_simulated.push_back(reduction(go_sim.cell->simulated_s(), bb_sim.cell->simulated_s()));
        go_measured.push_back(reduction(go_real.cell->measured_s(), bb_real.cell->measured_s()));
        row.push_back(percent(go_simulated.back()) + " (" + go_sim.agent->name + " vs " +
                      bb_sim.agent->name + ")");
        row.push_back(percent(go_measured.back()) + " (" + go_real.agent->name + " vs " +
                      bb_real.agent->name + ")");
      } else {
        row.insert(row.end(), {"-", "-"});
      }
    }
    w.rows.push_back(std::move(row));
  }
  if (with_go && go_simulated.size() > 1) {
    w.rows.push_back(
        {"average", "", "", "", "", average_text(go_simulated), average_text(go_measured)});
  }
  double mean_tau = 0;
  for (double x : taus) mean_tau += x;
  if (!taus.empty()) mean_tau /= static_cast<double>(taus.size());
  std::snprintf(line, sizeof line,
                "The simulator picks the measured winner (or one within the measured spread of "
                "it) on %d of %d workloads; mean Kendall tau of the agents' order %.3f.",
                agree, compared, mean_tau);
  w.notes.emplace_back(line);
  w.notes.push_back(
      "Winner: the fastest agent by its mean over seeds, in each world. Same: \"within spread\" "
      "when the simulated winner's measured time is within the larger measured spread of the "
      "two of the measured winner's. GO vs best baseline: the fastest GO agent against the "
      "fastest other agent, each chosen in its own world (simulated or measured), as a "
      "step-time reduction.");
  std::vector<Table> out = {t, w};
  if (auto gains = gains_table(m, g)) out.push_back(std::move(*gains));
  if (auto rewards = reward_table(m, g)) out.push_back(std::move(*rewards));
  return out;
}

}  // namespace gopt::experiments::tables
