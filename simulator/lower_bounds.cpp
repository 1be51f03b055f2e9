#include "simulator/lower_bounds.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/errors.h"
#include "hardware/network_model.h"

namespace gopt::simulator {
namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// Union-find over node ids, for Kruskal's maximum spanning forest.
class DisjointSets {
 public:
  explicit DisjointSets(std::size_t n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), std::size_t{0});
  }
  std::size_t find(std::size_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  bool unite(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    parent_[b] = a;
    return true;
  }

 private:
  std::vector<std::size_t> parent_;
};

// Longest path ending at each node (its own time included) and starting at it.
void longest_paths(const core::CompiledGraph& g, const std::vector<Seconds>& time,
                   std::vector<Seconds>& head, std::vector<Seconds>& tail) {
  const auto n = at(g.num_nodes());
  head.assign(n, 0);
  tail.assign(n, 0);
  const auto& order = g.topological_order();
  for (NodeId v : order) {
    Seconds ready = 0;
    for (auto s = g.in_begin(v); s < g.in_end(v); ++s) {
      ready = std::max(ready, head[at(g.in_source(s))]);
    }
    head[at(v)] = ready + time[at(v)];
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId v = *it;
    Seconds after = 0;
    for (auto e = g.out_begin(v); e < g.out_end(v); ++e) {
      after = std::max(after, tail[at(g.out_target(e))]);
    }
    tail[at(v)] = after + time[at(v)];
  }
}

// One device's operands of an op: jobs released at r_j (a lower bound on when operand j can
// start) taking p_j, on `streams` identical streams. The last of them ends no earlier than
// max_j (r_j + max(p_j, the work released at or after r_j / streams)); with one stream
// that is the makespan of release-date order, which is optimal (1|r_j|C_max).
class OperandsOnOneDevice {
 public:
  explicit OperandsOnOneDevice(double streams) : streams_(streams) {}
  void add(Seconds release, Seconds time) {
    // Each job keeps the work released at or after its release date, summed in the order
    // the jobs came.
    Seconds later = 0;
    for (auto& j : jobs_) {
      if (j.release >= release) later += j.time;
      if (release >= j.release) j.later += time;
    }
    jobs_.push_back({release, time, later + time});
    for (const auto& j : jobs_) end_ = std::max(end_, j.release + j.later / streams_);
    end_ = std::max(end_, release + time);
  }
  [[nodiscard]] Seconds end() const { return end_; }

 private:
  struct Job {
    Seconds release;
    Seconds time;
    Seconds later;  ///< the work of the jobs released at or after this one's release
  };
  double streams_;
  std::vector<Job> jobs_;
  Seconds end_ = 0;
};

// Communication-aware earliest starts. Op v starts after each operand producer u has
// finished, plus the transfer when u is on another device; the producers that share v's
// device run on its streams one after another. So for the set S of producers beside v,
// start(v) >= max(max over u outside S of (start(u) + t(u) + x(u, v)), the end of S on one
// device), minimised over S. Sorting the producers by their remote arrival
// a(u) = start(u) + t(u) + x(u, v) in decreasing order, the best S of each size is a
// prefix (the end of S only grows with S), so the minimum is over n + 1 prefixes.
//
// With `reversed`, the same on the reversed graph: a bound on the time from each op's end
// to the step's end, less its own time (operands become consumers, which start after the
// op's end plus their transfer and share its device's streams the same way).
std::vector<Seconds> communication_starts(const core::CompiledGraph& g,
                                          const std::vector<Seconds>& time,
                                          const std::vector<Seconds>& edge_transfer_s,
                                          double streams, bool reversed) {
  std::vector<Seconds> start(at(g.num_nodes()), 0);
  struct Producer {
    Seconds arrival;  // start + time + the slowest of its transfers to v
    Seconds release;  // its start
    Seconds time;
    NodeId node;
  };
  std::vector<Producer> producers;
  const auto& order = g.topological_order();
  for (std::size_t i = 0; i < order.size(); ++i) {
    const NodeId v = reversed ? order[order.size() - 1 - i] : order[i];
    producers.clear();
    const auto add = [&](NodeId u, core::EdgeIndex e) {
      producers.push_back(
          {start[at(u)] + time[at(u)] + edge_transfer_s[at(e)], start[at(u)], time[at(u)], u});
    };
    if (reversed) {
      for (auto e = g.out_begin(v); e < g.out_end(v); ++e) add(g.out_target(e), e);
    } else {
      for (auto s = g.in_begin(v); s < g.in_end(v); ++s) add(g.in_source(s), g.in_edge(s));
    }
    if (producers.empty()) continue;
    // One entry per producer (several tensors from one producer: the slowest transfer).
    std::sort(producers.begin(), producers.end(),
              [](const Producer& x, const Producer& y) { return x.node < y.node; });
    std::size_t kept = 0;
    for (const auto& p : producers) {
      if (kept > 0 && producers[kept - 1].node == p.node) {
        producers[kept - 1].arrival = std::max(producers[kept - 1].arrival, p.arrival);
      } else {
        producers[kept++] = p;
      }
    }
    producers.resize(kept);
    std::sort(producers.begin(), producers.end(),
              [](const Producer& x, const Producer& y) { return x.arrival > y.arrival; });
    // Quadratic in the fan-in per prefix step; past kExact operands the rest are taken as
    // remote-or-local by the cheaper of the two only (still a lower bound).
    constexpr std::size_t kExact = 64;
    OperandsOnOneDevice beside(streams);
    Seconds best = producers.front().arrival;  // S empty: every producer remote
    for (std::size_t k = 0; k < producers.size() && k < kExact; ++k) {
      beside.add(producers[k].release, producers[k].time);
      const Seconds remote = k + 1 < producers.size() ? producers[k + 1].arrival : 0;
      best = std::min(best, std::max(remote, beside.end()));
    }
    if (producers.size() > kExact) {
      // Larger S: their end is at least the largest start + time among them.
      Seconds local = beside.end();
      for (std::size_t k = kExact; k < producers.size(); ++k) {
        local = std::max(local, producers[k].release + producers[k].time);
        const Seconds remote = k + 1 < producers.size() ? producers[k + 1].arrival : 0;
        best = std::min(best, std::max(remote, local));
      }
    }
    start[at(v)] = best;
  }
  return start;
}

