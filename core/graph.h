// The mutable graph IR: a computation graph of ops (nodes) and data dependencies (edges)
// on a Boost.Graph bidirectional adjacency_list. Built by GraphBuilder or read from a
// graph file; once validated it is compiled into the immutable CompiledGraph that
// simulators and agents use.
//
//   GraphBuilder b("mlp");
//   NodeId x = b.add("x", "Placeholder").output({64, 784});
//   NodeId mm = b.add("fc1/MatMul", "MatMul").output({64, 256}).flops(2.0 * 64 * 784 * 256);
//   b.connect(x, mm);
//   Graph g = std::move(b).build();   // fills defaults, validates (throws GraphError)
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/op_kind.h"
#include "core/units.h"

namespace gopt::core {

/// Dimensions of a tensor, outermost first. Every dimension is >= 0.
using Shape = std::vector<std::int64_t>;

/// Marks a byte count to be derived when the graph is completed (see Graph::complete):
/// a node's output bytes from its shapes and dtype, its bytes written from its output
/// bytes, its bytes read from its input edges, an edge's bytes from its producer.
inline constexpr Bytes kDerivedBytes = INT64_MIN;

/// The largest size a graph may hold, in bytes (2^60, 1 EiB): every given or derived size
/// (a node's bytes read, written, output and parameter bytes, an edge's bytes, a shape's
/// elements times its dtype size) and each field's total over the whole graph. Sums of a
/// few such totals (a device's memory, the bytes a step moves) then fit in an int64.
/// docs/graph-format.md "Limits".
inline constexpr Bytes kMaxBytes = Bytes{1} << 60;
/// The most FLOPs one op may have (1e30), so that any sum over a graph stays finite.
inline constexpr Flops kMaxFlops = 1e30;

/// Attributes of one op.
struct NodeAttrs {
  std::string name;     ///< unique within the graph
  std::string op_type;  ///< as in the source framework: "MatMul", "Conv2DBackpropFilter"
  OpKind kind = OpKind::kOther;
  std::vector<Shape> output_shapes;     ///< one shape per output tensor
  DType dtype = DType::kFloat32;        ///< element type of the outputs
  Flops flops = 0;                      ///< floating-point operations, multiply-add = 2
  Bytes bytes_read = kDerivedBytes;     ///< bytes read from device memory
  Bytes bytes_written = kDerivedBytes;  ///< bytes written to device memory
  Bytes output_bytes = kDerivedBytes;   ///< bytes of all outputs (the activation size)
  Bytes param_bytes = 0;                ///< resident parameter (and optimizer state) bytes it owns
  std::int32_t layer = -1;              ///< layer or pipeline stage index; -1 when unknown
  std::int32_t branch = -1;             ///< branch within a multi-branch cell; -1 when none
  Phase phase = Phase::kUnknown;
  std::string colocation_group;              ///< ops sharing a non-empty group must share a device
  std::map<std::string, std::string> attrs;  ///< free-form metadata
};

/// Attributes of one data (or control) dependency.
struct EdgeAttrs {
  Bytes bytes = kDerivedBytes;  ///< tensor bytes carried; 0 for a control edge
  bool control = false;         ///< a control edge orders ops but carries no data
};

/// A computation graph. Owns its nodes and edges; node ids are dense indices in insertion
/// order. Adding nodes and edges checks names and ids; `complete()` derives default sizes
/// and `validate()` checks the whole graph (acyclic, sizes non-negative).
class Graph {
 public:
  using BoostGraph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, NodeAttrs, EdgeAttrs>;

  explicit Graph(std::string name = "graph");

  [[nodiscard]] const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  /// Workload family ("rnnlm", "gnmt", "inception", ...); empty when unknown.
  [[nodiscard]] const std::string& family() const { return family_; }
  void set_family(std::string family) { family_ = std::move(family); }
  /// Free-form graph-level metadata (generator hyperparameters, source file).
  [[nodiscard]] const std::map<std::string, std::string>& attrs() const { return attrs_; }
  std::map<std::string, std::string>& mutable_attrs() { return attrs_; }

  /// Adds a node; throws GraphError if the name is empty or already taken.
  NodeId add_node(NodeAttrs attrs);
  /// Adds an edge src -> dst; throws GraphError for an unknown id or a self-loop.
  void add_edge(NodeId src, NodeId dst, EdgeAttrs attrs = {});

  [[nodiscard]] NodeId num_nodes() const;
  [[nodiscard]] std::int64_t num_edges() const;
  [[nodiscard]] const NodeAttrs& node(NodeId id) const;
  /// Mutable access to a node's attributes. Renaming a node through it is not allowed
  /// (the name index would go stale); everything else may change.
  [[nodiscard]] NodeAttrs& mutable_node(NodeId id);
  /// The node with this name, if any.
  [[nodiscard]] std::optional<NodeId> find(std::string_view name) const;

