// The order in which `gopt run`'s workers take their work: items in a fixed order, some
// waiting for another to end first (a go_finetune or go_zero_shot job waits for the
// pretraining that writes its checkpoint). A worker takes the first item not waiting, so
// the others run beside a long pretraining, and blocks only when every item left waits.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

namespace gopt::experiments {

class WorkQueue {
 public:
  /// Items 0..n-1 with n = waits_for.size(); waits_for[i]: the item that must end before i
  /// is handed out, or -1. An item may only wait for an earlier one that waits for none,
  /// so the queue never deadlocks. `stop` (may be null): when set, next() hands out nothing.
  WorkQueue(std::vector<std::ptrdiff_t> waits_for, const std::atomic<bool>* stop);

  /// The first item not yet handed out whose wait is over; blocks while every item left
  /// waits; none when every item was handed out or the stop flag is set.
  std::optional<std::size_t> next();
  /// Item `i` ended, whatever its outcome: the items waiting for it may be handed out.
  void ended(std::size_t i);

 private:
  std::vector<std::ptrdiff_t> waits_for_;
  std::vector<char> taken_;
  std::vector<char> ended_;
  std::size_t first_ = 0;  // every item before it was handed out
  const std::atomic<bool>* stop_;
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace gopt::experiments
