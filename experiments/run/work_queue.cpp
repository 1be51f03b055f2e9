#include "experiments/run/work_queue.h"

#include <chrono>
#include <utility>

#include "core/errors.h"

namespace gopt::experiments {

WorkQueue::WorkQueue(std::vector<std::ptrdiff_t> waits_for, const std::atomic<bool>* stop)
    : waits_for_(std::move(waits_for)),
      taken_(waits_for_.size(), 0),
      ended_(waits_for_.size(), 0),
      stop_(stop) {
  for (std::size_t i = 0; i < waits_for_.size(); ++i) {
    const auto w = waits_for_[i];
    GOPT_ASSERT(
        w < 0 || (static_cast<std::size_t>(w) < i && waits_for_[static_cast<std::size_t>(w)] < 0),
        "a work item may only wait for an earlier item that waits for none");
  }
}

std::optional<std::size_t> WorkQueue::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (stop_ && stop_->load()) return std::nullopt;
    while (first_ < taken_.size() && taken_[first_]) ++first_;
    if (first_ == taken_.size()) return std::nullopt;
    for (std::size_t i = first_; i < taken_.size(); ++i) {
      const auto w = waits_for_[i];
      if (!taken_[i] && (w < 0 || ended_[static_cast<std::size_t>(w)])) {
        taken_[i] = 1;
        return i;
      }
    }
    // Every item left waits for one that was handed out and has not ended; the timeout
    // notices the stop flag, which nobody signals.
    cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

void WorkQueue::ended(std::size_t i) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ended_[i] = 1;
  }
  cv_.notify_all();
}

}  // namespace gopt::experiments
