#include "simulator/decision_io.h"

#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/errors.h"
#include "core/graph_io.h"
#include "core/json_parse.h"

namespace gopt::simulator {
namespace {

using nlohmann::json;

std::string type_name(const json& j) { return j.type_name(); }

std::int32_t to_int32(const json& value, const std::string& source, const std::string& field) {
  if (!value.is_number_integer()) {
    throw core::InputError(source, field,
                           "expected an integer, found " + type_name(value) + " " + value.dump());
  }
  // Unsigned first: get<int64_t>() of 18446744073709551615 is -1.
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > INT32_MAX) {
    throw core::InputError(source, field, "value " + value.dump() + " is out of range");
  }
  auto v = value.get<std::int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) {
    throw core::InputError(source, field, "value " + std::to_string(v) + " is out of range");
  }
  return static_cast<std::int32_t>(v);
}

std::int32_t device_value(const json& value, const std::string& source, const std::string& field,
                          const hardware::Cluster& cluster) {
  if (value.is_string()) {
    auto d = cluster.find_device(value.get<std::string>());
    if (d < 0) {
      std::string names;
      for (core::DeviceId i = 0; i < cluster.num_devices(); ++i) {
        names += (i ? ", " : "") + cluster.device(i).name;
      }
      throw core::InputError(source, field,
                             "unknown device '" + value.get<std::string>() + "' (cluster '" +
                                 cluster.name() + "' has " + names + ")");
    }
    return d;
  }
  return to_int32(value, source, field);
}

template <typename Convert>
std::vector<std::int32_t> read_field(const json& root, const char* key, const std::string& source,
                                     const core::CompiledGraph& graph, std::int32_t default_value,
                                     Convert convert) {
  const json& field = root.at(key);
  const auto n = static_cast<std::size_t>(graph.num_nodes());
  std::vector<std::int32_t> out(n, default_value);
  if (field.is_array()) {
    if (field.size() != n) {
      throw core::InputError(source, key,
                             "expected one entry per op of graph '" + graph.name() + "' (" +
                                 std::to_string(n) + "), found " + std::to_string(field.size()));
    }
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = convert(field[i], std::string(key) + "[" + std::to_string(i) + "]");
    }
  } else if (field.is_object()) {
    std::unordered_map<std::string, core::NodeId> index;
    for (core::NodeId v = 0; v < graph.num_nodes(); ++v) {
      index.emplace(graph.node_names()[static_cast<std::size_t>(v)], v);
    }
    for (const auto& [name, value] : field.items()) {
      auto it = index.find(name);
      if (it == index.end()) {
        throw core::InputError(source, std::string(key) + "." + name,
                               "no op named '" + name + "' in graph '" + graph.name() + "'");
      }
      out[static_cast<std::size_t>(it->second)] = convert(value, std::string(key) + "." + name);
    }
  } else {
    throw core::InputError(source, key,
                           "expected an array (one entry per op) or an object (by op name), "
                           "found " +
                               type_name(field));
  }
  return out;
}

}  // namespace

core::Decision parse_decision_json(std::string_view text, const std::string& source,
                                   const core::CompiledGraph& graph,
                                   const hardware::Cluster& cluster) {
  json root = core::parse_json_document(text, source);
  if (!root.is_object()) {
    throw core::InputError(source, "", "expected a JSON object, found " + type_name(root));
  }
  for (const auto& [key, value] : root.items()) {
    if (key != "format" && key != "version" && key != "graph" && key != "placement" &&
        key != "priority" && key != "fusion" && key != "comment") {
      throw core::InputError(source, key,
                             "unknown field; expected format, version, graph, placement, "
                             "priority, fusion or comment");
    }
  }
  if (root.contains("format") && root["format"] != std::string(kDecisionFormatName)) {
    throw core::InputError(
        source, "format",
        "expected '" + std::string(kDecisionFormatName) + "', found " + root["format"].dump());
  }
  if (root.contains("version") && root["version"] != kDecisionFormatVersion) {
    throw core::InputError(source, "version",
                           "this build reads version " + std::to_string(kDecisionFormatVersion) +
                               ", found " + root["version"].dump());
  }
  core::Decision decision;
  if (root.contains("placement")) {
    decision.placement = read_field(root, "placement", source, graph, 0,
                                    [&](const json& v, const std::string& field) {
                                      return device_value(v, source, field, cluster);
                                    });
  }
  auto plain = [&](const json& v, const std::string& field) { return to_int32(v, source, field); };
  if (root.contains("priority"))
    decision.priority = read_field(root, "priority", source, graph, 0, plain);
  if (root.contains("fusion"))
    decision.fusion = read_field(root, "fusion", source, graph, 0, plain);
  core::validate_decision(decision, graph.num_nodes(), cluster.num_devices(), source,
                          &graph.node_names());
  return decision;
}

core::Decision read_decision_file(const std::filesystem::path& path,
                                  const core::CompiledGraph& graph,
                                  const hardware::Cluster& cluster) {
  return parse_decision_json(core::read_text_file(path), path.string(), graph, cluster);
}

std::string to_decision_json(const core::Decision& decision, const core::CompiledGraph& graph,
                             bool by_name) {
  nlohmann::ordered_json j;
  j["format"] = kDecisionFormatName;
  j["version"] = kDecisionFormatVersion;
  j["graph"] = graph.name();
  auto put = [&](const char* key, const std::optional<std::vector<std::int32_t>>& field) {
    if (!field) return;
    if (!by_name) {
      j[key] = *field;
      return;
    }
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (std::size_t v = 0; v < field->size(); ++v) obj[graph.node_names()[v]] = (*field)[v];
    j[key] = std::move(obj);
  };
  put("placement", decision.placement);
  put("priority", decision.priority);
  put("fusion", decision.fusion);
  return j.dump(1);
}

std::vector<core::DeviceId> round_robin_placement(const core::CompiledGraph& graph,
                                                  core::DeviceId num_devices) {
  std::vector<core::DeviceId> placement(static_cast<std::size_t>(graph.num_nodes()));
  for (core::NodeId v = 0; v < graph.num_nodes(); ++v) {
    placement[static_cast<std::size_t>(v)] = v % num_devices;
  }
  return placement;
}

}  // namespace gopt::simulator
