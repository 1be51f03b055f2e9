#include "core/compiled_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "core/errors.h"
#include "tests/support/random_dag.h"

namespace gopt::core {
namespace {

// Every Boost edge appears exactly once in the out-CSR and once in the in-CSR, with the
// same bytes; per-node arrays match the Boost node attributes.
void expect_consistent(const Graph& g, const CompiledGraph& cg) {
  ASSERT_EQ(cg.num_nodes(), g.num_nodes());
  ASSERT_EQ(cg.num_edges(), g.num_edges());
  std::multiset<std::tuple<NodeId, NodeId, Bytes, bool>> boost_edges;
  std::multiset<std::tuple<NodeId, NodeId, Bytes, bool>> out_edges;
  std::multiset<std::tuple<NodeId, NodeId, Bytes, bool>> in_edges;
  g.for_each_edge([&](NodeId s, NodeId d, const EdgeAttrs& e) {
    boost_edges.emplace(s, d, e.bytes, e.control);
  });
  for (NodeId v = 0; v < cg.num_nodes(); ++v) {
    EXPECT_EQ(cg.out_degree(v), static_cast<EdgeIndex>(boost::out_degree(
                                    static_cast<std::size_t>(v), g.boost_graph())));
    EXPECT_EQ(cg.in_degree(v), static_cast<EdgeIndex>(
                                   boost::in_degree(static_cast<std::size_t>(v), g.boost_graph())));
    for (auto e = cg.out_begin(v); e < cg.out_end(v); ++e) {
      EXPECT_EQ(cg.edge_source(e), v);
      out_edges.emplace(v, cg.out_target(e), cg.edge_bytes(e), cg.edge_is_control(e));
    }
    for (auto s = cg.in_begin(v); s < cg.in_end(v); ++s) {
      auto e = cg.in_edge(s);
      EXPECT_EQ(cg.out_target(e), v);
      EXPECT_EQ(cg.edge_source(e), cg.in_source(s));
      in_edges.emplace(cg.in_source(s), v, cg.edge_bytes(e), cg.edge_is_control(e));
    }
    const auto& a = g.node(v);
    auto i = static_cast<std::size_t>(v);
    EXPECT_EQ(cg.flops()[i], a.flops);
    EXPECT_EQ(cg.output_bytes()[i], a.output_bytes);
    EXPECT_EQ(cg.param_bytes()[i], a.param_bytes);
    EXPECT_EQ(cg.bytes_read()[i], a.bytes_read);
    EXPECT_EQ(cg.kind()[i], a.kind);
    EXPECT_EQ(cg.node_names()[i], a.name);
  }
  EXPECT_EQ(out_edges, boost_edges);
  EXPECT_EQ(in_edges, boost_edges);

  // Topological order: a permutation in which every edge goes forward.
  const auto& order = cg.topological_order();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(cg.num_nodes()));
  std::vector<NodeId> sorted(order);
  std::sort(sorted.begin(), sorted.end());
  for (NodeId v = 0; v < cg.num_nodes(); ++v) EXPECT_EQ(sorted[static_cast<std::size_t>(v)], v);
  for (EdgeIndex e = 0; e < cg.num_edges(); ++e) {
    EXPECT_LT(cg.topological_rank()[static_cast<std::size_t>(cg.edge_source(e))],
              cg.topological_rank()[static_cast<std::size_t>(cg.out_target(e))]);
  }
}

TEST(CompiledGraphTest, MatchesBoostGraphOnRandomDags) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    Graph g = testing::random_dag(testing::RandomDagOptions().with_nodes(500).with_seed(seed));
    expect_consistent(g, CompiledGraph::compile(g));
  }
}

TEST(CompiledGraphTest, TopologicalOrderIsFifo) {
  // Sources 0, 1 first (in id order), then their consumers in the order they became ready.
  GraphBuilder b("fifo");
  auto a = b.add("a", "Const");
  auto c = b.add("c", "Const");
  auto x = b.add("x", "Relu");
  auto y = b.add("y", "Relu");
  auto z = b.add("z", "Add");
  b.connect(c, y).connect(a, x).connect(x, z).connect(y, z);
  auto cg = CompiledGraph::compile(std::move(b).build());
  EXPECT_EQ(cg.topological_order(), (std::vector<NodeId>{a, c, x, y, z}));
}

TEST(CompiledGraphTest, CompletesDerivedSizesOfAnIncompleteGraph) {
  Graph g("raw");
  NodeAttrs x;
  x.name = "x";
  x.op_type = "Const";
  x.output_shapes = {{10}};
  NodeAttrs y;
  y.name = "y";
  y.op_type = "Relu";
  g.add_node(x);
  g.add_node(y);
  g.add_edge(0, 1);
  auto cg = CompiledGraph::compile(g);
  EXPECT_EQ(cg.edge_bytes(0), 40);
  EXPECT_EQ(cg.bytes_read()[1], 40);
}

TEST(CompiledGraphTest, RejectsCycles) {
  Graph g("cyc");
  for (const char* name : {"a", "b"}) {
    NodeAttrs n;
    n.name = name;
    n.op_type = "Relu";
    g.add_node(n);
  }
  g.add_edge(0, 1);
  g.add_edge(1, 0);
  EXPECT_THROW((void)CompiledGraph::compile(g), GraphError);
}

TEST(CompiledGraphTest, ColocationGroupsGetDenseIds) {
  GraphBuilder b("g");
  b.add("a", "Relu").colocation("v1");
  b.add("b", "Relu");
  b.add("c", "Relu").colocation("v2");
  b.add("d", "Relu").colocation("v1");
  auto cg = CompiledGraph::compile(std::move(b).build());
  EXPECT_EQ(cg.colocation(), (std::vector<std::int32_t>{0, -1, 1, 0}));
  EXPECT_EQ(cg.colocation_groups(), (std::vector<std::string>{"v1", "v2"}));
}

}  // namespace
}  // namespace gopt::core
