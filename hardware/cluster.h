// Cluster: the devices of one machine and the interconnect between them (a topology of
// devices, switches and host bridges joined by full-duplex links) with a precomputed route
// for every ordered device pair. Built from a ClusterSpec (filled by the profile loader or
// by hand in tests) and immutable afterwards; simulators index its arrays in hot loops.
//
//   ClusterSpec spec;
//   spec.add_device(DeviceSpec("gpu0", "p100")...).add_device(DeviceSpec("gpu1", "p100")...)
//       .add_switch("plx0")
//       .add_link(LinkSpec("gpu0", "plx0").bandwidth(12e9).latency(1.5e-6))
//       .add_link(LinkSpec("gpu1", "plx0").bandwidth(12e9).latency(1.5e-6));
//   Cluster cluster = Cluster::build(spec);          // throws InputError
//   for (Hop hop : cluster.route(0, 1)) use(hop.link, hop.forward);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/device_spec.h"

namespace gopt::hardware {

/// An explicit route: `from` and `to` are devices, `via` the intermediate topology nodes
/// in order. Consecutive nodes must be joined by a link.
struct RouteSpec {
  std::string from;
  std::string to;
  std::vector<std::string> via;
};

/// Everything a Cluster is built from. Defaults live here and nowhere else.
struct ClusterSpec {
  std::string name = "cluster";
  std::string description;
  Provenance provenance;
  /// Element type the cost model charges FLOPs at (graphs carry no per-op compute dtype).
  core::DType compute_dtype = core::DType::kFloat32;
  std::vector<DeviceSpec> devices;
  std::vector<std::string> switches;  ///< topology nodes that are not devices
  std::vector<LinkSpec> links;
  std::vector<RouteSpec> routes;  ///< overrides of the computed routes

  ClusterSpec& with_name(std::string cluster_name);
  ClusterSpec& add_device(DeviceSpec device);
  ClusterSpec& add_switch(std::string switch_name);
  ClusterSpec& add_link(LinkSpec link);
  ClusterSpec& add_route(RouteSpec route);
};

/// One hop of a route: a link and its direction (forward = from its `a` to its `b` end).
struct Hop {
  LinkId link = 0;
  bool forward = true;
  /// The directed resource this hop occupies: 2*link for a->b, 2*link+1 for b->a.
  [[nodiscard]] std::int32_t channel() const { return 2 * link + (forward ? 0 : 1); }
};

/// A read-only view of a route's hops.
struct RouteView {
  const Hop* first = nullptr;
  const Hop* last = nullptr;
  [[nodiscard]] const Hop* begin() const { return first; }
  [[nodiscard]] const Hop* end() const { return last; }
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(last - first); }
  [[nodiscard]] bool empty() const { return first == last; }
};

class Cluster {
 public:
  /// Validates the spec and computes routes. Throws InputError naming `source` and the
  /// field for: no devices, a duplicate name, a non-positive bandwidth or capacity, a
  /// negative latency or overhead, an efficiency outside (0, 1], a link or route naming an
  /// unknown node, a route whose hops are not links, or two devices with no path.
  ///
  /// Computed routes are shortest paths (Dijkstra) under the per-hop cost
  /// `latency_s + 1 MiB / bandwidth`, ties broken towards fewer hops and then lower node
  /// index, so they are deterministic. Explicit `routes` replace the computed route for
  /// their (from, to) pair only (the reverse direction keeps its own).
  [[nodiscard]] static Cluster build(ClusterSpec spec, const std::string& source = "");

  [[nodiscard]] const std::string& name() const { return spec_.name; }
  [[nodiscard]] const ClusterSpec& spec() const { return spec_; }
  [[nodiscard]] const Provenance& provenance() const { return spec_.provenance; }
  [[nodiscard]] core::DType compute_dtype() const { return spec_.compute_dtype; }

  [[nodiscard]] DeviceId num_devices() const { return static_cast<DeviceId>(spec_.devices.size()); }
  [[nodiscard]] const DeviceSpec& device(DeviceId d) const {
    return spec_.devices[static_cast<std::size_t>(d)];
  }
  /// Devices with identical numbers share a type index in [0, num_device_types()).
  [[nodiscard]] int num_device_types() const { return num_types_; }
  [[nodiscard]] int device_type_index(DeviceId d) const {
    return type_index_[static_cast<std::size_t>(d)];
  }
  /// Sum of compute streams over all devices.
  [[nodiscard]] int total_compute_streams() const { return total_streams_; }

  [[nodiscard]] LinkId num_links() const { return static_cast<LinkId>(spec_.links.size()); }
  [[nodiscard]] const LinkSpec& link(LinkId l) const {
    return spec_.links[static_cast<std::size_t>(l)];
  }
  /// Topology nodes: devices first (node i = device i), then switches.
  [[nodiscard]] int num_topology_nodes() const { return static_cast<int>(node_names_.size()); }
  [[nodiscard]] const std::string& topology_node_name(int node) const {
    return node_names_[static_cast<std::size_t>(node)];
  }
  [[nodiscard]] int link_end_a(LinkId l) const { return link_a_[static_cast<std::size_t>(l)]; }
  [[nodiscard]] int link_end_b(LinkId l) const { return link_b_[static_cast<std::size_t>(l)]; }

  /// The hops from device `src` to device `dst` (empty when src == dst).
  [[nodiscard]] RouteView route(DeviceId src, DeviceId dst) const;
  /// "gpu0 -> plx0 -> gpu1", for reports.
  [[nodiscard]] std::string describe_route(DeviceId src, DeviceId dst) const;

  /// The device named `name`, or -1.
  [[nodiscard]] DeviceId find_device(const std::string& name) const;

 private:
  Cluster() = default;

  ClusterSpec spec_;
  std::vector<std::string> node_names_;
  std::vector<int> link_a_;
  std::vector<int> link_b_;
  std::vector<int> type_index_;
  int num_types_ = 0;
  int total_streams_ = 0;
  std::vector<std::int32_t> route_offset_;  // num_devices^2 + 1
  std::vector<Hop> route_hops_;
};

}  // namespace gopt::hardware
