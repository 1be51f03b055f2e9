#include "core/op_kind.h"

#include <gtest/gtest.h>

namespace gopt::core {
namespace {

TEST(OpKindTest, ClassifiesTensorFlowAndOnnxNames) {
  EXPECT_EQ(classify_op_type("MatMul"), OpKind::kMatMul);
  EXPECT_EQ(classify_op_type("Gemm"), OpKind::kMatMul);
  EXPECT_EQ(classify_op_type("Conv2DBackpropFilter"), OpKind::kConv);
  EXPECT_EQ(classify_op_type("Conv"), OpKind::kConv);
  EXPECT_EQ(classify_op_type("SigmoidGrad"), OpKind::kElementwise);
  EXPECT_EQ(classify_op_type("ApplyAdam"), OpKind::kUpdate);
  EXPECT_EQ(classify_op_type("Reshape"), OpKind::kReshape);
  EXPECT_EQ(classify_op_type("SomethingNew"), OpKind::kOther);
}

TEST(OpKindTest, NamesRoundTrip) {
  for (int k = 0; k < kNumOpKinds; ++k) {
    auto kind = static_cast<OpKind>(k);
    EXPECT_EQ(op_kind_from_string(to_string(kind)), kind);
  }
  EXPECT_EQ(op_kind_from_string("nope"), std::nullopt);
  EXPECT_EQ(op_kind_names().size(), static_cast<std::size_t>(kNumOpKinds));
  for (const auto& name : dtype_names()) {
    auto d = dtype_from_string(name);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(to_string(*d), name);
  }
  EXPECT_EQ(dtype_size_bytes(DType::kFloat16), 2);
  EXPECT_EQ(dtype_size_bytes(DType::kInt64), 8);
  EXPECT_EQ(phase_from_string("backward"), Phase::kBackward);
}

}  // namespace
}  // namespace gopt::core
