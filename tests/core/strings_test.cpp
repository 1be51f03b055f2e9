#include "core/strings.h"

#include <gtest/gtest.h>

namespace gopt::core {
namespace {

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("metis", "metsi"), 1u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(StringsTest, DidYouMeanOnlySuggestsCloseNames) {
  std::vector<std::string> names = {"single_device", "round_robin", "metis", "heft"};
  EXPECT_EQ(did_you_mean("metsi", names), " (did you mean 'metis'?)");
  EXPECT_EQ(did_you_mean("round_robbin", names), " (did you mean 'round_robin'?)");
  EXPECT_EQ(did_you_mean("transformer", names), "");
  EXPECT_EQ(join({"a", "b"}), "a, b");
}

}  // namespace
}  // namespace gopt::core
