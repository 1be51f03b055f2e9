// The fusion procedure: which producer/consumer pairs merge, in what order, and that the
// group graph stays acyclic.
#include "simulator/fusion.h"

#include <gtest/gtest.h>

#include "core/graph.h"
#include "core/rng.h"
#include "tests/support/random_dag.h"

namespace gopt::simulator {
namespace {

using core::CompiledGraph;
using core::Decision;
using core::GraphBuilder;

Decision with_fusion(std::vector<std::int32_t> fusion,
                     std::optional<std::vector<core::DeviceId>> placement = std::nullopt) {
  Decision d;
  d.fusion = std::move(fusion);
  d.placement = std::move(placement);
  return d;
}

TEST(FusionTest, ChainFusesIntoOneGroupInTopologicalOrder) {
  GraphBuilder b("chain");
  b.add("a", "Relu").output_bytes(4);
  b.add("b", "Relu").output_bytes(4);
  b.add("c", "Relu").output_bytes(4);
  b.connect("b", "c").connect("a", "b");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto groups = form_fusion_groups(g, with_fusion({1, 1, 1}));
  ASSERT_EQ(groups.num_groups(), 1);
  EXPECT_EQ(groups.members, (std::vector<core::NodeId>{0, 1, 2}));
  EXPECT_EQ(form_fusion_groups(g, Decision{}).num_groups(), 3);
  // Priority 0 never fuses.
  auto partial = form_fusion_groups(g, with_fusion({1, 0, 1}));
  EXPECT_EQ(partial.num_groups(), 3);
}

TEST(FusionTest, OnlyPairsOnTheSameDeviceMerge) {
  GraphBuilder b("chain");
  b.add("a", "Relu").output_bytes(4);
  b.add("b", "Relu").output_bytes(4);
  b.add("c", "Relu").output_bytes(4);
  b.connect("a", "b").connect("b", "c");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto groups = form_fusion_groups(g, with_fusion({1, 1, 1}, std::vector<core::DeviceId>{0, 0, 1}));
  EXPECT_EQ(groups.num_groups(), 2);
  EXPECT_EQ(groups.group_of[0], groups.group_of[1]);
  EXPECT_NE(groups.group_of[1], groups.group_of[2]);
}

TEST(FusionTest, InputsAndVariablesNeverFuse) {
  // Their data is in memory before the step: a consumer's kernel reads it as an operand,
  // whatever fusion priority they are given (else fusing them would make that read free).
  GraphBuilder b("operands");
  b.add("x", "Placeholder").output_bytes(64);
  b.add("w", "VariableV2").output_bytes(64);
  b.add("mul", "Mul").output_bytes(64);
  b.add("relu", "Relu").output_bytes(64);
  b.connect("x", "mul").connect("w", "mul").connect("mul", "relu");
  auto g = CompiledGraph::compile(std::move(b).build());
  ASSERT_EQ(g.kind()[0], core::OpKind::kInput);
  ASSERT_EQ(g.kind()[1], core::OpKind::kVariable);
  auto groups = form_fusion_groups(g, with_fusion({5, 5, 5, 5}));
  EXPECT_EQ(groups.num_groups(), 3);
  EXPECT_EQ(groups.group_of[2], groups.group_of[3]);  // mul and relu fuse
  EXPECT_NE(groups.group_of[0], groups.group_of[2]);
  EXPECT_NE(groups.group_of[1], groups.group_of[2]);
}

TEST(FusionTest, AtMostOneLibraryCallPerGroup) {
  // matmul -> relu -> matmul -> add: each product may take elementwise ops with it (output
  // fusion), but the two products never share a kernel.
  GraphBuilder b("gemms");
  b.add("mm1", "MatMul").output_bytes(64).flops(1e6);
  b.add("relu", "Relu").output_bytes(64);
  b.add("mm2", "MatMul").output_bytes(64).flops(1e6);
  b.add("add", "Add").output_bytes(64);
  b.connect("mm1", "relu").connect("relu", "mm2").connect("mm2", "add");
  auto g = CompiledGraph::compile(std::move(b).build());
  ASSERT_TRUE(library_kind(g.kind()[0]));
  ASSERT_FALSE(library_kind(g.kind()[1]));
  auto groups = form_fusion_groups(g, with_fusion({1, 1, 1, 1}));
  EXPECT_EQ(groups.num_groups(), 2);
  EXPECT_NE(groups.group_of[0], groups.group_of[2]);
  EXPECT_EQ(groups.group_of[2], groups.group_of[3]);  // mm2 + add: an epilogue
  // Priorities decide which product takes the relu: the highest pair merges first.
  auto other = form_fusion_groups(g, with_fusion({1, 3, 3, 1}));
  EXPECT_EQ(other.group_of[1], other.group_of[2]);
  EXPECT_NE(other.group_of[0], other.group_of[1]);
}

TEST(FusionTest, NeverCreatesACycleAndOrderFollowsPriority) {
  // a -> b, a -> c, c -> b. Merging {a, b} first would trap c between them.
  GraphBuilder b("triangle");
  b.add("a", "Relu").output_bytes(4);
  b.add("b", "Relu").output_bytes(4);
  b.add("c", "Relu").output_bytes(4);
  b.connect("a", "b").connect("a", "c").connect("c", "b");
  auto g = CompiledGraph::compile(std::move(b).build());
  // c has the lowest priority: (a,b) is tried first and refused; (a,c) and (c,b) are
  // tried with min priority 1 and both merge, so everything ends in one group.
  auto all = form_fusion_groups(g, with_fusion({5, 5, 1}));
  EXPECT_EQ(all.num_groups(), 1);
  EXPECT_TRUE(groups_are_acyclic(g, all));
  // With c unfusable, a and b may not merge (c sits on a path between them).
  auto none = form_fusion_groups(g, with_fusion({5, 5, 0}));
  EXPECT_EQ(none.num_groups(), 3);
}

TEST(FusionTest, RandomPrioritiesAlwaysGiveAcyclicGroups) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto g = CompiledGraph::compile(gopt::testing::random_dag(
        gopt::testing::RandomDagOptions().with_nodes(500).with_seed(seed).with_window(8)));
    core::Rng rng(seed);
    std::vector<std::int32_t> fusion;
    std::vector<core::DeviceId> placement;
    for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
      fusion.push_back(static_cast<std::int32_t>(rng.uniform_int(0, 4)));
      placement.push_back(static_cast<core::DeviceId>(rng.uniform_int(0, 1)));
    }
    auto groups = form_fusion_groups(g, with_fusion(fusion, placement));
    EXPECT_TRUE(groups_are_acyclic(g, groups)) << "seed " << seed;
    EXPECT_LT(groups.num_groups(), g.num_nodes()) << "seed " << seed;
    for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
      auto first =
          groups.members[static_cast<std::size_t>(groups.member_offset[static_cast<std::size_t>(
              groups.group_of[static_cast<std::size_t>(v)])])];
      EXPECT_EQ(placement[static_cast<std::size_t>(v)], placement[static_cast<std::size_t>(first)]);
    }
    // Same input, same groups.
    auto again = form_fusion_groups(g, with_fusion(fusion, placement));
    EXPECT_EQ(again.group_of, groups.group_of);
  }
}

}  // namespace
}  // namespace gopt::simulator
