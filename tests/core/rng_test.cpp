#include "core/rng.h"

#include <gtest/gtest.h>

namespace gopt::core {
namespace {

TEST(RngTest, SameSeedSameStream) {
  Rng a(42);
  Rng b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(RngTest, ForksAreIndependentAndReproducible) {
  Rng root(7);
  Rng f1 = root.fork(1);
  Rng f1_again = root.fork(1);
  Rng f2 = root.fork(2);
  EXPECT_EQ(f1.next(), f1_again.next());
  EXPECT_NE(Rng(7).fork(1).next(), f2.next());
  EXPECT_NE(Rng(7).next(), Rng(8).next());
}

TEST(RngTest, UniformIntStaysInRange) {
  Rng r(1);
  for (int i = 0; i < 1000; ++i) {
    auto x = r.uniform_int(-2, 3);
    EXPECT_GE(x, -2);
    EXPECT_LE(x, 3);
    double u = r.uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace gopt::core
