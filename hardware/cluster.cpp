#include "hardware/cluster.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/errors.h"

namespace gopt::hardware {
namespace {

constexpr double kRouteReferenceBytes = 1024.0 * 1024.0;

std::string device_field(std::size_t i, const char* field) {
  return "devices[" + std::to_string(i) + "]." + field;
}

void check_positive(double value, const std::string& source, const std::string& field) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw core::InputError(source, field,
                           "expected a positive number, found " + std::to_string(value));
  }
}

void check_non_negative(double value, const std::string& source, const std::string& field) {
  if (!(value >= 0) || !std::isfinite(value)) {
    throw core::InputError(source, field, "expected a number >= 0, found " + std::to_string(value));
  }
}

void validate_device(const DeviceSpec& d, std::size_t i, const std::string& source) {
  if (d.name.empty()) throw core::InputError(source, device_field(i, "name"), "empty device name");
  bool any_peak = false;
  for (int t = 0; t < kNumDTypes; ++t) {
    double peak = d.peak_flops_per_s[static_cast<std::size_t>(t)];
    check_non_negative(peak, source,
                       device_field(i, "peak_flops_per_s.") +
                           std::string(core::to_string(static_cast<core::DType>(t))));
    any_peak = any_peak || peak > 0;
  }
  if (!any_peak) {
    throw core::InputError(source, device_field(i, "peak_flops_per_s"),
                           "expected a positive peak for at least one dtype, found none");
  }
  check_positive(d.memory_bandwidth_bytes_per_s, source,
                 device_field(i, "memory_bandwidth_bytes_per_s"));
  check_positive(static_cast<double>(d.memory_capacity_bytes), source,
                 device_field(i, "memory_capacity_bytes"));
  check_non_negative(d.launch_overhead_s, source, device_field(i, "launch_overhead_s"));
  check_non_negative(d.executor_overhead_s, source, device_field(i, "executor_overhead_s"));
  if (d.compute_streams < 1 || d.compute_streams > 64) {
    throw core::InputError(source, device_field(i, "compute_streams"),
                           "expected 1 .. 64 streams, found " + std::to_string(d.compute_streams));
  }
  for (int k = 0; k < core::kNumOpKinds; ++k) {
    auto kind = std::string(core::to_string(static_cast<core::OpKind>(k)));
    for (auto [array, name] :
         {std::pair{&d.compute_efficiency, "compute"}, std::pair{&d.memory_efficiency, "memory"}}) {
      double e = (*array)[static_cast<std::size_t>(k)];
      if (!(e > 0 && e <= 1)) {
        throw core::InputError(source,
                               device_field(i, "efficiency.") + std::string(name) + "." + kind,
                               "expected a fraction in (0, 1], found " + std::to_string(e));
      }
    }
  }
}

}  // namespace

ClusterSpec& ClusterSpec::with_name(std::string cluster_name) {
  name = std::move(cluster_name);
  return *this;
}
ClusterSpec& ClusterSpec::add_device(DeviceSpec device) {
  devices.push_back(std::move(device));
  return *this;
}
ClusterSpec& ClusterSpec::add_switch(std::string switch_name) {
  switches.push_back(std::move(switch_name));
  return *this;
}
ClusterSpec& ClusterSpec::add_link(LinkSpec link) {
  links.push_back(std::move(link));
  return *this;
}
ClusterSpec& ClusterSpec::add_route(RouteSpec route) {
  routes.push_back(std::move(route));
  return *this;
}

