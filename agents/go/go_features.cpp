#include "agents/go/go_features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agents/placement_utils.h"
#include "core/op_kind.h"

namespace gopt::agents::go {

using core::NodeId;

namespace {

// What groups an op into a decision unit (GraphTensors::unit): its scope unit
// (scope_unit_key), the same key with kind 3 or 4 for the weight gradients split off a
// unit of kind 0 or 1 (split_weight_gradients), or {2, "", block, -1} for an op whose unit
// is too small.
using UnitKey = ScopeUnitKey;
constexpr int kWeightGradientKind = 3;

// make_graph_tensors' `split_below`: when fewer than `split_below` units have kMinUnitOps
// ops or more, each unit whose weight gradients (weight_gradient_tail) and other ops both
// number at least kMinUnitOps becomes two, its weight gradients one of them. `keys` by
// position, `count` ops per key; both updated.
void split_weight_gradients(const core::CompiledGraph& graph, const std::vector<NodeId>& order,
                            std::int64_t split_below, std::vector<UnitKey>& keys,
                            std::map<UnitKey, std::int64_t>& count) {
  const auto large = std::count_if(count.begin(), count.end(),
                                   [](const auto& unit) { return unit.second >= kMinUnitOps; });
  if (large >= split_below) return;
  const std::vector<char> tail = weight_gradient_tail(graph);
  const auto in_tail = [&](std::size_t p) { return tail[static_cast<std::size_t>(order[p])] != 0; };
  std::map<UnitKey, std::int64_t> gradients;
  for (std::size_t p = 0; p < keys.size(); ++p) {
    if (in_tail(p)) ++gradients[keys[p]];
  }
  for (std::size_t p = 0; p < keys.size(); ++p) {
    if (!in_tail(p)) continue;
    const std::int64_t split = gradients[keys[p]];
    if (split < kMinUnitOps || count[keys[p]] - split < kMinUnitOps) continue;
    std::get<0>(keys[p]) += kWeightGradientKind;
  }
  count.clear();
  for (const auto& key : keys) ++count[key];
}

void add_units(const core::CompiledGraph& graph, const std::vector<NodeId>& order,
               std::int64_t split_below, GraphTensors& t) {
  const auto n = static_cast<std::int64_t>(order.size());
  std::vector<UnitKey> keys;
  keys.reserve(order.size());
  std::map<UnitKey, std::int64_t> count;
  for (const NodeId v : order) ++count[keys.emplace_back(scope_unit_key(graph, v))];
  if (split_below > 0) split_weight_gradients(graph, order, split_below, keys, count);
  // Small units become blocks of consecutive positions: at most 64 ops, at least 64 blocks.
  const std::int64_t block = std::clamp<std::int64_t>(n / 64, 1, 64);
  std::map<UnitKey, std::int64_t> ids;
  t.unit = torch::empty({n}, torch::kLong);
  auto unit = t.unit.accessor<std::int64_t, 1>();
  for (std::int64_t p = 0; p < n; ++p) {
    auto& key = keys[static_cast<std::size_t>(p)];
    if (count[key] < kMinUnitOps) key = {2, std::string(), p / block, -1};
    unit[p] = ids.emplace(key, static_cast<std::int64_t>(ids.size())).first->second;
  }
  t.num_units = static_cast<std::int64_t>(ids.size());
  // Each unit's row: its first position whose action decides (not a colocated follower).
  std::vector<std::int64_t> rows(static_cast<std::size_t>(t.num_units), -1);
  std::vector<float> sizes(static_cast<std::size_t>(t.num_units), 0.0F);
  auto decides = t.action_mask.accessor<float, 1>();
  for (std::int64_t p = 0; p < n; ++p) {
    const auto u = static_cast<std::size_t>(unit[p]);
    sizes[u] += 1.0F;
    if (rows[u] < 0 || (decides[rows[u]] == 0.0F && decides[p] != 0.0F)) rows[u] = p;
  }
  t.unit_rows = torch::tensor(rows, torch::kLong);
  t.unit_sizes = torch::tensor(sizes, torch::kFloat).unsqueeze(1);
}

// A depth-first topological order (Kahn's algorithm with a stack): a producer's consumers
// follow it as soon as they are ready, so chains of dependent ops sit at consecutive
// positions, where segments attend to each other and exploration blocks share noise. (The
// compiled graph's FIFO order interleaves independent branches.) `rank`: each node's
// position.
void depth_first_order(const core::CompiledGraph& graph, std::vector<NodeId>& order,
                       std::vector<NodeId>& rank) {
  const auto n = static_cast<std::size_t>(graph.num_nodes());
  order.reserve(n);
  rank.assign(n, 0);
  std::vector<core::EdgeIndex> waiting(n);
  std::vector<NodeId> stack;
  for (NodeId v = graph.num_nodes() - 1; v >= 0; --v) {
    waiting[static_cast<std::size_t>(v)] = graph.in_degree(v);
    if (graph.in_degree(v) == 0) stack.push_back(v);
  }
  while (!stack.empty()) {
    const NodeId v = stack.back();
    stack.pop_back();
    rank[static_cast<std::size_t>(v)] = static_cast<NodeId>(order.size());
    order.push_back(v);
    for (auto e = graph.out_end(v); e-- > graph.out_begin(v);) {
      const NodeId w = graph.out_target(e);
      if (--waiting[static_cast<std::size_t>(w)] == 0) stack.push_back(w);
    }
  }
}

// The action mask: 0 for the ops that follow the first op of their colocation group.
void add_action_mask(const core::CompiledGraph& graph, const std::vector<NodeId>& rank,
                     GraphTensors& t) {
  t.action_mask = torch::ones({t.num_nodes});
  auto mask = t.action_mask.accessor<float, 1>();
  std::vector<char> group_seen(graph.colocation_groups().size(), 0);
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    auto g = graph.colocation()[static_cast<std::size_t>(v)];
    if (g < 0) continue;
    auto& seen = group_seen[static_cast<std::size_t>(g)];
    if (seen) mask[rank[static_cast<std::size_t>(v)]] = 0.0F;
    seen = 1;
  }
}

// By position: the node, its kind, its inverse degrees, its layer and (top-level scope,
// layer) group.
void add_positions(const core::CompiledGraph& graph, const std::vector<NodeId>& order,
                   GraphTensors& t) {
  const std::int64_t n = t.num_nodes;
  t.kinds = torch::empty({n}, torch::kLong);
  t.order = torch::empty({n}, torch::kLong);
  t.inv_in_deg = torch::empty({n, 1});
  t.inv_out_deg = torch::empty({n, 1});
  t.layer = torch::empty({n}, torch::kLong);
  auto layer = t.layer.accessor<std::int64_t, 1>();
  t.scope_layer = torch::full({n}, -1, torch::kLong);
  auto scope_layer = t.scope_layer.accessor<std::int64_t, 1>();
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> scope_layer_ids;
  auto kinds = t.kinds.accessor<std::int64_t, 1>();
  auto ord = t.order.accessor<std::int64_t, 1>();
  auto in_deg = t.inv_in_deg.accessor<float, 2>();
  auto out_deg = t.inv_out_deg.accessor<float, 2>();
  std::int32_t max_layer = -1;  // -1: no op has a layer
  for (auto l : graph.layer()) max_layer = std::max(max_layer, l);
  t.num_layers = max_layer + 1;
  for (std::int64_t p = 0; p < n; ++p) {
    const NodeId v = order[static_cast<std::size_t>(p)];
    const auto i = static_cast<std::size_t>(v);
    ord[p] = v;
    layer[p] = graph.layer()[i];
    if (graph.layer()[i] >= 0) {
      std::string name = graph.node_names()[i];
      if (name.rfind("gradients/", 0) == 0) name.erase(0, std::string("gradients/").size());
      const auto key = std::make_pair(name.substr(0, name.find('/')), graph.layer()[i]);
      scope_layer[p] =
          scope_layer_ids.emplace(key, static_cast<std::int64_t>(scope_layer_ids.size()))
              .first->second;
    }
    kinds[p] = static_cast<std::int64_t>(graph.kind()[i]);
    in_deg[p][0] = 1.0F / static_cast<float>(std::max<std::int64_t>(1, graph.in_degree(v)));
    out_deg[p][0] = 1.0F / static_cast<float>(std::max<std::int64_t>(1, graph.out_degree(v)));
  }
  t.num_scope_layers = static_cast<std::int64_t>(scope_layer_ids.size());
}

// The numeric features by position (go_features.h): columns 0..6 standardised over the
// graph, the phase one-hot, the position and its sinusoids, the memory columns as they are.
void add_numeric_features(const core::CompiledGraph& graph, const std::vector<NodeId>& order,
                          GraphTensors& t) {
  const std::int64_t n = t.num_nodes;
  t.numeric = torch::zeros({n, kNumericFeatures});
  auto f = t.numeric.accessor<float, 2>();
  const double position_scale = n > 1 ? 1.0 / static_cast<double>(n - 1) : 0.0;
  double total_bytes = 0;
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    const auto i = static_cast<std::size_t>(v);
    total_bytes += static_cast<double>(graph.output_bytes()[i] + graph.param_bytes()[i]);
  }
  const float graph_scale = static_cast<float>(std::log2(1.0 + total_bytes / (1 << 30)) / 4.0);
  for (std::int64_t p = 0; p < n; ++p) {
    const NodeId v = order[static_cast<std::size_t>(p)];
    const auto i = static_cast<std::size_t>(v);
    // Standardised columns 0..6.
    f[p][0] = static_cast<float>(std::log1p(graph.flops()[i]));
    f[p][1] = static_cast<float>(std::log1p(static_cast<double>(graph.bytes_read()[i])));
    f[p][2] = static_cast<float>(std::log1p(static_cast<double>(graph.output_bytes()[i])));
    f[p][3] = static_cast<float>(std::log1p(static_cast<double>(graph.param_bytes()[i])));
    f[p][4] = static_cast<float>(std::log1p(static_cast<double>(graph.in_degree(v))));
    f[p][5] = static_cast<float>(std::log1p(static_cast<double>(graph.out_degree(v))));
    f[p][6] = static_cast<float>(graph.layer()[i]);
    // Phase one-hot, columns 7..10.
    f[p][7 + static_cast<std::int64_t>(graph.phase()[i])] = 1.0F;
    // Topological position and its sinusoids, columns 11..19.
    const double x = static_cast<double>(p) * position_scale;
    f[p][11] = static_cast<float>(x);
    for (int k = 0; k < 4; ++k) {
      const double angle = M_PI * static_cast<double>(1 << k) * x;
      f[p][12 + 2 * k] = static_cast<float>(std::sin(angle));
      f[p][13 + 2 * k] = static_cast<float>(std::cos(angle));
    }
    // Memory, not standardised.
    f[p][kGraphMemoryColumn] = graph_scale;
    f[p][kOpMemoryColumn] = static_cast<float>(
        std::log2(1.0 + static_cast<double>(graph.output_bytes()[i] + graph.param_bytes()[i]) /
                            (1 << 20)) /
        8.0);
  }
  auto standardised = t.numeric.slice(1, 0, 7);
  auto mean = standardised.mean(0, true);
  auto std = standardised.std(0, /*unbiased=*/false, /*keepdim=*/true).clamp_min(1e-6);
  standardised.copy_((standardised - mean) / std);
}

