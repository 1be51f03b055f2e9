#include "agents/baselines/list_scheduling.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "agents/placement_utils.h"

namespace gopt::agents {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Shared state of a list scheduler: per-device availability, per-op finish time and
// device, and the time at which op v's inputs are all present on device d.
class ListSchedule {
 public:
  explicit ListSchedule(const Problem& p)
      : p_(p),
        n_(static_cast<std::size_t>(p.num_nodes())),
        k_(p.num_devices()),
        device_free_(static_cast<std::size_t>(k_), 0.0),
        finish_(n_, 0.0),
        device_(n_, -1),
        colocated_device_(p.graph.colocation_groups().size(), -1) {}

  // Earliest time all inputs of v can be on device d (uncontended transfers).
  double data_ready(NodeId v, DeviceId d) const {
    double ready = 0;
    for (auto s = p_.graph.in_begin(v); s < p_.graph.in_end(v); ++s) {
      NodeId u = p_.graph.in_source(s);
      auto ui = static_cast<std::size_t>(u);
      double t = finish_[ui];
      if (device_[ui] != d) {
        t += p_.cost_model.transfer_time(p_.graph.edge_bytes(p_.graph.in_edge(s)), device_[ui], d);
      }
      ready = std::max(ready, t);
    }
    return ready;
  }

  // The device colocation forces on v, or -1.
  DeviceId forced_device(NodeId v) const {
    auto grp = p_.graph.colocation()[static_cast<std::size_t>(v)];
    return grp < 0 ? -1 : colocated_device_[static_cast<std::size_t>(grp)];
  }

  double start_on(NodeId v, DeviceId d) const { return std::max(device_free(d), data_ready(v, d)); }
  [[nodiscard]] double device_free(DeviceId d) const {
    return device_free_[static_cast<std::size_t>(d)];
  }

  void assign(NodeId v, DeviceId d, double start) {
    auto i = static_cast<std::size_t>(v);
    finish_[i] = start + p_.cost_model.op_time(p_.graph, v, d);
    device_[i] = d;
    device_free_[static_cast<std::size_t>(d)] = finish_[i];
    auto grp = p_.graph.colocation()[i];
    if (grp >= 0 && colocated_device_[static_cast<std::size_t>(grp)] < 0) {
      colocated_device_[static_cast<std::size_t>(grp)] = d;
    }
    order_.push_back(v);
  }

  // Placement plus priorities that replay the schedule's order on every device.
  core::Decision decision() const {
    core::Decision d;
    d.placement = device_;
    std::vector<std::int32_t> priority(n_);
    for (std::size_t i = 0; i < order_.size(); ++i) {
      priority[static_cast<std::size_t>(order_[i])] = static_cast<std::int32_t>(n_ - i);
    }
    d.priority = std::move(priority);
    return d;
  }

  [[nodiscard]] DeviceId devices() const { return k_; }

 private:
  const Problem& p_;
  std::size_t n_;
  DeviceId k_;
  std::vector<double> device_free_;
  std::vector<double> finish_;
  std::vector<DeviceId> device_;
  std::vector<DeviceId> colocated_device_;
  std::vector<NodeId> order_;
};

// Mean transfer time of `bytes` over ordered pairs of distinct devices.
double mean_transfer(const Problem& p, Bytes bytes) {
  if (p.num_devices() < 2) return 0;
  double sum = 0;
  for (DeviceId a = 0; a < p.num_devices(); ++a) {
    for (DeviceId b = 0; b < p.num_devices(); ++b) {
      if (a != b) sum += p.cost_model.transfer_time(bytes, a, b);
    }
  }
  return sum / static_cast<double>(p.num_devices() * (p.num_devices() - 1));
}

// Upward rank (HEFT): mean op time plus the longest mean-cost path to an exit op.
std::vector<double> upward_ranks(const Problem& p) {
  const auto& g = p.graph;
  std::vector<double> rank(static_cast<std::size_t>(g.num_nodes()), 0.0);
  const auto& order = g.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    NodeId v = *it;
    double mean_time = 0;
    for (DeviceId d = 0; d < p.num_devices(); ++d) mean_time += p.cost_model.op_time(g, v, d);
    mean_time /= static_cast<double>(p.num_devices());
    double tail = 0;
    for (auto e = g.out_begin(v); e < g.out_end(v); ++e) {
      tail = std::max(tail, mean_transfer(p, g.edge_bytes(e)) +
                                rank[static_cast<std::size_t>(g.out_target(e))]);
    }
    rank[static_cast<std::size_t>(v)] = mean_time + tail;
  }
  return rank;
}

