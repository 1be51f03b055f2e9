// Real execution backends: run one training step of a graph under a Decision on real
// devices with real tensors of the graph's shapes (LibTorch kernels), and report the
// measured step time and per-op times. This is what calibrates the cost model and validates
// the simulator (docs/hardware-backend.md). The header is LibTorch-free: LibTorch is a
// private dependency of gopt_hardware_backend.
//
//   auto backend = make_backend(BackendKind::kCpu, /*num_devices=*/2);   // throws when absent
//   ExecutionResult r = backend->execute(graph, decision, ExecutionOptions().with_timed_steps(5));
//   use(r.step_time_s, r.op_time_s, r.num_proxy_ops);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/compiled_graph.h"
#include "core/decision.h"
#include "core/errors.h"
#include "core/graph.h"
#include "core/options.h"

namespace gopt::hardware::backend {

using core::Bytes;
using core::DeviceId;
using core::NodeId;
using core::Seconds;

/// Which real devices a backend runs on.
enum class BackendKind {
  kCpu,   ///< each device is a worker thread with one LibTorch intra-op thread
  kCuda,  ///< each device is one GPU (needs a CUDA-enabled LibTorch and a GPU)
};

[[nodiscard]] std::string_view to_string(BackendKind kind);  ///< "cpu", "cuda"
/// Parses "cpu" / "cuda"; throws InputError naming `field` and the valid names otherwise.
[[nodiscard]] BackendKind backend_kind_from_string(const std::string& name,
                                                   const std::string& field = "--backend");

/// The backend cannot run here (no GPU, a CPU-only LibTorch): an expected situation that
/// callers report (tests skip) rather than a bug.
class BackendUnavailable : public core::Error {
 public:
  using core::Error::Error;
};

/// How a backend runs its workers; defaults here and nowhere else.
struct BackendOptions {
  /// Pin each device's worker thread to a CPU of its own (the first `num_devices` CPUs this
  /// process may use), so that the OS does not move workers between cores mid-step. Without
  /// effect when the process may use fewer CPUs than there are devices.
  GOPT_OPTION(bool, pin_workers, true)
};

/// How to measure one decision; defaults here and nowhere else.
struct ExecutionOptions {
  GOPT_OPTION(int, warmup_steps,
              2)  ///< steps run first and discarded (allocator, caches, lazy init)
  GOPT_OPTION(int, timed_steps, 5)  ///< steps whose median is reported
  /// Keep the per-op and per-copy start/end times of the median step (for traces and tests).
  GOPT_OPTION(bool, record_timeline, false)
  /// Keep the kernels of the graph's unfused ops, with their operands, for the next execute
  /// of the same graph object, and take those the last one kept: a learner on measured
  /// rewards executes hundreds of decisions of one graph, and making the operands (random
  /// tensors) takes most of a short execution. Each op gets the same kernel shapes either
  /// way, on its device; the warm-up steps run as without.
  GOPT_OPTION(bool, reuse_kernels, false)
};

/// A real cross-device copy in one step: `bytes` of `producer`'s output sent to `dst`.
struct CopyRecord {
  NodeId producer = 0;
  DeviceId src = 0;
  DeviceId dst = 0;
  Bytes bytes = 0;
  Seconds start_s = 0;  ///< relative to the step start
  Seconds end_s = 0;    ///< when the copy landed on `dst`
};

/// What one decision measured.
struct ExecutionResult {
  Seconds step_time_s = 0;            ///< median over the timed steps
  std::vector<Seconds> step_times_s;  ///< every timed step, in order
  /// Per op: the median over the timed steps of its kernel time (0 for ops with no work);
  /// a fused group's time is its first member's (topological order), 0 the others'.
  std::vector<Seconds> op_time_s;
  /// Timeline of the median step (only with ExecutionOptions::record_timeline):
  /// per op, start and end relative to the step start (a fused group's for each of its
  /// members); and every copy.
  std::vector<Seconds> op_start_s;
  std::vector<Seconds> op_end_s;
  std::vector<CopyRecord> copies;
  std::int32_t num_copies = 0;  ///< copies per step
  Bytes bytes_copied = 0;       ///< bytes copied between devices per step
  /// Ops run as a documented proxy (same FLOPs and bytes, another kernel), by op type.
  std::map<std::string, std::int32_t> proxy_ops;
  std::int32_t num_proxy_ops = 0;
  /// Median over the timed steps of the busiest worker's CPU time over the step's wall time
  /// (CPU backend): 1 when no other process took its CPU, 0.5 when it ran half of the step.
  /// Below 1 the measured step time includes waiting for a CPU: the machine is shared.
  double cpu_share = 0;
  /// Every worker ran pinned to its CPU (Backend::worker_cpus()) throughout.
  bool pinned = false;
  /// Fused groups of the decision (two or more ops each) run as one kernel, their member
  /// ops, and the members computed inside fused elementwise loops (the others, library
  /// calls and the like, ran their own kernels inside their group's task; see
  /// docs/hardware-backend.md "Fusion").
  std::int32_t fused_groups = 0;
  std::int32_t fused_ops = 0;
  std::int32_t fused_loop_ops = 0;

  /// (max - min) / median of the timed steps: the run-to-run noise.
  [[nodiscard]] double spread() const;
};

/// One real execution backend with a fixed number of devices.
class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  [[nodiscard]] virtual BackendKind kind() const = 0;
  [[nodiscard]] virtual DeviceId num_devices() const = 0;
  /// "cpu: 2 worker threads pinned to CPUs 0, 1, 1 LibTorch intra-op thread each" and the
  /// like.
  [[nodiscard]] virtual std::string describe() const = 0;
  /// The CPU each device's worker is pinned to, in device order; empty when unpinned
  /// (BackendOptions::pin_workers off, or fewer usable CPUs than devices).
  [[nodiscard]] virtual std::vector<int> worker_cpus() const = 0;

  /// Runs warm-up and timed steps of `graph` under `decision`: each device runs the ops
  /// placed on it in the decision's priority order (ties in topological order), every
  /// cross-device data edge is a real copy issued when its producer finishes, and an op
  /// starts only when all its inputs are on its device. The decision's fusion is executed:
  /// each fused group (simulator/fusion.h) runs as one task, its elementwise members in
  /// fused loops on the CPU (docs/hardware-backend.md "Fusion"). Throws InputError for an
  /// invalid decision.
  [[nodiscard]] virtual ExecutionResult execute(const core::Graph& graph,
                                                const core::Decision& decision,
                                                const ExecutionOptions& options = {}) = 0;
};

/// Creates a backend. Throws BackendUnavailable when `kind` cannot run here (CUDA without
/// a GPU or with a CPU-only LibTorch, fewer GPUs than asked) and InputError for
/// `num_devices` < 1.
[[nodiscard]] std::unique_ptr<Backend> make_backend(BackendKind kind, DeviceId num_devices,
                                                    const BackendOptions& options = {});

/// The CPUs this process may run on (its affinity mask), in increasing order; empty where
/// the OS does not say.
[[nodiscard]] std::vector<int> usable_cpus();

/// Why CUDA cannot run here, or nullopt when it can (a CUDA-enabled LibTorch sees a GPU).
[[nodiscard]] std::optional<std::string> cuda_unavailable_reason();

}  // namespace gopt::hardware::backend
