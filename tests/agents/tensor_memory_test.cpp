// The caching CPU allocator learners train under (agents/tensor_memory.h): blocks come back
// for the same size inside a scope, nothing changes outside one, and numbers are unchanged.
#include "agents/tensor_memory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <thread>

namespace {

using gopt::agents::tensor_cache_stats;
using gopt::agents::TensorCacheScope;

// 1 MiB of floats: above the cache's lower bound.
constexpr std::int64_t kLarge = 1 << 18;

TEST(TensorMemoryTest, AFreedBlockServesTheNextTensorOfItsSizeInsideAScope) {
  const TensorCacheScope cache;
  const void* first = nullptr;
  {
    auto t = torch::empty({kLarge});
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
  }
  const auto before = tensor_cache_stats();
  auto again = torch::empty({kLarge});
  const auto after = tensor_cache_stats();
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.misses, before.misses);
}

TEST(TensorMemoryTest, OutsideAScopeAndForSmallTensorsLibTorchAllocatesAsAlways) {
  { const TensorCacheScope installed; }  // the allocator is installed, no scope is open
  const auto before = tensor_cache_stats();
  auto large = torch::ones({kLarge});
  {
    const TensorCacheScope cache;
    auto small = torch::ones({1024});  // 4 KiB
    EXPECT_EQ(small.sum().item<float>(), 1024.0F);
  }
  const auto after = tensor_cache_stats();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(large.sum().item<float>(), static_cast<float>(kLarge));
}

TEST(TensorMemoryTest, ABlockFreedOnAnotherThreadReturnsToTheCache) {
  const TensorCacheScope cache;
  auto t = torch::empty({kLarge + 4096});
  const void* data = t.data_ptr();
  std::thread([moved = std::move(t)]() mutable { moved = torch::Tensor(); }).join();
  auto again = torch::empty({kLarge + 4096});
  EXPECT_EQ(again.data_ptr(), data);
}

TEST(TensorMemoryTest, ResultsAreTheSameWithAndWithoutTheCache) {
  torch::manual_seed(3);
  auto a = torch::randn({600, 300});
  auto b = torch::randn({300, 500});
  auto plain = torch::relu(a.matmul(b)).sum(1);
  torch::Tensor cached;
  {
    const TensorCacheScope cache;
    for (int i = 0; i < 3; ++i) cached = torch::relu(a.matmul(b)).sum(1);
  }
  EXPECT_TRUE(torch::equal(plain, cached));
}

}  // namespace
