#include "core/decision.h"

#include "core/errors.h"

namespace gopt::core {
namespace {

std::string op_label(NodeId v, const std::vector<std::string>* names) {
  std::string label = "op " + std::to_string(v);
  if (names && static_cast<std::size_t>(v) < names->size()) {
    label += " ('" + (*names)[static_cast<std::size_t>(v)] + "')";
  }
  return label;
}

template <typename T>
void check_length(const std::optional<std::vector<T>>& field, const char* name, NodeId n,
                  const std::string& source) {
  if (field && field->size() != static_cast<std::size_t>(n)) {
    throw InputError(source, name,
                     "expected one entry per op (" + std::to_string(n) + "), found " +
                         std::to_string(field->size()));
  }
}

}  // namespace

void validate_decision(const Decision& decision, NodeId num_nodes, DeviceId num_devices,
                       const std::string& source, const std::vector<std::string>* node_names) {
  check_length(decision.placement, "placement", num_nodes, source);
  check_length(decision.priority, "priority", num_nodes, source);
  check_length(decision.fusion, "fusion", num_nodes, source);
  if (decision.placement) {
    for (NodeId v = 0; v < num_nodes; ++v) {
      auto d = (*decision.placement)[static_cast<std::size_t>(v)];
      if (d < 0 || d >= num_devices) {
        throw InputError(source, "placement[" + std::to_string(v) + "]",
                         op_label(v, node_names) + " is placed on device " + std::to_string(d) +
                             ", expected a device in [0, " + std::to_string(num_devices) + ")");
      }
    }
  }
  if (decision.fusion) {
    for (NodeId v = 0; v < num_nodes; ++v) {
      auto f = (*decision.fusion)[static_cast<std::size_t>(v)];
      if (f < 0) {
        throw InputError(source, "fusion[" + std::to_string(v) + "]",
                         op_label(v, node_names) + " has fusion priority " + std::to_string(f) +
                             ", expected >= 0");
      }
    }
  }
}

}  // namespace gopt::core
