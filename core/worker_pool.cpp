#include "core/worker_pool.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>

namespace gopt::core {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

WorkerPool::WorkerPool(int threads) {
  for (int w = 1; w < threads; ++w) threads_.emplace_back([this, w] { serve(w); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::run(std::size_t count, const std::function<void(int, std::size_t)>& item) {
  if (count == 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    item_ = &item;
    count_ = count;
    next_ = 0;
    failure_ = nullptr;
    failed_index_ = count;
    busy_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  if (!threads_.empty()) wake_.notify_all();
  work(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
  item_ = nullptr;
  if (failure_) {
    std::exception_ptr failure = std::move(failure_);
    failure_ = nullptr;
    std::rethrow_exception(failure);
  }
}

void WorkerPool::serve(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
    }
    work(worker);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

// Takes items until none is left, or until an item before the next one has failed.
void WorkerPool::work(int worker) {
  for (;;) {
    std::size_t i;
    const std::function<void(int, std::size_t)>* item;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_ >= count_ || next_ > failed_index_) return;
      i = next_++;
      item = item_;
    }
    try {
      (*item)(worker, i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (i < failed_index_) {
        failed_index_ = i;
        failure_ = std::current_exception();
      }
    }
  }
}

}  // namespace gopt::core