// The edges by position.
void add_edges(const core::CompiledGraph& graph, const std::vector<NodeId>& rank, GraphTensors& t) {
  const auto m = static_cast<std::int64_t>(graph.num_edges());
  t.edge_src = torch::empty({m}, torch::kLong);
  t.edge_dst = torch::empty({m}, torch::kLong);
  auto src = t.edge_src.accessor<std::int64_t, 1>();
  auto dst = t.edge_dst.accessor<std::int64_t, 1>();
  for (core::EdgeIndex e = 0; e < graph.num_edges(); ++e) {
    src[e] = rank[static_cast<std::size_t>(graph.edge_source(e))];
    dst[e] = rank[static_cast<std::size_t>(graph.out_target(e))];
  }
}

}  // namespace

GraphTensors make_graph_tensors(const core::CompiledGraph& graph, std::int64_t split_below) {
  GraphTensors t;
  t.num_nodes = static_cast<std::int64_t>(graph.num_nodes());
  std::vector<NodeId> order;
  std::vector<NodeId> rank;
  depth_first_order(graph, order, rank);
  add_action_mask(graph, rank, t);
  add_positions(graph, order, t);
  add_numeric_features(graph, order, t);
  add_units(graph, order, split_below, t);
  add_edges(graph, rank, t);
  return t;
}

torch::Tensor unit_means(const torch::Tensor& values, const GraphTensors& g) {
  return torch::zeros({g.num_units, values.size(1)}, values.options())
             .index_add(0, g.unit, values) /
         g.unit_sizes;
}

const GraphTensors& GraphTensors::on(torch::Device device) const {
  if (device.is_cpu()) return *this;
  if (device_copy_.tensors && device_copy_.tensors->kinds.device() == device) {
    return *device_copy_.tensors;
  }
  auto copy = std::make_shared<GraphTensors>(*this);
  for (torch::Tensor* t :
       {&copy->kinds, &copy->numeric, &copy->edge_src, &copy->edge_dst, &copy->inv_in_deg,
        &copy->inv_out_deg, &copy->order, &copy->layer, &copy->scope_layer, &copy->unit,
        &copy->unit_rows, &copy->unit_sizes, &copy->action_mask, &copy->placement_prior,
        &copy->priority_prior, &copy->fusion_prior}) {
    if (t->defined()) *t = t->to(device);
  }
  device_copy_.tensors = std::move(copy);
  return *device_copy_.tensors;
}

}  // namespace gopt::agents::go