// The idle stream time that the first theta seconds of any schedule must hold, divided by
// the cluster's `streams` streams, as a piecewise-linear function of theta (its
// breakpoints, theta increasing). By theta at most available(theta) = the sum over ops of
// clamp(theta - earliest(v), 0, t(v)) of their work is done (an op runs no faster than
// t(v) and starts no earlier than earliest(v)), while the streams could have done
// streams x theta: idle >= max(0, theta - available(theta) / streams). `idle` holds
// theta - available / streams without the clamp, which keeps it linear between
// breakpoints; most_until clamps.
struct IdleCurve {
  std::vector<Seconds> theta;
  std::vector<Seconds> idle;
  std::vector<Seconds> best_before;  ///< prefix maxima of idle

  IdleCurve(const std::vector<Seconds>& earliest, const std::vector<Seconds>& time,
            double streams) {
    std::vector<std::pair<Seconds, int>> events;  // (theta, change in ops that could run)
    events.reserve(2 * earliest.size());
    for (std::size_t v = 0; v < earliest.size(); ++v) {
      if (time[v] <= 0) continue;
      events.emplace_back(earliest[v], +1);
      events.emplace_back(earliest[v] + time[v], -1);
    }
    std::sort(events.begin(), events.end());
    push(0, 0);
    Seconds now = 0;
    Seconds available = 0;
    int running = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      available += running * (events[i].first - now);
      now = events[i].first;
      running += events[i].second;
      if (i + 1 < events.size() && events[i + 1].first == now) continue;
      push(now, now - available / streams);
    }
  }

  // The largest max(0, idle(x)) for x <= limit (idle is linear between breakpoints).
  [[nodiscard]] Seconds most_until(Seconds limit) const {
    if (limit <= 0) return 0;
    const auto it = std::upper_bound(theta.begin(), theta.end(), limit);
    const std::size_t k = static_cast<std::size_t>(it - theta.begin());  // theta[k-1] <= limit
    Seconds most = best_before[k - 1];
    if (k < theta.size()) {
      const Seconds f = (limit - theta[k - 1]) / (theta[k] - theta[k - 1]);
      most = std::max(most, idle[k - 1] + f * (idle[k] - idle[k - 1]));
    }
    return std::max(Seconds{0}, most);
  }

 private:
  void push(Seconds at, Seconds value) {
    theta.push_back(at);
    idle.push_back(value);
    best_before.push_back(best_before.empty() ? value : std::max(best_before.back(), value));
  }
};

// Fill and drain: T >= work / streams + idle at the start + idle at the end, for start and
// end windows that fit in T together (`known` <= T, a bound already proved); see
// LowerBounds::fill_drain_s. Applied again with its own result while that grows.
Seconds fill_drain_bound(const IdleCurve& fill, const IdleCurve& drain, Seconds work,
                         Seconds known) {
  Seconds bound = known;
  for (int round = 0; round < 8; ++round) {
    Seconds most = 0;
    for (std::size_t i = 0; i < fill.theta.size() && fill.theta[i] <= bound; ++i) {
      most = std::max(most,
                      std::max(Seconds{0}, fill.idle[i]) + drain.most_until(bound - fill.theta[i]));
    }
    for (std::size_t j = 0; j < drain.theta.size() && drain.theta[j] <= bound; ++j) {
      most = std::max(
          most, std::max(Seconds{0}, drain.idle[j]) + fill.most_until(bound - drain.theta[j]));
    }
    const Seconds next = work + most;
    if (next <= bound * (1 + 1e-12)) break;
    bound = next;
  }
  return bound > known ? bound : 0;
}

}  // namespace