// Node ids in decreasing `rank`, ties in topological order (zero-cost ops keep precedence).
std::vector<NodeId> by_decreasing_rank(const Problem& p, const std::vector<double>& rank) {
  std::vector<NodeId> order(p.graph.topological_order());
  const auto& topo = p.graph.topological_rank();
  std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
    auto ra = rank[static_cast<std::size_t>(a)];
    auto rb = rank[static_cast<std::size_t>(b)];
    if (ra != rb) return ra > rb;
    return topo[static_cast<std::size_t>(a)] < topo[static_cast<std::size_t>(b)];
  });
  return order;
}

// HEFT without the insertion policy (ops are appended to a device's timeline): the
// insertion search is quadratic in ops per device, too slow for 80,000-op graphs.
class HeftAgent final : public Agent {
 public:
  std::string name() const override { return "heft"; }
  core::Decision propose(const Problem& p) override {
    const std::vector<NodeId> order = by_decreasing_rank(p, upward_ranks(p));
    ListSchedule s(p);
    for (NodeId v : order) {
      const DeviceId forced = s.forced_device(v);
      DeviceId best = -1;
      double best_start = 0;
      double best_finish = kInf;
      for (DeviceId d = 0; d < s.devices(); ++d) {
        if (forced >= 0 && d != forced) continue;
        double start = s.start_on(v, d);
        double finish = start + p.cost_model.op_time(p.graph, v, d);
        if (finish < best_finish) {
          best = d;
          best_start = start;
          best_finish = finish;
        }
      }
      s.assign(v, best, best_start);
    }
    return s.decision();
  }
};

// m-ETF. Memory per device counts every placed op's parameters and outputs and never
// frees (Baechi's conservative rule); an op that fits nowhere goes to the device with the
// most memory left (the simulator then reports the OOM).
class MetfAgent final : public Agent {
 public:
  std::string name() const override { return "m_etf"; }
  core::Decision propose(const Problem& p) override {
    const auto& g = p.graph;
    const auto n = static_cast<std::size_t>(g.num_nodes());
    auto level = upward_ranks(p);
    std::vector<Bytes> used(static_cast<std::size_t>(p.num_devices()), 0);
    const auto k = static_cast<std::size_t>(p.num_devices());
    ListSchedule s(p);
    // data_ready[v * k + d]: when v's inputs can all be on d; fixed once v is ready.
    std::vector<double> data_ready(n * k, 0.0);
    std::vector<core::EdgeIndex> waiting(n);
    std::vector<NodeId> ready;
    auto make_ready = [&](NodeId v) {
      for (std::size_t d = 0; d < k; ++d) {
        data_ready[static_cast<std::size_t>(v) * k + d] = s.data_ready(v, static_cast<DeviceId>(d));
      }
      ready.push_back(v);
    };
    for (std::size_t v = 0; v < n; ++v) {
      waiting[v] = g.in_degree(static_cast<NodeId>(v));
      if (waiting[v] == 0) make_ready(static_cast<NodeId>(v));
    }
    while (!ready.empty()) {
      std::size_t pick = 0;
      DeviceId pick_device = -1;
      double pick_start = kInf;
      for (std::size_t i = 0; i < ready.size(); ++i) {
        NodeId v = ready[i];
        auto vi = static_cast<std::size_t>(v);
        Bytes need = g.param_bytes()[vi] + g.output_bytes()[vi];
        DeviceId forced = s.forced_device(v);
        for (DeviceId d = 0; d < p.num_devices(); ++d) {
          if (forced >= 0 && d != forced) continue;
          if (forced < 0 && used[static_cast<std::size_t>(d)] + need >
                                p.cluster.device(d).memory_capacity_bytes) {
            continue;
          }
          double start =
              std::max(s.device_free(d), data_ready[vi * k + static_cast<std::size_t>(d)]);
          // Earliest start; ties to the higher static level, then the earlier op.
          bool better =
              start < pick_start || (start == pick_start && pick_device >= 0 &&
                                     level[vi] > level[static_cast<std::size_t>(ready[pick])]);
          if (better) {
            pick = i;
            pick_device = d;
            pick_start = start;
          }
        }
      }
      if (pick_device < 0) {
        // Nothing fits anywhere: the first ready op goes where the most memory is left.
        pick = 0;
        pick_device = 0;
        for (DeviceId d = 1; d < p.num_devices(); ++d) {
          auto free_d =
              p.cluster.device(d).memory_capacity_bytes - used[static_cast<std::size_t>(d)];
          auto free_best = p.cluster.device(pick_device).memory_capacity_bytes -
                           used[static_cast<std::size_t>(pick_device)];
          if (free_d > free_best) pick_device = d;
        }
        pick_start = s.start_on(ready[0], pick_device);
      }
      NodeId v = ready[pick];
      auto vi = static_cast<std::size_t>(v);
      s.assign(v, pick_device, pick_start);
      used[static_cast<std::size_t>(pick_device)] += g.param_bytes()[vi] + g.output_bytes()[vi];
      ready[pick] = ready.back();
      ready.pop_back();
      for (auto e = g.out_begin(v); e < g.out_end(v); ++e) {
        auto w = static_cast<std::size_t>(g.out_target(e));
        if (--waiting[w] == 0) make_ready(static_cast<NodeId>(w));
      }
    }
    return s.decision();
  }
};

}  // namespace

