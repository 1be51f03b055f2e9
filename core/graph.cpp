#include "core/graph.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <sstream>
#include <tuple>
#include <utility>

#include "core/errors.h"

namespace gopt::core {
namespace {

using Vertex = Graph::BoostGraph::vertex_descriptor;

std::string node_location(const NodeAttrs& n) { return "node '" + n.name + "'"; }

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void check_size(const std::string& source, const NodeAttrs& n, const char* field, Bytes value) {
  if (value == kDerivedBytes) return;
  if (value < 0 || value > kMaxBytes) {
    throw GraphError(source, node_location(n),
                     std::string("field '") + field + "' must be in [0, " +
                         std::to_string(kMaxBytes) + "] bytes (2^60), found " +
                         std::to_string(value),
                     {n.name});
  }
}

// a + b when it is at most kMaxBytes (both are in [0, kMaxBytes], so it cannot wrap).
std::optional<Bytes> add_bytes(Bytes a, Bytes b) {
  Bytes sum = a + b;
  if (sum > kMaxBytes) return std::nullopt;
  return sum;
}

// Running total of one size field over the whole graph; the node that takes it past
// kMaxBytes is named.
class GraphTotal {
 public:
  GraphTotal(const std::string& source, const char* field) : source_(source), field_(field) {}
  void add(const NodeAttrs& n, Bytes value, const char* field = nullptr) {
    auto sum = add_bytes(total_, value);
    if (!sum) {
      throw GraphError(source_, node_location(n),
                       std::string("field '") + (field ? field : field_) +
                           "': the graph's total of '" + field_ + "' exceeds " +
                           std::to_string(kMaxBytes) + " bytes (2^60) at this node",
                       {n.name});
    }
    total_ = *sum;
  }

 private:
  const std::string& source_;
  const char* field_;
  Bytes total_ = 0;
};

// Names of the nodes on one cycle, in edge order, first node repeated at the end.
// `remaining` are the nodes Kahn's algorithm could not order: each has a predecessor
// among them, so walking predecessors from any of them must revisit a node.
std::vector<std::string> find_cycle(const Graph& graph, const std::vector<int>& in_degree) {
  const auto& g = graph.boost_graph();
  NodeId start = -1;
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    if (in_degree[static_cast<std::size_t>(v)] > 0) {
      start = v;
      break;
    }
  }
  GOPT_ASSERT(start >= 0, "cycle search called on an acyclic graph");
  std::vector<int> seen_at(static_cast<std::size_t>(graph.num_nodes()), -1);
  std::vector<NodeId> walk;
  NodeId v = start;
  while (seen_at[static_cast<std::size_t>(v)] < 0) {
    seen_at[static_cast<std::size_t>(v)] = static_cast<int>(walk.size());
    walk.push_back(v);
    NodeId next = -1;
    auto [it, end] = boost::in_edges(static_cast<Vertex>(v), g);
    for (; it != end; ++it) {
      auto u = static_cast<NodeId>(boost::source(*it, g));
      if (in_degree[static_cast<std::size_t>(u)] > 0) {
        next = u;
        break;
      }
    }
    GOPT_ASSERT(next >= 0, "unordered node without an unordered predecessor");
    v = next;
  }
  // walk[seen_at[v]..] is the cycle in reverse edge order; report it in edge order,
  // starting from its lowest node id so the message does not depend on the walk.
  std::vector<NodeId> cycle(walk.rbegin(), walk.rend() - seen_at[static_cast<std::size_t>(v)]);
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::vector<std::string> names;
  for (NodeId u : cycle) names.push_back(graph.node(u).name);
  names.push_back(names.front());
  return names;
}

}  // namespace

Graph::Graph(std::string name) : name_(std::move(name)) {}

NodeId Graph::add_node(NodeAttrs attrs) {
  if (attrs.name.empty()) {
    throw GraphError("", "node " + std::to_string(num_nodes()), "a node name must not be empty");
  }
  auto id = num_nodes();
  auto [it, inserted] = index_.emplace(attrs.name, id);
  if (!inserted) {
    throw GraphError(
        "", node_location(attrs),
        "duplicate node name (first defined as node " + std::to_string(it->second) + ")",
        {attrs.name});
  }
  boost::add_vertex(std::move(attrs), g_);
  return id;
}

