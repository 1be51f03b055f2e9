// The caching CPU allocator learners train under (agents/tensor_memory.h): blocks come back
// for the same size inside a scope, nothing changes outside one, and numbers are unchanged.
#include "agents/tensor_memory.h"

#include <c10/core/CPUAllocator.h>
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

// LibTorch's raw interface frees a block by its data pointer through the allocator's one
// raw deleter; PyTorch 2.x's CPU LSTM (HDP's encoder) allocates its workspace through it.
// Without a raw deleter, raw_deallocate failed an internal assert there.
TEST(TensorMemoryTest, TheRawInterfaceFreesCachedAndUncachedBlocks) {
  { const TensorCacheScope installed; }
  c10::Allocator* cpu = c10::GetCPUAllocator();
  ASSERT_NE(cpu->raw_deleter(), nullptr);
  auto write_and_free = [&](std::size_t bytes) {
    auto* block = static_cast<unsigned char*>(cpu->raw_allocate(bytes));
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % 64, 0u);
    block[0] = 1;
    block[bytes - 1] = 2;
    cpu->raw_deallocate(block);
  };
  write_and_free(100);  // outside a scope: LibTorch's own block
  // A size no other test allocates, so that the cache holds no block of it yet.
  constexpr std::size_t kOddSize = (std::size_t{5} << 20) + 12345;
  const auto before = tensor_cache_stats();
  {
    const TensorCacheScope cache;
    write_and_free(100);             // below the cache's bound
    write_and_free(kOddSize);        // a miss, then returned to the cache
    write_and_free(kOddSize);        // served from the cache
    auto empty = torch::empty({0});  // no bytes at all
    EXPECT_EQ(empty.numel(), 0);
    torch::manual_seed(1);
    torch::nn::LSTM lstm(torch::nn::LSTMOptions(8, 4).bidirectional(true));
    auto out = std::get<0>(lstm->forward(torch::randn({5, 1, 8})));
    EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{5, 1, 8}));
  }
  const auto after = tensor_cache_stats();
  EXPECT_EQ(after.misses, before.misses + 1);
  EXPECT_EQ(after.hits, before.hits + 1);
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
