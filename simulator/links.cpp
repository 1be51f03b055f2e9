#include "simulator/links.h"

#include <algorithm>

namespace gopt::simulator {

Links::Links(const hardware::NetworkModel& network, std::size_t max_transfers)
    : num_devices_(network.num_devices()) {
  const std::size_t num_pairs = at(num_devices_) * at(num_devices_);
  for (DeviceId s = 0; s < num_devices_; ++s) {
    for (DeviceId t = 0; t < num_devices_; ++t) {
      route_length_ = std::max(route_length_, network.route(s, t).size());
    }
  }
  // An empty route (src == dst, never used) gets a channel of its own past the network's.
  padded_channels_.resize(num_pairs * route_length_);
  channel_free_s_.resize(at(network.num_channels()) + num_pairs);
  // The FIFO group of a route is the one of its first channel.
  std::vector<std::int32_t> first_channel_fifo(at(network.num_channels()), -1);
  routes_.resize(num_pairs);
  for (DeviceId s = 0; s < num_devices_; ++s) {
    for (DeviceId t = 0; t < num_devices_; ++t) {
      const std::size_t pair = pair_index(s, t);
      const hardware::ChannelRoute route = network.route(s, t);
      for (std::size_t k = 0; k < route_length_; ++k) {
        padded_channels_[pair * route_length_ + k] =
            route.size() == 0 ? network.num_channels() + static_cast<std::int32_t>(pair)
                              : route.begin()[k < route.size() ? k : 0];
      }
      routes_[pair] = Route{0, 0, 0, -1};
      if (route.size() == 0) continue;
      std::int32_t& fifo = first_channel_fifo[at(route.begin()[0])];
      if (fifo < 0) {
        fifo = static_cast<std::int32_t>(fifos_.size());
        fifos_.emplace_back();
      }
      routes_[pair].fifo = fifo;
    }
  }
  next_.assign(max_transfers, -1);
}

void Links::reset() {
  std::fill(channel_free_s_.begin(), channel_free_s_.end(), 0.0);
  for (Route& route : routes_) {
    route.bytes = 0;
    route.busy_s = 0;
    route.count = 0;
  }
  for (Fifo& fifo : fifos_) fifo = Fifo{};
}

Bytes Links::write_link_results(const hardware::NetworkModel& network,
                                std::vector<LinkResult>& links) const {
  for (LinkResult& link : links) link = LinkResult{};
  Bytes total = 0;
  for (DeviceId s = 0; s < num_devices_; ++s) {
    for (DeviceId t = 0; t < num_devices_; ++t) {
      const Route& route = routes_[pair_index(s, t)];
      if (route.count == 0) continue;
      total += route.bytes;
      for (const std::int32_t channel : network.route(s, t)) {
        const hardware::LinkId l = network.link_of_channel(channel);
        if (l < 0) continue;  // a channel added to the network model, not a link
        LinkResult& link = links[at(l)];
        link.bytes_moved += route.bytes;
        link.busy_s += route.busy_s;
        link.num_transfers += route.count;
      }
    }
  }
  return total;
}

}  // namespace gopt::simulator