void Graph::add_edge(NodeId src, NodeId dst, EdgeAttrs attrs) {
  auto n = num_nodes();
  if (src < 0 || src >= n || dst < 0 || dst >= n) {
    throw GraphError("", "edge " + std::to_string(src) + " -> " + std::to_string(dst),
                     "node id out of range [0, " + std::to_string(n) + ")");
  }
  if (src == dst) {
    throw GraphError("", node_location(node(src)), "an edge from a node to itself is a cycle",
                     {node(src).name, node(src).name});
  }
  if (attrs.bytes != kDerivedBytes && (attrs.bytes < 0 || attrs.bytes > kMaxBytes)) {
    throw GraphError("", "edge '" + node(src).name + "' -> '" + node(dst).name + "'",
                     "field 'bytes' must be in [0, " + std::to_string(kMaxBytes) +
                         "] bytes (2^60), found " + std::to_string(attrs.bytes));
  }
  boost::add_edge(static_cast<Vertex>(src), static_cast<Vertex>(dst), attrs, g_);
}

NodeId Graph::num_nodes() const { return static_cast<NodeId>(boost::num_vertices(g_)); }

std::int64_t Graph::num_edges() const { return static_cast<std::int64_t>(boost::num_edges(g_)); }

const NodeAttrs& Graph::node(NodeId id) const {
  GOPT_ASSERT(id >= 0 && id < num_nodes(), "node id out of range");
  return g_[static_cast<Vertex>(id)];
}

NodeAttrs& Graph::mutable_node(NodeId id) {
  GOPT_ASSERT(id >= 0 && id < num_nodes(), "node id out of range");
  return g_[static_cast<Vertex>(id)];
}

std::optional<NodeId> Graph::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::int64_t num_elements(const Shape& shape) {
  // A zero dimension first: the product of the others need not be representable (an ONNX
  // initializer of [..., 0, ...] with huge other dimensions overflowed; fuzz_onnx_model).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::optional<std::int64_t> checked_num_elements(const Shape& shape, std::int64_t limit) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;  // a later huge dimension cannot make it non-zero
  }
  for (auto d : shape) {
    if (__builtin_mul_overflow(n, d, &n) || n > limit) return std::nullopt;
  }
  return n;
}

void Graph::complete(const std::string& source) {
  // Output bytes first: edges and bytes_written derive from them. Every derived size is
  // checked against kMaxBytes, and so is each field's total over the graph, so that no
  // later sum (a device's memory, the bytes a step moves) can overflow.
  GraphTotal output_total(source, "output_bytes");
  GraphTotal written_total(source, "bytes_written");
  GraphTotal param_total(source, "param_bytes");
  for (NodeId v = 0; v < num_nodes(); ++v) {
    auto& n = mutable_node(v);
    {
      // Checked even when output_bytes is given, so that num_elements() of any shape of a
      // completed graph is representable.
      const Bytes element_bytes = dtype_size_bytes(n.dtype);
      Bytes total = 0;
      for (std::size_t i = 0; i < n.output_shapes.size(); ++i) {
        const auto& shape = n.output_shapes[i];
        auto elements = checked_num_elements(shape, kMaxBytes / element_bytes);
        std::optional<Bytes> sum;
        if (elements) sum = add_bytes(total, *elements * element_bytes);
        if (!sum) {
          throw GraphError(source, node_location(n),
                           "field 'shapes[" + std::to_string(i) + "]': the output bytes (" +
                               std::to_string(element_bytes) +
                               " bytes per element times the product of the dimensions) "
                               "exceed " +
                               std::to_string(kMaxBytes) + " bytes (2^60)",
                           {n.name});
        }
        total = *sum;
      }
      if (n.output_bytes == kDerivedBytes) n.output_bytes = total;
    }
    if (n.bytes_written == kDerivedBytes) n.bytes_written = n.output_bytes;
    output_total.add(n, n.output_bytes);
    written_total.add(n, n.bytes_written);
    param_total.add(n, n.param_bytes);
  }
  GraphTotal edge_total(source, "edges.bytes");
  auto [e, end] = boost::edges(g_);
  for (; e != end; ++e) {
    auto& attrs = g_[*e];
    if (attrs.bytes == kDerivedBytes) {
      attrs.bytes = attrs.control ? 0 : g_[boost::source(*e, g_)].output_bytes;
    }
    edge_total.add(g_[boost::target(*e, g_)], attrs.bytes, "bytes of an input edge");
  }
  GraphTotal read_total(source, "bytes_read");
  for (NodeId v = 0; v < num_nodes(); ++v) {
    auto& n = mutable_node(v);
    if (n.bytes_read == kDerivedBytes) {
      // At most the edge total, which was checked above.
      Bytes total = 0;
      auto [it, in_end] = boost::in_edges(static_cast<Vertex>(v), g_);
      for (; it != in_end; ++it) total += g_[*it].bytes;
      n.bytes_read = total;
    }
    read_total.add(n, n.bytes_read);
  }
}

