#include "agents/baselines/partition_agents.h"

#include <metis.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>

#include "agents/option_fields.h"
#include "core/errors.h"
#include "core/rng.h"
#include "simulator/simulator.h"

namespace gopt::agents {
namespace {

// The graph METIS partitions: colocated ops contracted into one vertex (so a partition
// can never split a colocation group), edges undirected with parallel edges merged.
struct Contracted {
  std::vector<idx_t> vertex_of;  // op -> vertex
  std::vector<idx_t> xadj;
  std::vector<idx_t> adjncy;
  std::vector<idx_t> adjwgt;
  std::vector<idx_t> vwgt;  // ncon = 2 per vertex: compute, memory
  std::vector<double> compute_s;
  std::vector<Bytes> memory_bytes;
  idx_t num_vertices = 0;
};

// Integer weights for METIS: `value / unit`, at least 1 (METIS wants positive weights to
// balance meaningfully and treats 0-weight vertices as free).
idx_t scaled(double value, double unit) {
  double w = std::ceil(value / unit);
  return static_cast<idx_t>(std::clamp(w, 1.0, 1e8));
}

Contracted contract(const Problem& problem) {
  const auto& g = problem.graph;
  const auto n = static_cast<std::size_t>(g.num_nodes());
  Contracted c;
  c.vertex_of.assign(n, -1);
  std::vector<idx_t> group_vertex(g.colocation_groups().size(), -1);
  for (std::size_t v = 0; v < n; ++v) {
    auto grp = g.colocation()[v];
    if (grp >= 0) {
      auto& gv = group_vertex[static_cast<std::size_t>(grp)];
      if (gv < 0) gv = c.num_vertices++;
      c.vertex_of[v] = gv;
    } else {
      c.vertex_of[v] = c.num_vertices++;
    }
  }
  const auto nv = static_cast<std::size_t>(c.num_vertices);
  c.compute_s.assign(nv, 0.0);
  c.memory_bytes.assign(nv, 0);
  for (std::size_t v = 0; v < n; ++v) {
    auto x = static_cast<std::size_t>(c.vertex_of[v]);
    c.compute_s[x] += problem.cost_model.op_time(g, static_cast<NodeId>(v), 0);
    c.memory_bytes[x] += g.param_bytes()[v] + g.output_bytes()[v];
  }
  // Undirected, merged adjacency.
  std::vector<std::map<idx_t, double>> adjacency(nv);
  for (core::EdgeIndex e = 0; e < g.num_edges(); ++e) {
    auto a = c.vertex_of[static_cast<std::size_t>(g.edge_source(e))];
    auto b = c.vertex_of[static_cast<std::size_t>(g.out_target(e))];
    if (a == b) continue;
    double bytes = static_cast<double>(g.edge_bytes(e));
    adjacency[static_cast<std::size_t>(a)][b] += bytes;
    adjacency[static_cast<std::size_t>(b)][a] += bytes;
  }
  double total_compute = std::accumulate(c.compute_s.begin(), c.compute_s.end(), 0.0);
  double total_memory =
      static_cast<double>(std::accumulate(c.memory_bytes.begin(), c.memory_bytes.end(), Bytes{0}));
  // Units chosen so totals stay well inside idx_t: about 1e6 units in all per constraint.
  double compute_unit = std::max(total_compute / 1e6, 1e-12);
  double memory_unit = std::max(total_memory / 1e6, 1.0);
  c.xadj.push_back(0);
  for (std::size_t x = 0; x < nv; ++x) {
    c.vwgt.push_back(scaled(c.compute_s[x], compute_unit));
    c.vwgt.push_back(scaled(static_cast<double>(c.memory_bytes[x]), memory_unit));
    for (const auto& [y, bytes] : adjacency[x]) {
      c.adjncy.push_back(y);
      c.adjwgt.push_back(scaled(bytes, 1024.0));  // KiB
    }
    c.xadj.push_back(static_cast<idx_t>(c.adjncy.size()));
  }
  return c;
}

// METIS k-way with two balance constraints (compute time on device 0, and memory =
// parameters + outputs) and edge weights = tensor KiB, minimising the edge cut.
//
// Out-of-memory repair (documented in docs/agents.md): the placement is simulated; while a
// device runs out of memory (up to `repair_rounds` times), the contracted vertices on it
// are moved, largest memory first, to the device with the most free capacity (capacity
// minus parameters + outputs placed there) until a tenth of the overflowing device's
// parameter+output bytes has moved. The result is the first placement that fits, or the
// fastest of those tried when none does.
// METIS seeds and draws from one process-wide random generator (GKlib's), so partitions
// running at once in several threads (gopt run --jobs N) interleaved their draws and got
// results that depended on timing. One partition at a time, each from its own seed.
std::mutex& metis_mutex() {
  static std::mutex m;
  return m;
}

class MetisAgent final : public Agent {
 public:
  explicit MetisAgent(MetisOptions options) : options_(options) {}
  std::string name() const override { return "metis"; }