Seconds LowerBounds::best_s() const {
  const Seconds either = std::min(single_device_s, split_s);
  const Seconds basic =
      std::max({critical_path_s, work_s, colocation_s, communication_path_s, fill_drain_s});
  return either < std::numeric_limits<Seconds>::infinity() ? std::max(either, basic) : basic;
}

namespace {

// Every bound but fill and drain; `fastest`, `head` and `tail` are left for it.
LowerBounds bounds_but_fill_drain(const core::CompiledGraph& graph,
                                  const hardware::Cluster& cluster,
                                  const hardware::CostModel& cost_model,
                                  std::vector<Seconds>& fastest, std::vector<Seconds>& head,
                                  std::vector<Seconds>& tail) {
  LowerBounds b;
  const auto n = at(graph.num_nodes());
  const DeviceId devices = cluster.num_devices();
  if (n == 0) return b;
  // Op times per device type (the cost model's contract: times depend on the type only).
  const int types = cluster.num_device_types();
  std::vector<DeviceId> representative(at(types), -1);
  for (DeviceId d = 0; d < devices; ++d) {
    auto& r = representative[at(cluster.device_type_index(d))];
    if (r < 0) r = d;
  }
  std::vector<std::vector<Seconds>> type_time(at(types), std::vector<Seconds>(n));
  fastest.assign(n, std::numeric_limits<Seconds>::infinity());
  for (int t = 0; t < types; ++t) {
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      const Seconds time = cost_model.op_time(graph, v, representative[at(t)]);
      type_time[at(t)][at(v)] = time;
      fastest[at(v)] = std::min(fastest[at(v)], time);
    }
  }

  // Basic bounds: as the simulator's.
  longest_paths(graph, fastest, head, tail);
  Seconds total = 0;
  for (std::size_t v = 0; v < n; ++v) {
    b.critical_path_s = std::max(b.critical_path_s, head[v]);
    total += fastest[v];
  }
  b.work_s = total / static_cast<double>(cluster.total_compute_streams());

  // One device: parameters are resident from the start and an op's output is allocated
  // when it starts, so holding everything needs params + the largest output at least.
  core::Bytes params = 0;
  core::Bytes largest_output = 0;
  for (std::size_t v = 0; v < n; ++v) {
    params += graph.param_bytes()[v];
    largest_output = std::max(largest_output, graph.output_bytes()[v]);
  }
  const core::Bytes needed = params + largest_output;
  std::vector<char> type_done(at(types), 0);
  b.split_forced = true;
  for (DeviceId d = 0; d < devices; ++d) {
    const auto& spec = cluster.device(d);
    if (needed > spec.memory_capacity_bytes) continue;
    b.split_forced = false;
    const int t = cluster.device_type_index(d);
    std::vector<Seconds> h;
    std::vector<Seconds> unused;
    longest_paths(graph, type_time[at(t)], h, unused);
    Seconds cp = 0;
    Seconds work = 0;
    for (std::size_t v = 0; v < n; ++v) {
      cp = std::max(cp, h[v]);
      work += type_time[at(t)][v];
    }
    const Seconds bound = std::max(cp, work / static_cast<double>(spec.compute_streams));
    b.single_device_s = std::min(b.single_device_s, bound);
  }

  // Split placements: the cheapest transfer of `bytes` between two distinct devices, each
  // route composed by the network model's rule (as CostModel::transfer_time).
  if (devices < 2 || n < 2) return b;
  std::vector<hardware::RouteCost> pairs;
  for (DeviceId s = 0; s < devices; ++s) {
    for (DeviceId d = 0; d < devices; ++d) {
      if (s != d) pairs.push_back(hardware::compose_route(cluster.route(s, d), cost_model));
    }
  }
  // Each edge's cheapest transfer; control dependencies cost nothing across devices.
  std::vector<Seconds> edge_transfer_s(at(graph.num_edges()), 0);
  for (core::EdgeIndex e = 0; e < graph.num_edges(); ++e) {
    const core::Bytes bytes = graph.edge_bytes(e);
    if (bytes <= 0) continue;
    Seconds best = std::numeric_limits<Seconds>::infinity();
    for (const auto& p : pairs) best = std::min(best, p.transfer_time_s(bytes));
    edge_transfer_s[at(e)] = best;
  }
  // Weight of edge e: the longest path through it when it crosses devices. The smallest
  // edge of a maximum spanning forest is min over cuts of the largest crossing weight.
  struct WeightedEdge {
    Seconds weight;
    NodeId u;
    NodeId v;
  };
  std::vector<WeightedEdge> edges;
  edges.reserve(at(graph.num_edges()));
  for (NodeId u = 0; u < graph.num_nodes(); ++u) {
    for (auto e = graph.out_begin(u); e < graph.out_end(u); ++e) {
      const NodeId v = graph.out_target(e);
      edges.push_back({head[at(u)] + edge_transfer_s[at(e)] + tail[at(v)], u, v});
    }
  }
  std::sort(edges.begin(), edges.end(),
            [](const WeightedEdge& x, const WeightedEdge& y) { return x.weight > y.weight; });
  DisjointSets sets(n);
  std::size_t joined = 0;
  Seconds smallest = std::numeric_limits<Seconds>::infinity();
  for (const auto& e : edges) {
    if (sets.unite(at(e.u), at(e.v))) {
      ++joined;
      smallest = std::min(smallest, e.weight);
    }
  }
  b.cut_path_s = joined + 1 == n ? smallest : 0;