  /// Calls f(src, dst, attrs) for every edge, grouped by source in id order and, within a
  /// source, in insertion order. This is the order graph files are written in.
  template <typename F>
  void for_each_edge(F&& f) const {
    for (NodeId v = 0; v < num_nodes(); ++v) {
      auto [it, end] = boost::out_edges(static_cast<BoostGraph::vertex_descriptor>(v), g_);
      for (; it != end; ++it) {
        f(v, static_cast<NodeId>(boost::target(*it, g_)), g_[*it]);
      }
    }
  }

  /// The underlying Boost graph, for Boost.Graph algorithms.
  [[nodiscard]] const BoostGraph& boost_graph() const { return g_; }

  /// Replaces every kDerivedBytes with its derived default (see kDerivedBytes), with
  /// checked arithmetic: a derived size above kMaxBytes, or a field whose total over the
  /// graph is above it, throws GraphError naming `source`, the node and the field.
  /// Idempotent.
  void complete(const std::string& source = "");

  /// Checks the whole graph: every size derived or in [0, kMaxBytes], FLOPs finite and
  /// in [0, kMaxFlops], shapes non-negative, and no cycle. Throws GraphError naming `source`
  /// (a file name, or empty) and the node; for a cycle, the nodes on it in order.
  void validate(const std::string& source = "") const;

 private:
  BoostGraph g_;
  std::string name_;
  std::string family_;
  std::map<std::string, std::string> attrs_;
  std::unordered_map<std::string, NodeId> index_;
};

/// True when two graphs have the same name, family, attributes, nodes (in id order) and
/// edges (per source, in order). Used to check that reading and writing round-trips.
[[nodiscard]] bool same_graph(const Graph& a, const Graph& b);

/// Product of a shape's dimensions (1 for a scalar). The shape must be one a completed
/// graph holds (its bytes are at most kMaxBytes); see checked_num_elements otherwise.
[[nodiscard]] std::int64_t num_elements(const Shape& shape);

/// Product of a shape's dimensions, or nullopt when a dimension is negative or the product
/// is above `limit`.
[[nodiscard]] std::optional<std::int64_t> checked_num_elements(const Shape& shape,
                                                               std::int64_t limit = kMaxBytes);

/// Builds a Graph with chained setters; `build()` completes and validates it.
class GraphBuilder {
 public:
  /// A handle on a node being built; setters return *this for chaining.
  class NodeRef {
   public:
    NodeRef& output(Shape shape);  ///< appends an output tensor shape
    NodeRef& dtype(DType dtype);
    NodeRef& kind(OpKind kind);
    NodeRef& flops(Flops flops);
    NodeRef& bytes_read(Bytes bytes);
    NodeRef& bytes_written(Bytes bytes);
    NodeRef& output_bytes(Bytes bytes);
    NodeRef& param_bytes(Bytes bytes);
    NodeRef& layer(std::int32_t layer);
    NodeRef& branch(std::int32_t branch);
    NodeRef& phase(Phase phase);
    NodeRef& colocation(std::string group);
    NodeRef& attr(std::string key, std::string value);

    [[nodiscard]] NodeId id() const { return id_; }
    operator NodeId() const { return id_; }  // NOLINT(google-explicit-constructor)

   private:
    friend class GraphBuilder;
    NodeRef(Graph* graph, NodeId id) : graph_(graph), id_(id) {}
    NodeAttrs& attrs();
    Graph* graph_;
    NodeId id_;
  };

  explicit GraphBuilder(std::string graph_name);

  /// Adds an op; its kind comes from `op_type` (classify_op_type) unless set.
  NodeRef add(std::string name, std::string op_type);
  /// A handle on an existing node, to set more attributes.
  NodeRef node(NodeId id);
  /// A data edge; `bytes` defaults to the producer's output bytes.
  GraphBuilder& connect(NodeId src, NodeId dst, std::optional<Bytes> bytes = std::nullopt);
  /// A data edge between named nodes; throws GraphError for an unknown name.
  GraphBuilder& connect(std::string_view src, std::string_view dst,
                        std::optional<Bytes> bytes = std::nullopt);
  /// A control edge (orders the ops, carries no bytes).
  GraphBuilder& control(NodeId src, NodeId dst);
  GraphBuilder& family(std::string family);
  GraphBuilder& attr(std::string key, std::string value);

  [[nodiscard]] NodeId num_nodes() const { return graph_.num_nodes(); }

  /// Completes and validates the graph; throws GraphError.
  [[nodiscard]] Graph build() &&;

 private:
  Graph graph_;
};

}  // namespace gopt::core
