#include "core/graph.h"

#include <gtest/gtest.h>

#include "core/errors.h"

namespace gopt::core {
namespace {

Graph diamond() {
  GraphBuilder b("diamond");
  auto a = b.add("a", "Placeholder").output({4, 8});  // 128 bytes
  auto l = b.add("left", "Relu").output({4, 8}).flops(32);
  auto r = b.add("right", "Tanh").output({4, 8}).flops(32);
  auto d = b.add("join", "Add").output({4, 8}).flops(32);
  b.connect(a, l).connect(a, r).connect(l, d).connect(r, d, 100);
  return std::move(b).build();
}

TEST(GraphTest, BuilderFillsKindsAndDerivedSizes) {
  Graph g = diamond();
  EXPECT_EQ(g.num_nodes(), 4);
  EXPECT_EQ(g.num_edges(), 4);
  const auto& a = g.node(*g.find("a"));
  EXPECT_EQ(a.kind, OpKind::kInput);
  EXPECT_EQ(a.output_bytes, 4 * 8 * 4);
  EXPECT_EQ(a.bytes_written, 128);
  EXPECT_EQ(a.bytes_read, 0);
  const auto& join = g.node(*g.find("join"));
  EXPECT_EQ(join.kind, OpKind::kElementwise);
  // One input edge derives its bytes from the producer (128), one was given (100).
  EXPECT_EQ(join.bytes_read, 228);
}

TEST(GraphTest, ExplicitSizesAreKept) {
  GraphBuilder b("g");
  b.add("x", "MatMul").output({2, 2}).output_bytes(7).bytes_read(3).bytes_written(5);
  Graph g = std::move(b).build();
  EXPECT_EQ(g.node(0).output_bytes, 7);
  EXPECT_EQ(g.node(0).bytes_read, 3);
  EXPECT_EQ(g.node(0).bytes_written, 5);
}

TEST(GraphTest, ControlEdgeCarriesNoBytes) {
  GraphBuilder b("g");
  auto x = b.add("x", "Const").output({1024});
  auto y = b.add("y", "NoOp");
  b.control(x, y);
  Graph g = std::move(b).build();
  g.for_each_edge([](NodeId, NodeId, const EdgeAttrs& e) {
    EXPECT_TRUE(e.control);
    EXPECT_EQ(e.bytes, 0);
  });
}

TEST(GraphTest, DuplicateNameIsRejected) {
  GraphBuilder b("g");
  b.add("x", "Relu");
  try {
    b.add("x", "Tanh");
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate node name"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
}

TEST(GraphTest, EmptyNameIsRejected) {
  GraphBuilder b("g");
  EXPECT_THROW(b.add("", "Relu"), GraphError);
}

TEST(GraphTest, SelfLoopIsRejected) {
  GraphBuilder b("g");
  auto x = b.add("x", "Relu");
  EXPECT_THROW(b.connect(x, x), GraphError);
}

TEST(GraphTest, UnknownNodeInConnectIsRejected) {
  GraphBuilder b("g");
  b.add("x", "Relu");
  try {
    b.connect("x", "nope");
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown node 'nope'"), std::string::npos) << e.what();
  }
}

TEST(GraphTest, CycleIsReportedWithItsNodesInOrder) {
  GraphBuilder b("loop");
  auto s = b.add("start", "Placeholder");
  auto p = b.add("p", "Relu");
  auto q = b.add("q", "Relu");
  auto r = b.add("r", "Relu");
  auto t = b.add("tail", "Relu");
  b.connect(s, p).connect(p, q).connect(q, r).connect(r, p).connect(r, t);
  try {
    (void)std::move(b).build();
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    std::vector<std::string> expected = {"p", "q", "r", "p"};
    ASSERT_EQ(e.nodes().size(), 4u) << e.what();
    // The cycle may start at any of its nodes; rotate to start at "p".
    auto nodes = e.nodes();
    nodes.pop_back();
    auto it = std::find(nodes.begin(), nodes.end(), "p");
    ASSERT_NE(it, nodes.end());
    std::rotate(nodes.begin(), it, nodes.end());
    nodes.push_back("p");
    EXPECT_EQ(nodes, expected);
    EXPECT_NE(std::string(e.what()).find("contains a cycle"), std::string::npos);
  }
}

TEST(GraphTest, NegativeSizesAreRejected) {
  {
    GraphBuilder b("g");
    b.add("x", "Relu").param_bytes(-4);
    EXPECT_THROW((void)std::move(b).build(), GraphError);
  }
  {
    GraphBuilder b("g");
    b.add("x", "Relu").flops(-1);
    EXPECT_THROW((void)std::move(b).build(), GraphError);
  }
  {
    GraphBuilder b("g");
    b.add("x", "Relu").output({4, -2});
    EXPECT_THROW((void)std::move(b).build(), GraphError);
  }
  {
    GraphBuilder b("g");
    auto x = b.add("x", "Relu");
    auto y = b.add("y", "Relu");
    EXPECT_THROW(b.connect(x, y, -8), GraphError);
  }
}

TEST(GraphTest, SameGraphDetectsDifferences) {
  Graph a = diamond();
  Graph b = diamond();
  EXPECT_TRUE(same_graph(a, b));
  b.mutable_node(1).flops = 33;
  EXPECT_FALSE(same_graph(a, b));
}

TEST(GraphTest, NumElements) {
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({3, 4, 5}), 60);
  EXPECT_EQ(num_elements({3, 0}), 0);
  // A zero anywhere: zero, without multiplying the other dimensions (they may overflow).
  EXPECT_EQ(num_elements({std::int64_t{1} << 40, std::int64_t{1} << 40, 0}), 0);
}

}  // namespace
}  // namespace gopt::core
