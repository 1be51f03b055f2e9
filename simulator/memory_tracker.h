// MemoryTracker: the bytes allocated on each device during a run, their peak, and the
// out-of-memory outcome (the first device to exceed its capacity, and when). OOM is an
// outcome, not an error: the run goes on unless the tracker was told to stop at it.
//
//   MemoryTracker memory({/*capacity_bytes=*/1 << 30, 1 << 30});
//   memory.reset(/*stop_on_oom=*/false);
//   memory.allocate(/*device=*/0, 4096, /*now_s=*/0.5);
//   memory.release(0, 4096);
//   memory.peak_bytes(0);  // 4096
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "core/compiled_graph.h"
#include "simulator/indexing.h"

namespace gopt::simulator {

using core::Bytes;
using core::DeviceId;
using core::Seconds;

class MemoryTracker {
 public:
  explicit MemoryTracker(std::vector<Bytes> capacity_bytes)
      : capacity_(std::move(capacity_bytes)),
        used_(capacity_.size(), 0),
        peak_(capacity_.size(), 0) {}

  /// Nothing allocated, no peak, no OOM.
  void reset(bool stop_on_oom) {
    std::fill(used_.begin(), used_.end(), 0);
    std::fill(peak_.begin(), peak_.end(), 0);
    oom_device_ = -1;
    oom_time_s_ = 0;
    stop_on_oom_ = stop_on_oom;
  }

  /// `bytes` more in use on `device` at `now_s`. The first allocation over a device's
  /// capacity sets the OOM outcome.
  void allocate(DeviceId device, Bytes bytes, Seconds now_s) {
    Bytes& used = used_[at(device)];
    used += bytes;
    Bytes& peak = peak_[at(device)];
    if (used > peak) {
      peak = used;
      if (used > capacity_[at(device)] && oom_device_ < 0) {
        oom_device_ = device;
        oom_time_s_ = now_s;
      }
    }
  }
  void release(DeviceId device, Bytes bytes) { used_[at(device)] -= bytes; }
  /// Adds `bytes` (signed) to what is in use on `device` and to its peak: the same run with
  /// that much more resident from time 0 (a delta simulation's other parameters).
  void shift(DeviceId device, Bytes bytes) {
    used_[at(device)] += bytes;
    peak_[at(device)] += bytes;
  }
  /// Whether some device's peak exceeds its capacity.
  [[nodiscard]] bool over_capacity() const {
    for (std::size_t d = 0; d < used_.size(); ++d) {
      if (peak_[d] > capacity_[d]) return true;
    }
    return false;
  }

  [[nodiscard]] Bytes peak_bytes(DeviceId device) const { return peak_[at(device)]; }
  [[nodiscard]] Bytes used_bytes(DeviceId device) const { return used_[at(device)]; }
  [[nodiscard]] bool oom() const { return oom_device_ >= 0; }
  /// The first device over capacity, -1 when none.
  [[nodiscard]] DeviceId oom_device() const { return oom_device_; }
  [[nodiscard]] Seconds oom_time_s() const { return oom_time_s_; }
  /// The run should stop: an OOM happened and the tracker was told to stop at one.
  [[nodiscard]] bool stop_requested() const { return stop_on_oom_ && oom_device_ >= 0; }

 private:
  std::vector<Bytes> capacity_;
  std::vector<Bytes> used_;
  std::vector<Bytes> peak_;
  DeviceId oom_device_ = -1;
  Seconds oom_time_s_ = 0;
  bool stop_on_oom_ = false;
};

}  // namespace gopt::simulator
