// The two ready queues of a compute device: a set of topological ranks when the decision
// has no priorities (pop = lowest rank), and a min-heap of (priority, rank) keys when it
// has (pop = highest priority, then lowest rank). Both keep their capacity between runs.
//
//   RankSet ranks;  ranks.resize(num_ops);  ranks.push(5);  ranks.push(2);  ranks.pop();  // 2
//   ReadyHeap heap; heap.push(ready_key(/*rank=*/5, /*priority=*/1)); heap.pop();
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/errors.h"

namespace gopt::simulator {

/// The ready-queue key of an op or fused group: higher priority first, then lower
/// topological rank (TensorFlow's executor order). The priority is mapped to 32 bits that
/// sort the other way and placed above the rank.
inline std::uint64_t ready_key(std::uint32_t rank, std::int32_t priority) {
  const auto biased = static_cast<std::uint32_t>(priority) ^ 0x80000000u;
  return (static_cast<std::uint64_t>(~biased) << 32) | rank;
}

/// Min-heap of ready keys. Pops move the hole down to a leaf with one branch-free
/// comparison per level, then sift the last key up (Floyd's bottom-up heap): ready queues
/// of large graphs hold hundreds of ops.
class ReadyHeap {
 public:
  void reserve(std::size_t n) { heap_.reserve(n); }
  void clear() { heap_.clear(); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  void push(std::uint64_t key) {
    heap_.push_back(key);
    sift_up(heap_.size() - 1, key);
  }
  /// The smallest key. Popping an empty heap is an internal error.
  std::uint64_t pop() {
    GOPT_ASSERT(!heap_.empty(), "pop from an empty ready queue");
    std::uint64_t* h = heap_.data();
    const std::uint64_t top = h[0];
    const std::uint64_t last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return top;
    std::size_t hole = 0;
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child + 1 < n) {
        child += static_cast<std::size_t>(h[child + 1] < h[child]);
      } else if (child >= n) {
        break;
      }
      h[hole] = h[child];
      hole = child;
    }
    sift_up(hole, last);
    return top;
  }

 private:
  void sift_up(std::size_t i, std::uint64_t key) {
    std::uint64_t* h = heap_.data();
    while (i > 0) {
      std::size_t parent = (i - 1) / 2;
      if (h[parent] <= key) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = key;
  }

  std::vector<std::uint64_t> heap_;
};

/// A set of topological ranks in [0, resize()'s bound) as a two-level bitmap (a bit per
/// rank, a summary bit per word), so push and pop-min cost a few instructions. Ranks become
/// ready nearly in increasing order, so the scan for the first non-empty summary word is
/// short.
class RankSet {
 public:
  void resize(std::size_t num_ranks) {
    num_ranks_ = num_ranks;
    words_.assign((num_ranks + 63) / 64, 0);
    summary_.assign((words_.size() + 63) / 64 + 1, 0);
    summary_.back() = 1;  // sentinel: stops the scan in pop() (never reached when non-empty)
    first_ = summary_.size() - 1;
    size_ = 0;
  }
  void clear() {
    if (size_ != 0) {
      std::fill(words_.begin(), words_.end(), 0);
      std::fill(summary_.begin(), summary_.end() - 1, 0);
    }
    first_ = summary_.size() - 1;
    size_ = 0;
  }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  /// Adds `rank`, which is not in the set (< the bound; a rank past it is an internal
  /// error).
  void push(std::uint32_t rank) {
    GOPT_ASSERT(rank < num_ranks_, "rank outside the ready set");
    const std::size_t w = rank >> 6;
    words_[w] |= std::uint64_t{1} << (rank & 63);
    const std::size_t s = w >> 6;
    summary_[s] |= std::uint64_t{1} << (w & 63);
    first_ = std::min(first_, s);
    ++size_;
  }
  /// Removes and returns the lowest rank. Popping an empty set is an internal error.
  std::uint32_t pop() {
    GOPT_ASSERT(size_ != 0, "pop from an empty ready set");
    std::size_t s = first_;
    while (summary_[s] == 0) ++s;
    first_ = s;
    const std::uint64_t summary = summary_[s];
    const std::size_t w = s * 64 + static_cast<std::size_t>(__builtin_ctzll(summary));
    std::uint64_t bits = words_[w];
    const auto rank =
        static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
    bits &= bits - 1;
    words_[w] = bits;
    if (bits == 0) summary_[s] = summary & (summary - 1);
    --size_;
    return rank;
  }

 private:
  std::size_t num_ranks_ = 0;
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> summary_;
  std::size_t first_ = 0;  // no summary word before it is non-empty
  std::size_t size_ = 0;
};

}  // namespace gopt::simulator
