// A caching allocator for LibTorch's CPU tensors, used while a learner trains. A PPO update
// on a graph of 60k ops allocates and frees the same few hundred tensors of tens of
// megabytes at every forward and backward pass; glibc hands blocks that large to mmap and
// back to the kernel at each free, so every pass paid again for zeroing fresh pages (20% of
// a PPO update on gnmt_8 was in the kernel's page-fault path). The learners (GO's training
// loop, HDP) open a scope; the header is free of LibTorch's.
#pragma once

#include <cstddef>

namespace gopt::agents {

/// While an instance lives, LibTorch CPU tensors of at least kMinCachedBytes allocated by
/// the calling thread come from (and on release return to) a process-wide cache of freed
/// blocks keyed by size, instead of from malloc and back. Other threads and other times
/// allocate from LibTorch's allocator as always (behind a 64-byte header, so that one
/// deleter serves LibTorch's raw interface), so the hardware backend's op timings are
/// unchanged.
/// The cache holds at most kMaxCachedBytes of free blocks; a block that would exceed it
/// empties the cache first (a new job's working set replaces the last one's). Numbers are
/// unchanged: only where the bytes live changes. Scopes nest.
///
///   TensorCacheScope cache;   // in a learner's training loop
///   ... forward and backward passes ...
class TensorCacheScope {
 public:
  TensorCacheScope();
  ~TensorCacheScope();
  TensorCacheScope(const TensorCacheScope&) = delete;
  TensorCacheScope& operator=(const TensorCacheScope&) = delete;

  static constexpr std::size_t kMinCachedBytes = std::size_t{256} << 10;  ///< 256 KiB
  static constexpr std::size_t kMaxCachedBytes = std::size_t{2} << 30;    ///< 2 GiB
};

/// What the cache has done since the process started (tests and benchmarks).
struct TensorCacheStats {
  std::size_t hits = 0;          ///< allocations served from the cache
  std::size_t misses = 0;        ///< cacheable allocations that found no block of their size
  std::size_t cached_bytes = 0;  ///< bytes of free blocks held now
  std::size_t flushes = 0;       ///< times the cache was emptied to stay under its bound
};
[[nodiscard]] TensorCacheStats tensor_cache_stats();

}  // namespace gopt::agents
