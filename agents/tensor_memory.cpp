#include "agents/tensor_memory.h"

#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

// LibTorch 2.3 made Allocator::allocate non-const and added the pure copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define GOPT_ALLOCATE_CONST
#define GOPT_ALLOCATOR_HAS_COPY_DATA 1
#else
#define GOPT_ALLOCATE_CONST const
#define GOPT_ALLOCATOR_HAS_COPY_DATA 0
#endif

namespace gopt::agents {
namespace {

thread_local int scope_depth = 0;

// Every cached block starts with a header holding its size; the tensor's data follows at
// kHeaderBytes, which keeps LibTorch's 64-byte alignment.
constexpr std::size_t kHeaderBytes = 64;
constexpr std::size_t kPageBytes = 4096;

class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(c10::Allocator* fallback)
      : fallback_(fallback), fallback_raw_(fallback->raw_deleter()) {}

  c10::DataPtr allocate(std::size_t n) GOPT_ALLOCATE_CONST override {
    if (scope_depth == 0 || n < TensorCacheScope::kMinCachedBytes) {
      if (fallback_raw_ == nullptr) return fallback_->allocate(n);
      if (n == 0) return {nullptr, nullptr, &CachingCpuAllocator::release, cpu()};
      // LibTorch's own block, behind a header that says so, so that one deleter frees
      // every block this allocator hands out (see raw_deleter).
      c10::DataPtr block = fallback_->allocate(n + kHeaderBytes);
      void* base = block.release_context();
      std::memcpy(base, &kFromFallback, sizeof kFromFallback);
      void* data = static_cast<char*>(base) + kHeaderBytes;
      return {data, data, &CachingCpuAllocator::release, cpu()};
    }
    const std::size_t size = (n + kHeaderBytes + kPageBytes - 1) / kPageBytes * kPageBytes;
    void* base = take(size);
    if (base == nullptr) {
      if (posix_memalign(&base, kPageBytes, size) != 0) throw std::bad_alloc();
      std::memcpy(base, &size, sizeof size);
    }
    void* data = static_cast<char*>(base) + kHeaderBytes;
    return {data, data, &CachingCpuAllocator::release, cpu()};
  }

  // LibTorch's raw interface (raw_allocate / raw_deallocate, which PyTorch 2.x's CPU LSTM
  // uses) needs one deleter for every block. It is `release` whenever LibTorch's allocator
  // has a raw deleter of its own to free the blocks taken from it.
  c10::DeleterFnPtr raw_deleter() const override {
    return fallback_raw_ == nullptr ? nullptr : &CachingCpuAllocator::release;
  }

#if GOPT_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
#endif

  TensorCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  static void release(void* data);
  static c10::Device cpu() { return c10::Device(c10::DeviceType::CPU); }

  // The header of a block taken from LibTorch's allocator: a cached block's header holds
  // its size, which is never 0.
  static constexpr std::size_t kFromFallback = 0;

  // A free block of `size` bytes, or null (a miss).
  void* take(std::size_t size) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) {
      ++stats_.misses;
      return nullptr;
    }
    void* base = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= size;
    ++stats_.hits;
    return base;
  }

  void give_back(void* base) const {
    std::size_t size = 0;
    std::memcpy(&size, base, sizeof size);
    std::lock_guard<std::mutex> lock(mutex_);
    if (size > TensorCacheScope::kMaxCachedBytes) {
      std::free(base);
      return;
    }
    if (stats_.cached_bytes + size > TensorCacheScope::kMaxCachedBytes) {
      for (auto& [block_size, blocks] : free_) {
        for (void* b : blocks) std::free(b);
      }
      free_.clear();
      stats_.cached_bytes = 0;
      ++stats_.flushes;
    }
    free_[size].push_back(base);
    stats_.cached_bytes += size;
  }

  c10::Allocator* fallback_;
  c10::DeleterFnPtr fallback_raw_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::size_t, std::vector<void*>> free_;
  mutable TensorCacheStats stats_;
};

// Installed once, on the first scope, and never destroyed: tensors may outlive main.
CachingCpuAllocator* allocator() {
  static CachingCpuAllocator* const instance = [] {
    auto* a = new CachingCpuAllocator(c10::GetCPUAllocator());
    // Priority 1: above LibTorch's default CPU allocator, registered at 0.
    c10::SetCPUAllocator(a, 1);
    return a;
  }();
  return instance;
}

void CachingCpuAllocator::release(void* data) {
  if (data == nullptr) return;
  void* base = static_cast<char*>(data) - kHeaderBytes;
  std::size_t size = 0;
  std::memcpy(&size, base, sizeof size);
  if (size == kFromFallback) {
    allocator()->fallback_raw_(base);
  } else {
    allocator()->give_back(base);
  }
}

}  // namespace

TensorCacheScope::TensorCacheScope() {
  (void)allocator();
  ++scope_depth;
}

TensorCacheScope::~TensorCacheScope() { --scope_depth; }

TensorCacheStats tensor_cache_stats() { return allocator()->stats(); }

}  // namespace gopt::agents
