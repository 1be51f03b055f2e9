#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_support.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/compiled_graph.h"
#include "core/errors.h"
#include "core/graph.h"
#include "core/graph_io.h"
#include "core/graph_summary.h"
#include "datasets/onnx_importer.h"
#include "hardware/cluster.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/decision_io.h"
#include "simulator/simulator.h"

namespace gopt::fuzz {
namespace {

bool size_ok(core::Bytes b) { return b >= 0 && b <= core::kMaxBytes; }

// The documented invariants of a completed graph (docs/graph-format.md "Limits").
void check_graph(const core::Graph& g) {
  core::Bytes totals[5] = {0, 0, 0, 0, 0};
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
    const auto& n = g.node(v);
    require(std::isfinite(n.flops) && n.flops >= 0 && n.flops <= core::kMaxFlops,
            "node '" + n.name + "': flops out of range");
    require(size_ok(n.bytes_read) && size_ok(n.bytes_written) && size_ok(n.output_bytes) &&
                size_ok(n.param_bytes),
            "node '" + n.name + "': a size outside [0, kMaxBytes]");
    for (const auto& shape : n.output_shapes) {
      require(core::checked_num_elements(shape).has_value(),
              "node '" + n.name + "': a shape whose element count is not representable");
    }
    totals[0] += n.bytes_read;
    totals[1] += n.bytes_written;
    totals[2] += n.output_bytes;
    totals[3] += n.param_bytes;
  }
  g.for_each_edge([&](core::NodeId, core::NodeId, const core::EdgeAttrs& e) {
    require(size_ok(e.bytes), "an edge size outside [0, kMaxBytes]");
    totals[4] += e.bytes;
  });
  for (auto t : totals) require(size_ok(t), "a graph total above kMaxBytes");
}

const hardware::Cluster& two_devices() {
  static const hardware::Cluster cluster = hardware::load_profile("p100x2_pcie");
  return cluster;
}

// Compiles, summarizes and simulates a graph accepted by a parser: none of it may fail.
void check_downstream(const core::Graph& graph) {
  const auto compiled = core::CompiledGraph::compile(graph);
  const auto summary = core::summarize(compiled);
  require(summary.total_output_bytes >= 0 && summary.total_edge_bytes >= 0 &&
              summary.total_param_bytes >= 0 && std::isfinite(summary.total_flops),
          "graph summary with a negative or non-finite total");
  const auto& cluster = two_devices();
  hardware::RooflineCostModel cost(cluster);
  core::Decision decision;
  decision.placement = simulator::round_robin_placement(compiled, cluster.num_devices());
  const auto result = simulator::simulate_once(compiled, cluster, cost, decision);
  require(result.bytes_moved >= 0, "simulation with negative bytes_moved");
  require(std::isfinite(result.step_time_s) && result.step_time_s >= 0,
          "simulation with a non-finite step time");
  for (const auto& d : result.devices) {
    require(d.peak_memory_bytes >= 0 && d.param_bytes >= 0, "negative device memory");
  }
  for (const auto& l : result.links) require(l.bytes_moved >= 0, "negative link bytes_moved");
}

}  // namespace

Outcome check_graph_json(const std::uint8_t* data, std::size_t size) {
  core::Graph graph;
  Outcome outcome =
      accept_or_reject([&] { graph = core::parse_graph_json(as_text(data, size), "fuzz.json"); });
  if (outcome == Outcome::kRejected) return outcome;
  check_graph(graph);
  // What gopt writes it must read back, identically.
  const core::Graph again = core::parse_graph_json(core::to_graph_json(graph), "written.json");
  require(core::same_graph(graph, again), "the graph changes when written and read back");
  check_downstream(graph);
  return outcome;
}

Outcome check_hardware_yaml(const std::uint8_t* data, std::size_t size) {
  std::optional<hardware::Cluster> built;
  Outcome outcome = accept_or_reject([&] {
    built = hardware::Cluster::build(hardware::parse_profile_yaml(as_text(data, size), "fuzz.yaml"),
                                     "fuzz.yaml");
  });
  if (outcome == Outcome::kRejected) return outcome;
  const hardware::Cluster& cluster = *built;
  require(cluster.num_devices() >= 1, "a cluster without devices");
  for (core::DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const auto& spec = cluster.device(d);
    require(spec.memory_capacity_bytes > 0, "a device without memory");
    require(
        std::isfinite(spec.memory_bandwidth_bytes_per_s) && spec.memory_bandwidth_bytes_per_s > 0,
        "a device with a non-positive or non-finite memory bandwidth");
  }
  for (hardware::LinkId l = 0; l < cluster.num_links(); ++l) {
    const auto& link = cluster.link(l);
    require(std::isfinite(link.bandwidth_bytes_per_s) && link.bandwidth_bytes_per_s > 0 &&
                std::isfinite(link.latency_s) && link.latency_s >= 0,
            "a link with a bad bandwidth or latency");
  }
  // A small graph must simulate on every accepted profile.
  core::GraphBuilder b("probe");
  auto x = b.add("x", "Placeholder").output({64, 64}).id();
  auto y =
      b.add("y", "MatMul").output({64, 64}).flops(2.0 * 64 * 64 * 64).param_bytes(4 * 64 * 64).id();
  b.connect(x, y);
  const auto compiled = core::CompiledGraph::compile(std::move(b).build());
  hardware::RooflineCostModel cost(cluster);
  core::Decision decision;
  decision.placement = simulator::round_robin_placement(compiled, cluster.num_devices());
  const auto result = simulator::simulate_once(compiled, cluster, cost, decision);
  require(std::isfinite(result.step_time_s) && result.step_time_s >= 0,
          "a non-finite step time on an accepted profile");
  return outcome;
}

Outcome check_decision_json(const std::uint8_t* data, std::size_t size) {
  static const core::CompiledGraph graph = core::CompiledGraph::compile(
      core::read_graph_file(std::string(GOPT_SOURCE_DIR) + "/datasets/graphs/mlp_tiny.json"));
  const auto& cluster = two_devices();
  core::Decision decision;
  Outcome outcome = accept_or_reject([&] {
    decision = simulator::parse_decision_json(as_text(data, size), "fuzz.json", graph, cluster);
  });
  if (outcome == Outcome::kRejected) return outcome;
  hardware::RooflineCostModel cost(cluster);
  const auto result = simulator::simulate_once(graph, cluster, cost, decision);
  require(std::isfinite(result.step_time_s) && result.step_time_s >= 0 && result.bytes_moved >= 0,
          "an accepted decision that simulates to a bad result");
  // What gopt writes it must read back, identically.
  for (bool by_name : {false, true}) {
    auto again = simulator::parse_decision_json(
        simulator::to_decision_json(decision, graph, by_name), "written.json", graph, cluster);
    require(again.placement == decision.placement && again.priority == decision.priority &&
                again.fusion == decision.fusion,
            "the decision changes when written and read back");
  }
  return outcome;
}

Outcome check_onnx_model(const std::uint8_t* data, std::size_t size) {
  Outcome first = Outcome::kRejected;
  for (bool training : {false, true}) {
    datasets::OnnxImportOptions options;
    options.with_batch(training ? 4 : 0).with_training(training);
    core::Graph graph;
    Outcome outcome = accept_or_reject([&] {
      graph = datasets::import_onnx_bytes(as_text(data, size), "fuzz.onnx", options).graph;
    });
    if (!training) first = outcome;
    if (outcome == Outcome::kRejected) continue;
    check_graph(graph);
    check_downstream(graph);
  }
  return first;
}

}  // namespace gopt::fuzz
