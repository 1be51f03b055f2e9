// The convergence table: simulations to reach a reference step time
// (experiments/tables/families.h).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include "experiments/tables/families.h"

namespace gopt::experiments::tables {
namespace {

// Samples a learner needed to reach a best step time <= target; nullopt: never. Sample by
// sample from its improvements; from the learning curve (one point per update: the samples
// up to the end of the update that reached it) for results written before they were kept.
std::optional<std::int64_t> samples_to_reach(const RunResult& r, double target_s) {
  const double reached = target_s * (1 + 1e-12);
  for (const auto& i : r.best_improvements) {
    if (i.step_time_s <= reached) return i.samples;
  }
  if (!r.best_improvements.empty()) return std::nullopt;
  for (const auto& p : r.learning_curve) {
    if (p.best_step_time_s <= reached) return p.samples;
  }
  return std::nullopt;
}

// The reference agents whose step times are the targets, and each seed's result.
struct References {
  const ResultAgent* hdp = nullptr;
  const ResultAgent* expert = nullptr;
  // Baselines as in the placement table: every non-GO agent when there are GO agents, else
  // the agents that do not learn.
  bool go = false;
  std::vector<const ResultAgent*> non_go;
  // One result per (workload, agent, seed).
  std::map<std::tuple<std::string, std::string, std::uint64_t>, const RunResult*> by_key;

  // Agent `a`'s step time on `w` with `seed`; nullopt without one, or when it OOMed.
  [[nodiscard]] std::optional<double> valid_time(const std::string& w, const ResultAgent* a,
                                                 std::uint64_t seed) const {
    if (!a) return std::nullopt;
    auto it = by_key.find({w, a->name, seed});
    if (it == by_key.end() || it->second->oom) return std::nullopt;
    return it->second->best_step_time_s;
  }
};

References references_of(const Grid& g) {
  References refs;
  refs.go = std::any_of(g.agents.begin(), g.agents.end(), is_go);
  for (const auto& a : g.agents) {
    if (a.type == "hdp" && !refs.hdp) refs.hdp = &a;
    if ((a.type == "human_expert" || a.type == "tf_default") && !refs.expert) refs.expert = &a;
    if (refs.go ? !is_go(a) : !a.learner) refs.non_go.push_back(&a);
  }
  for (const auto* r : g.results) refs.by_key[{r->key.workload, r->key.agent, r->key.seed}] = r;
  return refs;
}

std::vector<std::string> convergence_header(const References& refs) {
  std::vector<std::string> header = {"workload", "agent", "samples"};
  if (refs.hdp) {
    header.push_back(refs.hdp->name + " final best (ms)");
    header.push_back("samples to " + refs.hdp->name + " final best");
  }
  if (refs.expert) {
    header.push_back(refs.expert->name + " (ms)");
    header.push_back("samples to " + refs.expert->name);
  }
  header.emplace_back("best baseline + 5% (ms)");
  header.emplace_back("samples to best baseline + 5%");
  return header;
}

// A target per seed (`target`): its mean in ms, then the mean samples over the seeds of
// `runs` reaching it, appended to `row`.
void append_target_cells(const std::vector<const RunResult*>& runs,
                         const std::function<std::optional<double>(std::uint64_t)>& target,
                         std::vector<std::string>& row) {
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
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", reached_sum / reached);
  std::string cell = buf;
  if (reached < targets) {
    cell += " (" + std::to_string(reached) + " of " + std::to_string(targets) + " seeds)";
  }
  row.push_back(cell);
}

// The row of agent `a` on workload `w`, whose runs with a learning curve are `runs`.
std::vector<std::string> convergence_row(const References& refs, const std::string& w,
                                         const ResultAgent& a,
                                         const std::vector<const RunResult*>& runs) {
  std::vector<std::string> row{w, a.name};
  double samples = 0;
  for (const auto* r : runs) samples += static_cast<double>(r->samples);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", samples / static_cast<double>(runs.size()));
  row.emplace_back(buf);
  if (refs.hdp) {
    append_target_cells(
        runs, [&](std::uint64_t seed) { return refs.valid_time(w, refs.hdp, seed); }, row);
  }
  if (refs.expert) {
    append_target_cells(
        runs, [&](std::uint64_t seed) { return refs.valid_time(w, refs.expert, seed); }, row);
  }
  append_target_cells(
      runs,
      [&](std::uint64_t seed) -> std::optional<double> {
        std::optional<double> best;
        for (const auto* b : refs.non_go) {
          auto bt = refs.valid_time(w, b, seed);
          if (bt && (!best || *bt < *best)) best = bt;
        }
        if (!best) return std::nullopt;
        return *best * 1.05;
      },
      row);
  return row;
}

}  // namespace

Table convergence_table(const Grid& g) {
  Table t;
  t.id = "convergence";
  t.title = "Convergence: simulations to reach a reference step time";
  const References refs = references_of(g);
  t.header = convergence_header(refs);
  bool coarse = false;  // some result without its improvements (an older file)
  for (const auto& w : g.workloads) {
    for (const auto& a : g.agents) {
      std::vector<const RunResult*> runs;
      for (const auto* r : g.results) {
        if (r->key.workload == w && r->key.agent == a.name && !r->learning_curve.empty()) {
          runs.push_back(r);
        }
      }
      if (!runs.empty()) t.rows.push_back(convergence_row(refs, w, a, runs));
      for (const auto* r : runs) coarse = coarse || r->best_improvements.empty();
    }
  }
  t.notes.emplace_back(
      "samples: simulations each agent used (training and the final evaluation), mean over "
      "seeds. samples to R: the simulations it took, counted to the sample that first reached "
      "a best step time at or below R's, per seed, averaged over the seeds that reached it "
      "(\"never\": none did; \"k of n seeds\": only k did).");
  if (coarse) {
    t.notes.emplace_back(
        "Some results were written in format 2.0 or older, before samples were counted one "
        "by one: "
        "theirs count to the end of the update (learning-curve point) that "
        "reached R, which overstates them by up to one update's samples.");
  }
  if (refs.hdp) {
    t.notes.push_back("samples to " + refs.hdp->name +
                      " final best: the paper's convergence measure (GO needs 15x fewer "
                      "samples than HDP); undefined where HDP found nothing that fits.");
  }
  t.notes.push_back(std::string("best baseline + 5%: 1.05 times the step time of the same "
                                "seed's fastest ") +
                    (refs.go ? "non-GO agent (HDP and the search reference included)."
                             : "agent that does not learn."));
  return t;
}

}  // namespace gopt::experiments::tables
