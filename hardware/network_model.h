// NetworkModel: how data moves between devices, in one place. A transfer from one device
// to another holds every directed channel of its route at once (cut-through): the hops'
// latencies add and the slowest hop sets the rate. The simulator, CostModel::transfer_time
// and the baselines that estimate communication all compose routes through here.
//
//   RooflineCostModel cost(cluster);
//   NetworkModel network(cluster, cost);                 // every route, composed once
//   Seconds t = network.transfer_time(1 << 20, /*src=*/0, /*dst=*/1);
//   for (std::int32_t c : network.route(0, 1)) use(c);   // the channels it holds
#pragma once

#include <cstdint>
#include <vector>

#include "hardware/cluster.h"

namespace gopt::hardware {

class CostModel;
struct LinkCost;

/// The cost of a whole route: `latency_s + bytes * seconds_per_byte`.
struct RouteCost {
  Seconds latency_s = 0;        ///< summed over the hops
  double seconds_per_byte = 0;  ///< the slowest hop's

  /// Adds one hop: this is the composition rule (latencies add, the slowest hop sets the
  /// rate, the whole route is held), and the only place it is written.
  RouteCost& add_hop(Seconds hop_latency_s, double hop_seconds_per_byte) {
    latency_s += hop_latency_s;
    seconds_per_byte =
        seconds_per_byte < hop_seconds_per_byte ? hop_seconds_per_byte : seconds_per_byte;
    return *this;
  }
  /// Uncontended time to send `bytes` over the route, in seconds.
  [[nodiscard]] Seconds transfer_time_s(Bytes bytes) const {
    return latency_s + static_cast<double>(bytes) * seconds_per_byte;
  }
};

/// The composed cost of `hops` under the link costs of `cost_model`.
[[nodiscard]] RouteCost compose_route(RouteView hops, const CostModel& cost_model);

/// The channels a route holds, in hop order.
struct ChannelRoute {
  const std::int32_t* first = nullptr;
  const std::int32_t* last = nullptr;
  [[nodiscard]] const std::int32_t* begin() const { return first; }
  [[nodiscard]] const std::int32_t* end() const { return last; }
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(last - first); }
};

/// Every route of a cluster as the directed channels it holds (channel 2*l is link l from
/// its `a` end to its `b` end, 2*l+1 the other direction) with its composed cost. Built
/// once per (cluster, cost model); immutable while simulators use it.
///
/// A researcher's link model extends it with channels that are not links: a shared
/// NVSwitch fabric, say, is one channel with the switch's aggregate bandwidth that every
/// route through the switch also holds (see docs/simulator.md):
///
///   NetworkModel network(cluster, cost);
///   auto fabric = network.add_channel(/*latency_s=*/0, /*seconds_per_byte=*/1 / 900e9);
///   for (src, dst through the switch) network.add_hop(src, dst, fabric);
///   Simulator sim(graph, cluster, cost, network);
class NetworkModel {
 public:
  /// Composes every route of `cluster` from the link costs of `cost_model`. Neither needs
  /// to outlive the model: routes and costs are copied. A negative or infinite link cost
  /// is an internal error (the CostModel contract).
  NetworkModel(const Cluster& cluster, const CostModel& cost_model);

  [[nodiscard]] DeviceId num_devices() const { return num_devices_; }
  /// Links' channels (2 per link) and the channels added by add_channel().
  [[nodiscard]] std::int32_t num_channels() const {
    return static_cast<std::int32_t>(channel_cost_.size());
  }
  /// The link a channel belongs to, -1 for an added channel.
  [[nodiscard]] LinkId link_of_channel(std::int32_t channel) const {
    const auto c = static_cast<std::size_t>(channel);
    return c < 2 * static_cast<std::size_t>(num_links_) ? static_cast<LinkId>(channel / 2) : -1;
  }

  /// The channels a transfer from `src` to `dst` holds (empty when src == dst).
  [[nodiscard]] ChannelRoute route(DeviceId src, DeviceId dst) const {
    const auto& r = routes_[pair(src, dst)];
    return ChannelRoute{r.data(), r.data() + r.size()};
  }
  /// Its composed cost.
  [[nodiscard]] const RouteCost& route_cost(DeviceId src, DeviceId dst) const {
    return costs_[pair(src, dst)];
  }
  /// Uncontended time to send `bytes` from `src` to `dst`, in seconds; 0 when src == dst.
  [[nodiscard]] Seconds transfer_time(Bytes bytes, DeviceId src, DeviceId dst) const {
    return costs_[pair(src, dst)].transfer_time_s(bytes);
  }

  /// A new channel that is not a link (a shared fabric, a host bridge), with the cost of
  /// one hop over it; returns its index. Routes hold it once add_hop() puts it on them.
  std::int32_t add_channel(Seconds latency_s, double seconds_per_byte);
  /// Appends `channel` to the route from `src` to `dst` (src != dst) and recomposes its
  /// cost. Throws std::invalid_argument for an unknown channel or device.
  void add_hop(DeviceId src, DeviceId dst, std::int32_t channel);

 private:
  [[nodiscard]] std::size_t pair(DeviceId src, DeviceId dst) const {
    return static_cast<std::size_t>(src) * static_cast<std::size_t>(num_devices_) +
           static_cast<std::size_t>(dst);
  }

  DeviceId num_devices_ = 0;
  LinkId num_links_ = 0;
  std::vector<RouteCost> channel_cost_;            // one hop over each channel
  std::vector<std::vector<std::int32_t>> routes_;  // [src * D + dst]
  std::vector<RouteCost> costs_;                   // [src * D + dst]
};

}  // namespace gopt::hardware
