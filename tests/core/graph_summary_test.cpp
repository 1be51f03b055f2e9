#include "core/graph_summary.h"

#include <gtest/gtest.h>

namespace gopt::core {
namespace {

TEST(GraphSummaryTest, DiamondTotalsAndPaths) {
  // in -> {light (10 FLOPs), heavy (50 FLOPs)} -> out (5 FLOPs); a side chain of 3 cheap ops.
  GraphBuilder b("d");
  auto in = b.add("in", "Placeholder").output({2});
  auto light = b.add("light", "Relu").output({2}).flops(10);
  auto heavy = b.add("heavy", "MatMul").output({2}).flops(50).param_bytes(64);
  auto out = b.add("out", "Add").output({2}).flops(5);
  auto s1 = b.add("s1", "Relu").flops(1);
  auto s2 = b.add("s2", "Relu").flops(1);
  auto s3 = b.add("s3", "Relu").flops(1);
  auto s4 = b.add("s4", "Relu").flops(1);
  b.connect(in, light).connect(in, heavy).connect(light, out).connect(heavy, out);
  b.connect(in, s1).connect(s1, s2).connect(s2, s3).connect(s3, s4);
  auto s = summarize(CompiledGraph::compile(std::move(b).build()));
  EXPECT_EQ(s.num_nodes, 8);
  EXPECT_EQ(s.num_edges, 8);
  EXPECT_DOUBLE_EQ(s.total_flops, 69);
  EXPECT_EQ(s.total_param_bytes, 64);
  EXPECT_EQ(s.longest_path, (std::vector<NodeId>{in, s1, s2, s3, s4}));
  EXPECT_EQ(s.heaviest_path, (std::vector<NodeId>{in, heavy, out}));
  EXPECT_DOUBLE_EQ(s.heaviest_path_flops, 55);
  ASSERT_FALSE(s.ops_by_type.empty());
  EXPECT_EQ(s.ops_by_type.front(), (std::pair<std::string, std::int64_t>{"Relu", 5}));
}

TEST(GraphSummaryTest, EmptyGraph) {
  auto s = summarize(CompiledGraph::compile(GraphBuilder("empty").build()));
  EXPECT_EQ(s.num_nodes, 0);
  EXPECT_TRUE(s.longest_path.empty());
}

}  // namespace
}  // namespace gopt::core