  // Communication paths: the earliest start of each op and the least time from its start
  // to the end, each counting the transfers or the serialisation its neighbours force.
  int most_streams = 1;
  core::Bytes largest_capacity = 0;
  for (DeviceId d = 0; d < devices; ++d) {
    most_streams = std::max(most_streams, cluster.device(d).compute_streams);
    largest_capacity = std::max(largest_capacity, cluster.device(d).memory_capacity_bytes);
  }
  const double streams = static_cast<double>(most_streams);
  const auto starts = communication_starts(graph, fastest, edge_transfer_s, streams, false);
  const auto after = communication_starts(graph, fastest, edge_transfer_s, streams, true);
  for (std::size_t v = 0; v < n; ++v) {
    b.communication_path_s = std::max(b.communication_path_s, starts[v] + fastest[v] + after[v]);
  }
  b.split_s = std::max({b.critical_path_s, b.work_s, b.cut_path_s});

  // Forced colocation: after merging edges [0, i) (weights w_0 >= ... >= w_{i-1}) the
  // components are those of the edges heavier than T for T in [w_i, w_{i-1}); T is
  // feasible there when T >= the largest component's work and every component fits.
  DisjointSets parts(n);
  std::vector<Seconds> work(fastest);
  std::vector<core::Bytes> part_params(graph.param_bytes().begin(), graph.param_bytes().end());
  std::vector<core::Bytes> part_output(graph.output_bytes().begin(), graph.output_bytes().end());
  Seconds most_work = 0;
  bool fits = true;
  for (std::size_t v = 0; v < n; ++v) {
    most_work = std::max(most_work, work[v]);
    fits = fits && part_params[v] + part_output[v] <= largest_capacity;
  }
  Seconds upper = std::numeric_limits<Seconds>::infinity();
  for (std::size_t i = 0; i <= edges.size() && fits; ++i) {
    const Seconds lower = i < edges.size() ? edges[i].weight : 0;
    const Seconds candidate = std::max(lower, most_work / streams);
    if (candidate < upper) {
      b.colocation_s = candidate;  // intervals go down in T: the last feasible one is least
    }
    if (i == edges.size()) break;
    const std::size_t x = parts.find(at(edges[i].u));
    const std::size_t y = parts.find(at(edges[i].v));
    if (x != y) {
      parts.unite(x, y);
      const std::size_t root = parts.find(x);
      const std::size_t other = root == x ? y : x;
      work[root] += work[other];
      part_params[root] += part_params[other];
      part_output[root] = std::max(part_output[root], part_output[other]);
      most_work = std::max(most_work, work[root]);
      fits = part_params[root] + part_output[root] <= largest_capacity;
    }
    upper = edges[i].weight;
  }
  return b;
}

}  // namespace

LowerBounds compute_lower_bounds(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                                 const hardware::CostModel& cost_model) {
  std::vector<Seconds> fastest;
  std::vector<Seconds> head;
  std::vector<Seconds> tail;
  LowerBounds b = bounds_but_fill_drain(graph, cluster, cost_model, fastest, head, tail);
  const auto n = fastest.size();
  if (n == 0) return b;
  std::vector<Seconds> earliest(n);
  std::vector<Seconds> before_end(n);
  for (std::size_t v = 0; v < n; ++v) {  // >= 0 also where rounding says -1e-17
    earliest[v] = std::max(Seconds{0}, head[v] - fastest[v]);
    before_end[v] = std::max(Seconds{0}, tail[v] - fastest[v]);
  }
  const double streams = static_cast<double>(cluster.total_compute_streams());
  b.fill_drain_s = fill_drain_bound(IdleCurve(earliest, fastest, streams),
                                    IdleCurve(before_end, fastest, streams), b.work_s, b.best_s());
  return b;
}

}  // namespace gopt::simulator