void Graph::validate(const std::string& source) const {
  for (NodeId v = 0; v < num_nodes(); ++v) {
    const auto& n = node(v);
    if (!std::isfinite(n.flops) || n.flops < 0 || n.flops > kMaxFlops) {
      throw GraphError(
          source, node_location(n),
          "field 'flops' must be a finite number >= 0 and <= 1e30, found " + number_text(n.flops),
          {n.name});
    }
    check_size(source, n, "bytes_read", n.bytes_read);
    check_size(source, n, "bytes_written", n.bytes_written);
    check_size(source, n, "output_bytes", n.output_bytes);
    check_size(source, n, "param_bytes", n.param_bytes);
    for (const auto& shape : n.output_shapes) {
      for (auto d : shape) {
        if (d < 0) {
          throw GraphError(source, node_location(n),
                           "field 'shapes' has a negative dimension " + std::to_string(d),
                           {n.name});
        }
      }
    }
  }
  // Kahn's algorithm; whatever it cannot order lies on or behind a cycle.
  std::vector<int> in_degree(static_cast<std::size_t>(num_nodes()));
  std::deque<NodeId> ready;
  for (NodeId v = 0; v < num_nodes(); ++v) {
    in_degree[static_cast<std::size_t>(v)] =
        static_cast<int>(boost::in_degree(static_cast<Vertex>(v), g_));
    if (in_degree[static_cast<std::size_t>(v)] == 0) ready.push_back(v);
  }
  NodeId ordered = 0;
  while (!ready.empty()) {
    NodeId v = ready.front();
    ready.pop_front();
    ++ordered;
    auto [it, end] = boost::out_edges(static_cast<Vertex>(v), g_);
    for (; it != end; ++it) {
      auto w = static_cast<std::size_t>(boost::target(*it, g_));
      if (--in_degree[w] == 0) ready.push_back(static_cast<NodeId>(w));
    }
  }
  if (ordered != num_nodes()) {
    auto cycle = find_cycle(*this, in_degree);
    std::string path;
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      if (i > 0) path += " -> ";
      path += "'" + cycle[i] + "'";
    }
    throw GraphError(source, "graph '" + name_ + "'", "contains a cycle: " + path,
                     std::move(cycle));
  }
}

bool same_graph(const Graph& a, const Graph& b) {
  if (a.name() != b.name() || a.family() != b.family() || a.attrs() != b.attrs() ||
      a.num_nodes() != b.num_nodes() || a.num_edges() != b.num_edges()) {
    return false;
  }
  for (NodeId v = 0; v < a.num_nodes(); ++v) {
    const auto& x = a.node(v);
    const auto& y = b.node(v);
    if (x.name != y.name || x.op_type != y.op_type || x.kind != y.kind ||
        x.output_shapes != y.output_shapes || x.dtype != y.dtype || x.flops != y.flops ||
        x.bytes_read != y.bytes_read || x.bytes_written != y.bytes_written ||
        x.output_bytes != y.output_bytes || x.param_bytes != y.param_bytes || x.layer != y.layer ||
        x.branch != y.branch || x.phase != y.phase || x.colocation_group != y.colocation_group ||
        x.attrs != y.attrs) {
      return false;
    }
  }
  using EdgeKey = std::tuple<NodeId, NodeId, Bytes, bool>;
  std::vector<EdgeKey> ea;
  std::vector<EdgeKey> eb;
  a.for_each_edge(
      [&](NodeId s, NodeId d, const EdgeAttrs& e) { ea.emplace_back(s, d, e.bytes, e.control); });
  b.for_each_edge(
      [&](NodeId s, NodeId d, const EdgeAttrs& e) { eb.emplace_back(s, d, e.bytes, e.control); });
  return ea == eb;
}

