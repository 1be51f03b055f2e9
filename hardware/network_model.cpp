#include "hardware/network_model.h"

#include <limits>
#include <stdexcept>
#include <string>

#include "core/errors.h"
#include "hardware/cost_model.h"

namespace gopt::hardware {

RouteCost compose_route(RouteView hops, const CostModel& cost_model) {
  RouteCost cost;
  for (Hop hop : hops) {
    const LinkCost link = cost_model.link_cost(hop.link);
    cost.add_hop(link.latency_s, link.seconds_per_byte);
  }
  return cost;
}

NetworkModel::NetworkModel(const Cluster& cluster, const CostModel& cost_model)
    : num_devices_(cluster.num_devices()), num_links_(cluster.num_links()) {
  for (LinkId l = 0; l < num_links_; ++l) {
    const LinkCost cost = cost_model.link_cost(l);
    // Transfers then never end before they start, which the simulator relies on.
    GOPT_ASSERT(cost.latency_s >= 0 && cost.seconds_per_byte >= 0 &&
                    cost.latency_s < std::numeric_limits<Seconds>::infinity() &&
                    cost.seconds_per_byte < std::numeric_limits<double>::infinity(),
                "cost model returned a negative or infinite link cost");
    // Both directions of a link cost the same (LinkCost is per direction).
    channel_cost_.push_back(RouteCost{cost.latency_s, cost.seconds_per_byte});
    channel_cost_.push_back(RouteCost{cost.latency_s, cost.seconds_per_byte});
  }
  const auto num_pairs =
      static_cast<std::size_t>(num_devices_) * static_cast<std::size_t>(num_devices_);
  routes_.resize(num_pairs);
  costs_.resize(num_pairs);
  for (DeviceId s = 0; s < num_devices_; ++s) {
    for (DeviceId t = 0; t < num_devices_; ++t) {
      for (Hop hop : cluster.route(s, t)) {
        routes_[pair(s, t)].push_back(hop.channel());
        const RouteCost& hop_cost = channel_cost_[static_cast<std::size_t>(hop.channel())];
        costs_[pair(s, t)].add_hop(hop_cost.latency_s, hop_cost.seconds_per_byte);
      }
      GOPT_ASSERT(s == t || !routes_[pair(s, t)].empty(), "a route between two devices has no hop");
    }
  }
}

std::int32_t NetworkModel::add_channel(Seconds latency_s, double seconds_per_byte) {
  if (!(latency_s >= 0 && seconds_per_byte >= 0 &&
        latency_s < std::numeric_limits<Seconds>::infinity() &&
        seconds_per_byte < std::numeric_limits<double>::infinity())) {
    throw std::invalid_argument(
        "NetworkModel::add_channel: expected a finite latency and "
        "per-byte cost >= 0, got " +
        std::to_string(latency_s) + " s and " + std::to_string(seconds_per_byte) + " s/B");
  }
  channel_cost_.push_back(RouteCost{latency_s, seconds_per_byte});
  return num_channels() - 1;
}

void NetworkModel::add_hop(DeviceId src, DeviceId dst, std::int32_t channel) {
  if (src < 0 || src >= num_devices_ || dst < 0 || dst >= num_devices_ || src == dst ||
      channel < 0 || channel >= num_channels()) {
    throw std::invalid_argument("NetworkModel::add_hop: expected two distinct devices in [0, " +
                                std::to_string(num_devices_) + ") and a channel in [0, " +
                                std::to_string(num_channels()) + "), got " + std::to_string(src) +
                                " -> " + std::to_string(dst) + " over channel " +
                                std::to_string(channel));
  }
  routes_[pair(src, dst)].push_back(channel);
  const RouteCost& hop_cost = channel_cost_[static_cast<std::size_t>(channel)];
  costs_[pair(src, dst)].add_hop(hop_cost.latency_s, hop_cost.seconds_per_byte);
}

}  // namespace gopt::hardware
