// WorkerPool: a fixed team of threads that runs one indexed loop at a time, for work whose
// items are independent and whose results go to their own slots (simulating a batch of
// decisions). The calling thread is worker 0; the others wait between loops, so a loop
// costs no thread start. Which worker runs which item varies from run to run; what an item
// computes must not depend on it.
//
//   WorkerPool pool(2);
//   pool.run(decisions.size(), [&](int worker, std::size_t i) { out[i] = sims[worker](d[i]); });
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gopt::core {

/// The cores this process may run on (its CPU affinity mask), at least 1.
[[nodiscard]] int usable_cores();

class WorkerPool {
 public:
  /// A team of `threads` workers (at least 1: the caller alone).
  explicit WorkerPool(int threads = 1);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  [[nodiscard]] int size() const { return static_cast<int>(threads_.size()) + 1; }

  /// Calls `item(worker, i)` once for every i in [0, count), spread over the workers (each
  /// takes the next undone item), and returns when all are done. When items throw, the
  /// exception of the lowest such index is rethrown (the one a serial loop would have
  /// met first); items after a throwing one may or may not have run. Not reentrant: one
  /// loop at a time, from one thread.
  void run(std::size_t count, const std::function<void(int worker, std::size_t i)>& item);

 private:
  void serve(int worker);
  void work(int worker);

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  // The loop in progress, guarded by mutex_ (next_ and failure_ too).
  const std::function<void(int, std::size_t)>* item_ = nullptr;
  std::size_t count_ = 0;
  std::size_t next_ = 0;
  std::uint64_t generation_ = 0;
  int busy_ = 0;
  bool quit_ = false;
  std::size_t failed_index_ = 0;
  std::exception_ptr failure_;
};

}  // namespace gopt::core