// --- GraphBuilder -----------------------------------------------------------------------

NodeAttrs& GraphBuilder::NodeRef::attrs() { return graph_->mutable_node(id_); }

GraphBuilder::NodeRef& GraphBuilder::NodeRef::output(Shape shape) {
  attrs().output_shapes.push_back(std::move(shape));
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::dtype(DType dtype) {
  attrs().dtype = dtype;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::kind(OpKind kind) {
  attrs().kind = kind;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::flops(Flops flops) {
  attrs().flops = flops;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::bytes_read(Bytes bytes) {
  attrs().bytes_read = bytes;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::bytes_written(Bytes bytes) {
  attrs().bytes_written = bytes;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::output_bytes(Bytes bytes) {
  attrs().output_bytes = bytes;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::param_bytes(Bytes bytes) {
  attrs().param_bytes = bytes;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::layer(std::int32_t layer) {
  attrs().layer = layer;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::branch(std::int32_t branch) {
  attrs().branch = branch;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::phase(Phase phase) {
  attrs().phase = phase;
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::colocation(std::string group) {
  attrs().colocation_group = std::move(group);
  return *this;
}
GraphBuilder::NodeRef& GraphBuilder::NodeRef::attr(std::string key, std::string value) {
  attrs().attrs[std::move(key)] = std::move(value);
  return *this;
}

GraphBuilder::GraphBuilder(std::string graph_name) : graph_(std::move(graph_name)) {}

GraphBuilder::NodeRef GraphBuilder::add(std::string name, std::string op_type) {
  NodeAttrs attrs;
  attrs.name = std::move(name);
  attrs.kind = classify_op_type(op_type);
  attrs.op_type = std::move(op_type);
  return NodeRef(&graph_, graph_.add_node(std::move(attrs)));
}

GraphBuilder::NodeRef GraphBuilder::node(NodeId id) {
  GOPT_ASSERT(id >= 0 && id < graph_.num_nodes(), "node id out of range");
  return NodeRef(&graph_, id);
}

GraphBuilder& GraphBuilder::connect(NodeId src, NodeId dst, std::optional<Bytes> bytes) {
  graph_.add_edge(src, dst, EdgeAttrs{bytes.value_or(kDerivedBytes), false});
  return *this;
}

GraphBuilder& GraphBuilder::connect(std::string_view src, std::string_view dst,
                                    std::optional<Bytes> bytes) {
  auto s = graph_.find(src);
  auto d = graph_.find(dst);
  if (!s || !d) {
    throw GraphError("", "edge '" + std::string(src) + "' -> '" + std::string(dst) + "'",
                     "unknown node '" + std::string(s ? dst : src) + "'");
  }
  return connect(*s, *d, bytes);
}

GraphBuilder& GraphBuilder::control(NodeId src, NodeId dst) {
  graph_.add_edge(src, dst, EdgeAttrs{0, true});
  return *this;
}

GraphBuilder& GraphBuilder::family(std::string family) {
  graph_.set_family(std::move(family));
  return *this;
}

GraphBuilder& GraphBuilder::attr(std::string key, std::string value) {
  graph_.mutable_attrs()[std::move(key)] = std::move(value);
  return *this;
}

Graph GraphBuilder::build() && {
  graph_.validate();
  graph_.complete();  // GraphError without a source: built in code, not read from a file
  return std::move(graph_);
}

}  // namespace gopt::core