std::vector<std::int32_t> critical_path_priorities(const Problem& p,
                                                   const std::vector<DeviceId>& placement) {
  const auto& g = p.graph;
  const auto n = static_cast<std::size_t>(g.num_nodes());
  if (placement.size() != n) {
    throw std::invalid_argument("critical_path_priorities: a placement of " +
                                std::to_string(placement.size()) + " ops for a graph of " +
                                std::to_string(n));
  }
  std::vector<double> rank(n, 0.0);
  const auto& topo = g.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const auto v = static_cast<std::size_t>(*it);
    const DeviceId dv = placement[v];
    double tail = 0;
    for (auto e = g.out_begin(*it); e < g.out_end(*it); ++e) {
      const auto w = static_cast<std::size_t>(g.out_target(e));
      const double transfer =
          placement[w] == dv ? 0.0 : p.cost_model.transfer_time(g.edge_bytes(e), dv, placement[w]);
      tail = std::max(tail, transfer + rank[w]);
    }
    rank[v] = p.cost_model.op_time(g, *it, dv) + tail;
  }
  const std::vector<NodeId> order = by_decreasing_rank(p, rank);
  std::vector<std::int32_t> priority(n);
  for (std::size_t i = 0; i < n; ++i) {
    priority[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(n - i);
  }
  return priority;
}

std::vector<std::int32_t> critical_path_priorities(const Problem& p,
                                                   const core::Decision& decision) {
  if (decision.placement) return critical_path_priorities(p, *decision.placement);
  return critical_path_priorities(
      p, std::vector<DeviceId>(static_cast<std::size_t>(p.graph.num_nodes()), 0));
}

void register_list_scheduling_agents(AgentRegistry& registry) {
  registry.add({"heft",
                "HEFT list scheduling (Topcuoglu et al. 2002): upward-rank order, earliest "
                "finish device; sets placement and priorities",
                false,
                {},
                [](const AgentOptions&) { return std::make_unique<HeftAgent>(); }});
  registry.add({"m_etf",
                "memory-constrained Earliest Task First (Baechi, SoCC 2020): earliest-start "
                "ready op and device with memory left; sets placement and priorities",
                false,
                {},
                [](const AgentOptions&) { return std::make_unique<MetfAgent>(); }});
}

}  // namespace gopt::agents
