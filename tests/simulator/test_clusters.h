// A switch cluster for the resource tests: `num_devices` devices, each joined to one switch
// by its own link with the given bandwidth and latency (every route: uplink, downlink).
#pragma once

#include <string>

#include "hardware/cluster.h"
#include "tests/simulator/test_support.h"

namespace gopt::simulator::testing {

inline hardware::Cluster switch_cluster(int num_devices, double bandwidth_bytes_per_s,
                                        double latency_s = 0) {
  hardware::ClusterSpec spec;
  spec.with_name("switch");
  spec.add_switch("sw");
  for (int d = 0; d < num_devices; ++d) {
    spec.add_device(test_device("gpu" + std::to_string(d)));
    spec.add_link(hardware::LinkSpec("gpu" + std::to_string(d), "sw")
                      .bandwidth(bandwidth_bytes_per_s)
                      .latency(latency_s));
  }
  return hardware::Cluster::build(spec, "test");
}

}  // namespace gopt::simulator::testing