Cluster Cluster::build(ClusterSpec spec, const std::string& source) {
  Cluster c;
  if (spec.devices.empty())
    throw core::InputError(source, "devices", "expected at least one device");
  std::unordered_map<std::string, int> node_index;
  auto add_node = [&](const std::string& name, const std::string& field) {
    if (name.empty()) throw core::InputError(source, field, "empty name");
    if (!node_index.emplace(name, static_cast<int>(c.node_names_.size())).second) {
      throw core::InputError(source, field, "duplicate topology node name '" + name + "'");
    }
    c.node_names_.push_back(name);
  };
  for (std::size_t i = 0; i < spec.devices.size(); ++i) {
    validate_device(spec.devices[i], i, source);
    // The cost model charges FLOPs at the profile's compute_dtype: a device without a peak
    // for it would make the profile unusable after it loaded (found by fuzz_hardware_yaml).
    const auto dtype = static_cast<std::size_t>(spec.compute_dtype);
    if (!(spec.devices[i].peak_flops_per_s[dtype] > 0)) {
      const std::string name(core::to_string(spec.compute_dtype));
      throw core::InputError(source, device_field(i, "peak_flops_per_s.") + name,
                             "the profile's compute_dtype is " + name + " but device '" +
                                 spec.devices[i].name + "' has no positive peak for it");
    }
    add_node(spec.devices[i].name, device_field(i, "name"));
  }
  for (std::size_t i = 0; i < spec.switches.size(); ++i) {
    add_node(spec.switches[i], "switches[" + std::to_string(i) + "]");
  }
  auto find_node = [&](const std::string& name, const std::string& field) {
    auto it = node_index.find(name);
    if (it == node_index.end()) {
      throw core::InputError(source, field, "unknown device or switch '" + name + "'");
    }
    return it->second;
  };

  // Device types: devices with identical numbers share one.
  for (std::size_t i = 0; i < spec.devices.size(); ++i) {
    int type = -1;
    for (std::size_t j = 0; j < i; ++j) {
      if (spec.devices[j].same_numbers(spec.devices[i])) {
        type = c.type_index_[j];
        break;
      }
    }
    if (type < 0) type = c.num_types_++;
    c.type_index_.push_back(type);
    c.total_streams_ += spec.devices[i].compute_streams;
  }

  // Links.
  const int num_nodes = static_cast<int>(c.node_names_.size());
  std::vector<std::vector<std::pair<int, LinkId>>> adjacency(static_cast<std::size_t>(num_nodes));
  std::unordered_map<std::string, int> link_names;
  for (std::size_t l = 0; l < spec.links.size(); ++l) {
    const auto& link = spec.links[l];
    std::string field = "links[" + std::to_string(l) + "]";
    int a = find_node(link.a, field + ".a");
    int b = find_node(link.b, field + ".b");
    if (a == b) throw core::InputError(source, field, "a link joins '" + link.a + "' to itself");
    check_positive(link.bandwidth_bytes_per_s, source, field + ".bandwidth_bytes_per_s");
    check_non_negative(link.latency_s, source, field + ".latency_s");
    if (!link_names.emplace(link.name, static_cast<int>(l)).second) {
      throw core::InputError(source, field + ".name", "duplicate link name '" + link.name + "'");
    }
    c.link_a_.push_back(a);
    c.link_b_.push_back(b);
    adjacency[static_cast<std::size_t>(a)].emplace_back(b, static_cast<LinkId>(l));
    adjacency[static_cast<std::size_t>(b)].emplace_back(a, static_cast<LinkId>(l));
  }
  for (auto& adj : adjacency) std::sort(adj.begin(), adj.end());

  const auto num_devices = static_cast<int>(spec.devices.size());
  std::vector<std::vector<Hop>> routes(static_cast<std::size_t>(num_devices * num_devices));
  auto hop_cost = [&](LinkId l) {
    const auto& link = spec.links[static_cast<std::size_t>(l)];
    return link.latency_s + kRouteReferenceBytes / link.bandwidth_bytes_per_s;
  };
  // Dijkstra from each device; key (cost, hops, node) makes ties deterministic.
  for (int src = 0; src < num_devices; ++src) {
    using Key = std::tuple<double, int, int>;
    std::vector<Key> best(static_cast<std::size_t>(num_nodes),
                          Key{std::numeric_limits<double>::infinity(), 0, 0});
    std::vector<std::pair<int, LinkId>> parent(static_cast<std::size_t>(num_nodes), {-1, -1});
    std::vector<char> done(static_cast<std::size_t>(num_nodes), 0);
    std::priority_queue<Key, std::vector<Key>, std::greater<>> queue;
    best[static_cast<std::size_t>(src)] = Key{0.0, 0, src};
    queue.push(best[static_cast<std::size_t>(src)]);
    while (!queue.empty()) {
      auto [cost, hops, u] = queue.top();
      queue.pop();
      if (done[static_cast<std::size_t>(u)]) continue;
      done[static_cast<std::size_t>(u)] = 1;
      // Switches forward traffic; devices do not (no routing through a GPU's memory
      // unless a profile asks for it with an explicit route).
      if (u != src && u < num_devices) continue;
      for (auto [v, l] : adjacency[static_cast<std::size_t>(u)]) {
        Key candidate{cost + hop_cost(l), hops + 1, v};
        auto& current = best[static_cast<std::size_t>(v)];
        if (!done[static_cast<std::size_t>(v)] &&
            std::make_pair(std::get<0>(candidate), std::get<1>(candidate)) <
                std::make_pair(std::get<0>(current), std::get<1>(current))) {
          current = candidate;
          parent[static_cast<std::size_t>(v)] = {u, l};
          queue.push(candidate);
        }
      }
    }
    for (int dst = 0; dst < num_devices; ++dst) {
      if (dst == src) continue;
      if (!done[static_cast<std::size_t>(dst)]) {
        throw core::InputError(source, "links",
                               "no path between devices '" +
                                   c.node_names_[static_cast<std::size_t>(src)] + "' and '" +
                                   c.node_names_[static_cast<std::size_t>(dst)] + "'");
      }
      std::vector<Hop> hops;
      for (int v = dst; v != src;) {
        auto [u, l] = parent[static_cast<std::size_t>(v)];
        hops.push_back(Hop{l, c.link_a_[static_cast<std::size_t>(l)] == u});
        v = u;
      }
      std::reverse(hops.begin(), hops.end());
      routes[static_cast<std::size_t>(src * num_devices + dst)] = std::move(hops);
    }
  }

  // Explicit routes.
  for (std::size_t r = 0; r < spec.routes.size(); ++r) {
    const auto& route = spec.routes[r];
    std::string field = "routes[" + std::to_string(r) + "]";
    int from = find_node(route.from, field + ".from");
    int to = find_node(route.to, field + ".to");
    if (from >= num_devices)
      throw core::InputError(source, field + ".from", "'" + route.from + "' is not a device");
    if (to >= num_devices)
      throw core::InputError(source, field + ".to", "'" + route.to + "' is not a device");
    if (from == to) throw core::InputError(source, field, "a route from a device to itself");
    std::vector<int> path{from};
    for (std::size_t k = 0; k < route.via.size(); ++k) {
      path.push_back(find_node(route.via[k], field + ".via[" + std::to_string(k) + "]"));
    }
    path.push_back(to);
    std::vector<Hop> hops;
    for (std::size_t k = 0; k + 1 < path.size(); ++k) {
      int u = path[k];
      int v = path[k + 1];
      LinkId found = -1;
      for (auto [w, l] : adjacency[static_cast<std::size_t>(u)]) {
        if (w == v) {
          found = l;
          break;
        }
      }
      if (found < 0) {
        throw core::InputError(source, field + ".via",
                               "no link between '" + c.node_names_[static_cast<std::size_t>(u)] +
                                   "' and '" + c.node_names_[static_cast<std::size_t>(v)] + "'");
      }
      hops.push_back(Hop{found, c.link_a_[static_cast<std::size_t>(found)] == u});
    }
    routes[static_cast<std::size_t>(from * num_devices + to)] = std::move(hops);
  }

  c.route_offset_.push_back(0);
  for (auto& hops : routes) {
    c.route_hops_.insert(c.route_hops_.end(), hops.begin(), hops.end());
    c.route_offset_.push_back(static_cast<std::int32_t>(c.route_hops_.size()));
  }
  c.spec_ = std::move(spec);
  return c;
}

RouteView Cluster::route(DeviceId src, DeviceId dst) const {
  auto i = static_cast<std::size_t>(src * num_devices() + dst);
  const Hop* base = route_hops_.data();
  return RouteView{base + route_offset_[i], base + route_offset_[i + 1]};
}

std::string Cluster::describe_route(DeviceId src, DeviceId dst) const {
  std::string out = node_names_[static_cast<std::size_t>(src)];
  for (Hop hop : route(src, dst)) {
    int next = hop.forward ? link_b_[static_cast<std::size_t>(hop.link)]
                           : link_a_[static_cast<std::size_t>(hop.link)];
    out += " -> " + node_names_[static_cast<std::size_t>(next)];
  }
  return out;
}

DeviceId Cluster::find_device(const std::string& name) const {
  for (DeviceId d = 0; d < num_devices(); ++d) {
    if (device(d).name == name) return d;
  }
  return -1;
}

}  // namespace gopt::hardware
