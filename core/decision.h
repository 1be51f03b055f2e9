// Decision: what an optimizer decides for a graph on a cluster, and its validation.
// The simulator and the real backends consume it; every agent produces it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"

namespace gopt::core {

/// Per-op decisions, indexed by NodeId. Every field is optional; an absent field takes
/// its default:
/// - placement[op]: the device that runs op. Default: every op on device 0 (TensorFlow's
///   single-GPU default).
/// - priority[op]: among the ready ops of one device, higher runs first; ties run in
///   topological order. Default: topological FIFO, as TensorFlow's executor.
/// - fusion[op]: fusion priority, >= 0. 0 means "never fuse this op"; producer->consumer
///   pairs on one device are merged in decreasing priority by the simulator's documented
///   procedure. Default: no fusion.
struct Decision {
  std::optional<std::vector<DeviceId>> placement;
  std::optional<std::vector<std::int32_t>> priority;
  std::optional<std::vector<std::int32_t>> fusion;

  /// Device of op `v` under this decision (0 when placement is absent).
  [[nodiscard]] DeviceId device_of(NodeId v) const {
    return placement ? (*placement)[static_cast<std::size_t>(v)] : 0;
  }
};

/// Checks a decision against a graph of `num_nodes` ops and a cluster of `num_devices`
/// devices: every present field has one entry per op, devices are in range and fusion
/// priorities are non-negative. Throws InputError naming `source`, the field and the
/// first bad op (by name when `node_names` is given).
void validate_decision(const Decision& decision, NodeId num_nodes, DeviceId num_devices,
                       const std::string& source = "",
                       const std::vector<std::string>* node_names = nullptr);

}  // namespace gopt::core