  core::Decision propose(const Problem& problem) override {
    const auto n = static_cast<std::size_t>(problem.num_nodes());
    const auto k = problem.num_devices();
    core::Decision decision;
    decision.placement = std::vector<DeviceId>(n, 0);
    if (k == 1 || n == 0) return decision;
    Contracted c = contract(problem);
    std::vector<idx_t> part(static_cast<std::size_t>(c.num_vertices), 0);
    if (c.num_vertices > k) {
      idx_t nvtxs = c.num_vertices;
      idx_t ncon = 2;
      idx_t nparts = k;
      idx_t objval = 0;
      std::vector<real_t> ubvec(2, static_cast<real_t>(1.0 + options_.imbalance));
      std::array<idx_t, METIS_NOPTIONS> options{};
      METIS_SetDefaultOptions(options.data());
      options[METIS_OPTION_SEED] =
          static_cast<idx_t>(core::mix_seed(options_.seed, problem.seed) & 0x7fffffff);
      options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
      std::lock_guard<std::mutex> lock(metis_mutex());
      int status =
          METIS_PartGraphKway(&nvtxs, &ncon, c.xadj.data(), c.adjncy.data(), c.vwgt.data(), nullptr,
                              c.adjwgt.empty() ? nullptr : c.adjwgt.data(), &nparts, nullptr,
                              ubvec.data(), options.data(), &objval, part.data());
      if (status != METIS_OK) {
        throw core::Error("metis: METIS_PartGraphKway failed with status " +
                          std::to_string(status) + " on graph '" + problem.graph.name() + "'");
      }
    } else {
      for (idx_t x = 0; x < c.num_vertices; ++x) part[static_cast<std::size_t>(x)] = x;
    }
    auto placement_of = [&](const std::vector<idx_t>& parts) {
      std::vector<DeviceId> p(n);
      for (std::size_t v = 0; v < n; ++v) {
        p[v] = static_cast<DeviceId>(parts[static_cast<std::size_t>(c.vertex_of[v])]);
      }
      return p;
    };
    decision.placement = placement_of(part);
    if (options_.repair_rounds <= 0) return decision;

    simulator::Simulator sim(problem.graph, problem.cluster, problem.cost_model,
                             simulator::SimulatorOptions().with_validate_decisions(false));
    auto best = decision;
    auto best_result = sim.simulate(best);
    for (std::int64_t round = 0; round < options_.repair_rounds && best_result.oom; ++round) {
      DeviceId full = best_result.oom_device;
      std::vector<Bytes> used(static_cast<std::size_t>(k), 0);
      for (std::size_t x = 0; x < part.size(); ++x)
        used[static_cast<std::size_t>(part[x])] += c.memory_bytes[x];
      std::vector<std::size_t> on_full;
      for (std::size_t x = 0; x < part.size(); ++x) {
        if (part[x] == full) on_full.push_back(x);
      }
      std::stable_sort(on_full.begin(), on_full.end(), [&](std::size_t a, std::size_t b) {
        return c.memory_bytes[a] > c.memory_bytes[b];
      });
      Bytes to_move = std::max<Bytes>(1, used[static_cast<std::size_t>(full)] / 10);
      for (std::size_t x : on_full) {
        if (to_move <= 0) break;
        DeviceId target = -1;
        Bytes most_free = 0;
        for (DeviceId d = 0; d < k; ++d) {
          if (d == full) continue;
          Bytes free_bytes =
              problem.cluster.device(d).memory_capacity_bytes - used[static_cast<std::size_t>(d)];
          if (target < 0 || free_bytes > most_free) {
            target = d;
            most_free = free_bytes;
          }
        }
        part[x] = target;
        used[static_cast<std::size_t>(target)] += c.memory_bytes[x];
        used[static_cast<std::size_t>(full)] -= c.memory_bytes[x];
        to_move -= c.memory_bytes[x];
      }
      core::Decision candidate;
      candidate.placement = placement_of(part);
      const auto& r = sim.simulate(candidate);
      if (!r.oom || r.step_time_s < best_result.step_time_s) {
        best = candidate;
        best_result = r;
      }
    }
    return best;
  }

 private:
  MetisOptions options_;
};

}  // namespace

void register_partition_agents(AgentRegistry& registry) {
  using M = MetisOptions;
  const auto fields =
      OptionFields<M>()
          .number("imbalance", &M::imbalance,
                  "allowed load imbalance per constraint (0.05: each part within 105% of the "
                  "mean)",
                  0, 10)
          .seed(&M::seed, "METIS seed, mixed with the experiment seed")
          .integer("repair_rounds", &M::repair_rounds,
                   "out-of-memory repair rounds (0: return METIS's partition as is)", 0, 1e6);
  registry.add(describe_agent(
      "metis",
      "METIS k-way partition (Karypis & Kumar 1998): balance compute time and memory, "
      "minimise bytes cut; OOM repaired by moving ops off full devices",
      false, fields, MetisOptions(),
      [](const MetisOptions& o) { return std::make_unique<MetisAgent>(o); }));
}

}  // namespace gopt::agents
