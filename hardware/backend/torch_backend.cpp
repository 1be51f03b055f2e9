// The LibTorch backends (CPU worker threads, CUDA GPUs): one executor, a device each.
//
// Execution of one step. Every device has a worker thread and a ready queue ordered by
// (copies first, then decision priority, higher first, then topological rank). An op is
// ready when each of its inputs is on its device: a local producer has finished, a remote
// producer's copy has landed (or, for a control or zero-byte edge, the remote producer has
// finished). When an op finishes, it issues one copy per remote device that consumes it
// (the largest edge's bytes, as the simulator does); the copy is run by the receiving
// device's worker (a CPU has no copy engine; on CUDA the receiving worker issues the peer
// copy), ahead of its ready ops, and its consumers become ready when it lands.
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "core/errors.h"
#include "core/strings.h"
#include "hardware/backend/backend.h"
#include "hardware/backend/fused_kernel.h"
#include "hardware/backend/kernels.h"
#include "hardware/backend/torch_backend.h"
#include "simulator/fusion.h"

namespace gopt::hardware::backend {
namespace {

using Clock = std::chrono::steady_clock;

/// CPU time consumed by the calling thread, seconds.
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// One intra-op thread per worker, for LibTorch (OpenMP is per thread) and OpenBLAS
/// (global; looked up at run time because LibTorch may use another BLAS).
void single_threaded_math() {
  at::set_num_threads(1);
  using SetThreads = void (*)(int);
  if (void* f = ::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) {
    reinterpret_cast<SetThreads>(f)(1);
  }
}

/// Pins `thread` to `cpu` and checks that the OS took it; false when it did not.
bool pin_to_cpu(std::thread& thread, int cpu) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set) != 0) return false;
  cpu_set_t now;
  CPU_ZERO(&now);
  if (::pthread_getaffinity_np(thread.native_handle(), sizeof(now), &now) != 0) return false;
  return CPU_COUNT(&now) == 1 && CPU_ISSET(cpu, &now);
#else
  (void)thread;
  (void)cpu;
  return false;
#endif
}

/// Keep freed blocks in the process instead of returning them to the kernel: otherwise
/// every step page-faults its large outputs afresh and the timings measure the kernel's
/// page-fault handler.
void keep_freed_memory() {
#if defined(__GLIBC__)
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

struct Task {
  std::int32_t key_copy;  // 1 for copies: they run first
  std::int32_t priority;
  std::int32_t rank;
  std::int32_t id;  // op id, or copy index when key_copy
};

bool runs_later(const Task& a, const Task& b) {
  if (a.key_copy != b.key_copy) return a.key_copy < b.key_copy;
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.rank > b.rank;
}

// A device's ready queue. A worker with nothing to run spins briefly (a dependency from the
// other device usually lands within microseconds) and then sleeps on the condition
// variable, so that an idle worker does not hold a CPU for long on a shared machine.
class ReadyQueue {
 public:
  void push(const Task& t) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      heap_.push_back(t);
      std::push_heap(heap_.begin(), heap_.end(), runs_later);
      size_.store(heap_.size(), std::memory_order_release);
    }
    ready_.notify_one();
  }
  /// Pops the next task, waiting for one; false when `stop` was raised. Waits by spinning
  /// (yielding) for up to `kSpin` first: waking a sleeping thread costs tens of
  /// microseconds, far more on a virtual machine whose idle vCPU has halted, and a
  /// cross-device dependency usually arrives sooner.
  bool pop(Task& t, const std::atomic<bool>& stop) {
    constexpr auto kSpin = std::chrono::microseconds(300);
    if (size_.load(std::memory_order_acquire) == 0) {
      auto until = Clock::now() + kSpin;
      while (size_.load(std::memory_order_acquire) == 0 && Clock::now() < until) {
        if (stop.load(std::memory_order_relaxed)) return false;
        std::this_thread::yield();
      }
    }
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !heap_.empty() || stop.load(); });
    if (heap_.empty()) return false;
    std::pop_heap(heap_.begin(), heap_.end(), runs_later);
    t = heap_.back();
    heap_.pop_back();
    size_.store(heap_.size(), std::memory_order_release);
    return true;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    heap_.clear();
    size_.store(0);
  }
  /// Wakes a sleeping worker to see `stop`.
  void wake() {
    { std::lock_guard<std::mutex> lock(mutex_); }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<Task> heap_;
  std::atomic<std::size_t> size_{0};
};

struct CopyPlan {
  NodeId producer = 0;
  DeviceId src = 0;
  DeviceId dst = 0;
  Bytes bytes = 0;
  std::vector<std::int32_t> consumers;  // units, one entry per edge that waits for this copy
  torch::Tensor from;                   // on src
  torch::Tensor to;                     // on dst
};

struct Plan {
  // Units are what a worker runs as one task: an op, or a fused group (simulator/fusion.h)
  // of the decision; without fusion, unit v is op v.
  simulator::FusionGroups groups;                     // op -> unit, and each unit's members
  std::vector<Kernel> kernels;                        // per unit
  std::vector<DeviceId> device;                       // per unit
  std::vector<std::int32_t> priority;                 // per unit: its members' highest
  std::vector<std::int32_t> rank;                     // per unit: its first member's
  std::vector<std::int32_t> deps;                     // inputs to wait for, per unit
  std::vector<std::vector<std::int32_t>> local_succ;  // units decremented when it finishes
  std::vector<std::vector<std::int32_t>> copies_of;   // copies issued when it finishes
  std::vector<CopyPlan> copies;
  std::vector<std::int32_t> tasks_on;  // units + incoming copies per device
  std::int32_t fused_groups = 0;       // units of two or more ops
  std::int32_t fused_ops = 0;          // their members
  std::int32_t fused_loop_ops = 0;     // members computed inside fused loops
  std::vector<NodeId> proxy_ops;       // ops run as a proxy

  [[nodiscard]] std::int32_t num_units() const { return groups.num_groups(); }
  [[nodiscard]] std::int32_t unit_of(NodeId v) const {
    return groups.group_of[static_cast<std::size_t>(v)];
  }
};

}  // namespace

struct TorchBackend::Impl {
  BackendKind kind;
  DeviceId num_devices;
  std::vector<int> worker_cpus;  // empty: unpinned
  // ExecutionOptions::reuse_kernels: the graph whose kernels are kept (its address, name and
  // op count), and each unfused op's kernel by (op, torch device index).
  struct KernelCache {
    const core::Graph* graph = nullptr;
    std::string name;
    NodeId ops = 0;
    std::map<std::pair<NodeId, int>, Kernel> kernels;
  } cache;

  // The kernel cache for `graph`, emptied when it held another graph's.
  std::map<std::pair<NodeId, int>, Kernel>& kernels_of(const core::Graph& graph) {
    if (cache.graph != &graph || cache.name != graph.name() || cache.ops != graph.num_nodes()) {
      cache = {&graph, graph.name(), graph.num_nodes(), {}};
    }
    return cache.kernels;
  }

  [[nodiscard]] torch::Device torch_device(DeviceId d) const {
    if (kind == BackendKind::kCuda) return {torch::kCUDA, static_cast<c10::DeviceIndex>(d)};
    return {torch::kCPU};
  }

  void synchronize(DeviceId d) const {
    if (kind == BackendKind::kCuda) torch::cuda::synchronize(d);
  }

  Plan build_plan(const core::Graph& graph, const core::CompiledGraph& cg,
                  const core::Decision& decision, bool reuse_kernels) {
    auto* kept = reuse_kernels ? &kernels_of(graph) : nullptr;
    Plan p;
    p.groups = simulator::form_fusion_groups(cg, decision);
    const auto units = static_cast<std::size_t>(p.num_units());
    p.kernels.reserve(units);
    p.device.resize(units);
    p.priority.assign(units, std::numeric_limits<std::int32_t>::min());
    p.rank.resize(units);
    p.deps.assign(units, 0);
    p.local_succ.resize(units);
    p.copies_of.resize(units);
    p.tasks_on.assign(static_cast<std::size_t>(num_devices), 0);
    bool channels_last = graph.family() != "onnx";
    for (std::int32_t g = 0; g < p.num_units(); ++g) {
      auto i = static_cast<std::size_t>(g);
      const auto begin = p.groups.members.begin() + p.groups.member_offset[i];
      const auto end = p.groups.members.begin() + p.groups.member_offset[i + 1];
      const NodeId first = *begin;
      p.device[i] = decision.device_of(first);
      p.rank[i] = cg.topological_rank()[static_cast<std::size_t>(first)];
      for (auto m = begin; m < end; ++m) {
        p.priority[i] =
            std::max(p.priority[i],
                     decision.priority ? (*decision.priority)[static_cast<std::size_t>(*m)] : 0);
      }
      ++p.tasks_on[static_cast<std::size_t>(p.device[i])];
      if (end - begin == 1) {
        const torch::Device device = torch_device(p.device[i]);
        const std::pair<NodeId, int> key{first, device.is_cuda() ? device.index() : -1};
        if (kept != nullptr) {
          if (const auto found = kept->find(key); found != kept->end()) {
            p.kernels.push_back(found->second);
            if (p.kernels.back().proxy) p.proxy_ops.push_back(first);
            continue;
          }
        }
        OpView view{&graph.node(first), {}, channels_last};
        for (auto s = cg.in_begin(first); s < cg.in_end(first); ++s) {
          auto e = cg.in_edge(s);
          if (!cg.edge_is_control(e)) view.input_bytes.push_back(cg.edge_bytes(e));
        }
        p.kernels.push_back(make_kernel(view, device));
        if (kept != nullptr) kept->emplace(key, p.kernels.back());
        if (p.kernels.back().proxy) p.proxy_ops.push_back(first);
        continue;
      }
      FusedGroupView view{&graph, &cg, {begin, end}, &p.groups.group_of, g, channels_last};
      FusedKernel fused = make_fused_kernel(view, torch_device(p.device[i]));
      p.kernels.push_back(std::move(fused.kernel));
      ++p.fused_groups;
      p.fused_ops += static_cast<std::int32_t>(end - begin);
      p.fused_loop_ops += fused.loop_ops;
      p.proxy_ops.insert(p.proxy_ops.end(), fused.proxy_members.begin(), fused.proxy_members.end());
    }
    for (NodeId u = 0; u < cg.num_nodes(); ++u) {
      const auto gu = static_cast<std::size_t>(p.unit_of(u));
      DeviceId du = p.device[gu];
      for (auto e = cg.out_begin(u); e < cg.out_end(u); ++e) {
        NodeId v = cg.out_target(e);
        const std::int32_t gv = p.unit_of(v);
        if (static_cast<std::size_t>(gv) == gu) continue;  // inside a fused group
        DeviceId dv = p.device[static_cast<std::size_t>(gv)];
        ++p.deps[static_cast<std::size_t>(gv)];
        if (dv == du || cg.edge_is_control(e) || cg.edge_bytes(e) <= 0) {
          p.local_succ[gu].push_back(gv);
          continue;
        }
        std::int32_t c = -1;
        for (auto existing : p.copies_of[gu]) {
          const auto& copy = p.copies[static_cast<std::size_t>(existing)];
          if (copy.producer == u && copy.dst == dv) c = existing;
        }
        if (c < 0) {
          c = static_cast<std::int32_t>(p.copies.size());
          p.copies.push_back(CopyPlan{u, du, dv, 0, {}, {}, {}});
          p.copies_of[gu].push_back(c);
          ++p.tasks_on[static_cast<std::size_t>(dv)];
        }
        auto& copy = p.copies[static_cast<std::size_t>(c)];
        copy.bytes = std::max(copy.bytes, cg.edge_bytes(e));
        copy.consumers.push_back(gv);
      }
    }
    for (auto& copy : p.copies) {
      auto elems = std::max<std::int64_t>(1, (copy.bytes + 3) / 4);
      copy.from = torch::rand({elems}, torch::TensorOptions().device(torch_device(copy.src)));
      copy.to = torch::empty({elems}, torch::TensorOptions().device(torch_device(copy.dst)));
    }
    return p;
  }
};

TorchBackend::TorchBackend(BackendKind kind, DeviceId num_devices, const BackendOptions& options)
    : impl_(std::make_unique<Impl>(Impl{kind, num_devices, {}, {}})) {
  if (num_devices < 1) {
    throw core::InputError("--devices", "",
                           "expected at least 1 device, found " + std::to_string(num_devices));
  }
  if (kind == BackendKind::kCuda) {
    if (auto why = cuda_unavailable_reason()) throw BackendUnavailable(*why);
    auto have = static_cast<DeviceId>(torch::cuda::device_count());
    if (have < num_devices) {
      throw BackendUnavailable("the CUDA backend was asked for " + std::to_string(num_devices) +
                               " GPUs but LibTorch sees " + std::to_string(have));
    }
  }
  if (options.pin_workers) {
    auto cpus = usable_cpus();
    if (cpus.size() >= static_cast<std::size_t>(num_devices)) {
      cpus.resize(static_cast<std::size_t>(num_devices));
      impl_->worker_cpus = std::move(cpus);
    }
  }
  single_threaded_math();
  keep_freed_memory();
}

TorchBackend::~TorchBackend() = default;

BackendKind TorchBackend::kind() const { return impl_->kind; }
DeviceId TorchBackend::num_devices() const { return impl_->num_devices; }

std::vector<int> TorchBackend::worker_cpus() const { return impl_->worker_cpus; }

std::string TorchBackend::describe() const {
  std::string pinning;
  if (!impl_->worker_cpus.empty()) {
    std::vector<std::string> cpus;
    for (int c : impl_->worker_cpus) cpus.push_back(std::to_string(c));
    pinning = impl_->worker_cpus.size() == 1 ? " pinned to CPU " + cpus.front()
                                             : " pinned to CPUs " + core::join(cpus);
  }
  if (impl_->kind == BackendKind::kCuda) {
    return "cuda: " + std::to_string(impl_->num_devices) + " GPUs, one host worker each" + pinning;
  }
  return "cpu: " + std::to_string(impl_->num_devices) + " worker threads" + pinning +
         ", 1 LibTorch intra-op thread each";
}

ExecutionResult TorchBackend::execute(const core::Graph& graph, const core::Decision& decision,
                                      const ExecutionOptions& options) {
  auto cg = core::CompiledGraph::compile(graph);
  core::validate_decision(decision, cg.num_nodes(), impl_->num_devices, "decision",
                          &cg.node_names());
  if (options.timed_steps < 1 || options.warmup_steps < 0) {
    throw core::InputError("execution options", "timed_steps",
                           "expected at least one timed step and no negative warm-up");
  }
  c10::InferenceMode inference;
  Plan plan = impl_->build_plan(graph, cg, decision, options.reuse_kernels);
  const auto num_units = static_cast<std::size_t>(plan.num_units());
  const auto num_ops = static_cast<std::size_t>(cg.num_nodes());
  const auto num_copies = plan.copies.size();
  const auto devices = static_cast<std::size_t>(impl_->num_devices);

  std::vector<ReadyQueue> queues(devices);
  std::vector<std::atomic<std::int32_t>> remaining(num_units);
  std::vector<double> op_start(num_units), op_end(num_units), copy_start(num_copies),
      copy_end(num_copies);
  std::vector<std::vector<double>> op_samples(num_units);  // per unit
  std::vector<double> worker_cpu(devices, 0.0);
  std::vector<double> cpu_shares;
  std::atomic<std::int32_t> generation{0};
  std::atomic<std::int32_t> finished{0};
  std::atomic<bool> stop{false};
  std::mutex step_mutex;  // guards step starts and ends (generation, finished, stop)
  std::condition_variable step_cv;
  Clock::time_point t0;
  std::mutex error_mutex;
  std::string error;

  auto make_ready = [&](std::int32_t v) {
    auto i = static_cast<std::size_t>(v);
    queues[static_cast<std::size_t>(plan.device[i])].push(
        Task{0, plan.priority[i], plan.rank[i], v});
  };
  auto satisfy = [&](std::int32_t v) {
    if (remaining[static_cast<std::size_t>(v)].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      make_ready(v);
    }
  };

  auto worker = [&](DeviceId d) {
    c10::InferenceMode guard;
    single_threaded_math();
    std::int32_t seen = 0;
    const std::int32_t my_tasks = plan.tasks_on[static_cast<std::size_t>(d)];
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(step_mutex);
        step_cv.wait(lock, [&] { return generation.load() != seen || stop.load(); });
      }
      if (stop.load()) return;
      seen = generation.load(std::memory_order_acquire);
      const double cpu_at_start = thread_cpu_seconds();
      try {
        for (std::int32_t done = 0; done < my_tasks;) {
          Task t{};
          if (!queues[static_cast<std::size_t>(d)].pop(t, stop)) break;  // another failed
          ++done;
          auto id = static_cast<std::size_t>(t.id);
          if (t.key_copy) {
            auto& copy = plan.copies[id];
            copy_start[id] = seconds_since(t0);
            copy.to.copy_(copy.from);
            impl_->synchronize(d);
            copy_end[id] = seconds_since(t0);
            for (std::int32_t v : copy.consumers) satisfy(v);
            continue;
          }
          auto& kernel = plan.kernels[id];
          op_start[id] = seconds_since(t0);
          if (!kernel.no_work) {
            torch::Tensor out = kernel.run(kernel.operands);
            impl_->synchronize(d);
          }
          op_end[id] = seconds_since(t0);
          for (std::int32_t v : plan.local_succ[id]) satisfy(v);
          for (auto c : plan.copies_of[id]) {
            const auto& copy = plan.copies[static_cast<std::size_t>(c)];
            queues[static_cast<std::size_t>(copy.dst)].push(Task{1, 0, plan.rank[id], c});
          }
        }
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (error.empty()) error = e.what();
        }
        stop.store(true);
        for (auto& q : queues) q.wake();
      }
      {
        std::lock_guard<std::mutex> lock(step_mutex);
        worker_cpu[static_cast<std::size_t>(d)] = thread_cpu_seconds() - cpu_at_start;
        finished.fetch_add(1, std::memory_order_acq_rel);
      }
      step_cv.notify_all();
    }
  };

  std::vector<std::thread> threads;
  threads.reserve(devices);
  ExecutionResult result;
  result.pinned = !impl_->worker_cpus.empty();
  for (DeviceId d = 0; d < impl_->num_devices; ++d) {
    threads.emplace_back(worker, d);
    // Pinned before its first step: a worker waits for the step to start.
    if (result.pinned) {
      result.pinned = pin_to_cpu(threads.back(), impl_->worker_cpus[static_cast<std::size_t>(d)]);
    }
  }

  std::vector<std::vector<double>> timelines;  // per timed step: op starts, ends, copies
  const int total = options.warmup_steps + options.timed_steps;
  for (int step = 0; step < total && !stop.load(); ++step) {
    for (auto& q : queues) q.clear();
    for (std::size_t i = 0; i < num_units; ++i) remaining[i].store(plan.deps[i]);
    for (std::size_t i = 0; i < num_units; ++i) {
      if (plan.deps[i] == 0) make_ready(static_cast<std::int32_t>(i));
    }
    {
      std::lock_guard<std::mutex> lock(step_mutex);
      finished.store(0);
      t0 = Clock::now();
      generation.fetch_add(1, std::memory_order_acq_rel);
    }
    step_cv.notify_all();
    {
      std::unique_lock<std::mutex> lock(step_mutex);
      step_cv.wait(lock, [&] { return finished.load() >= static_cast<std::int32_t>(devices); });
    }
    if (stop.load()) break;
    if (step < options.warmup_steps) continue;
    double end = 0;
    for (double e : op_end) end = std::max(end, e);
    for (double e : copy_end) end = std::max(end, e);
    result.step_times_s.push_back(end);
    // The busiest worker's CPU time over the step's wall time: 1 when it was never
    // preempted, lower when other processes took its CPU.
    double busiest = 0;
    for (std::size_t d = 0; d < devices; ++d) {
      if (plan.tasks_on[d] > 0) busiest = std::max(busiest, worker_cpu[d]);
    }
    if (end > 0) cpu_shares.push_back(std::min(1.0, busiest / end));
    for (std::size_t i = 0; i < num_units; ++i) {
      op_samples[i].push_back(plan.kernels[i].no_work ? 0.0 : op_end[i] - op_start[i]);
    }
    if (options.record_timeline) {
      std::vector<double> t = op_start;
      t.insert(t.end(), op_end.begin(), op_end.end());
      t.insert(t.end(), copy_start.begin(), copy_start.end());
      t.insert(t.end(), copy_end.begin(), copy_end.end());
      timelines.push_back(std::move(t));
    }
  }
  {
    std::lock_guard<std::mutex> lock(step_mutex);
    stop.store(true);
  }
  step_cv.notify_all();
  for (auto& t : threads) t.join();
  if (!error.empty()) {
    throw core::Error("the " + std::string(to_string(impl_->kind)) + " backend failed: " + error);
  }

  result.step_time_s = median(result.step_times_s);
  result.cpu_share = median(cpu_shares);
  // Per op: its unit's time (a fused group's on its first member, 0 on the others).
  result.op_time_s.assign(num_ops, 0.0);
  for (std::size_t g = 0; g < num_units; ++g) {
    NodeId first = plan.groups.members[static_cast<std::size_t>(plan.groups.member_offset[g])];
    result.op_time_s[static_cast<std::size_t>(first)] = median(op_samples[g]);
  }
  result.num_copies = static_cast<std::int32_t>(num_copies);
  for (const auto& c : plan.copies) result.bytes_copied += c.bytes;
  for (NodeId v : plan.proxy_ops) {
    ++result.proxy_ops[graph.node(v).op_type];
    ++result.num_proxy_ops;
  }
  result.fused_groups = plan.fused_groups;
  result.fused_ops = plan.fused_ops;
  result.fused_loop_ops = plan.fused_loop_ops;
  if (options.record_timeline && !timelines.empty()) {
    // The timed step whose time is closest to the median.
    std::size_t best = 0;
    for (std::size_t s = 0; s < result.step_times_s.size(); ++s) {
      if (std::abs(result.step_times_s[s] - result.step_time_s) <
          std::abs(result.step_times_s[best] - result.step_time_s)) {
        best = s;
      }
    }
    const auto& t = timelines[best];
    result.op_start_s.resize(num_ops);
    result.op_end_s.resize(num_ops);
    for (std::size_t v = 0; v < num_ops; ++v) {
      auto g = static_cast<std::size_t>(plan.groups.group_of[v]);
      result.op_start_s[v] = t[g];
      result.op_end_s[v] = t[num_units + g];
    }
    for (std::size_t c = 0; c < num_copies; ++c) {
      const auto& cp = plan.copies[c];
      result.copies.push_back(CopyRecord{cp.producer, cp.src, cp.dst, cp.bytes,
                                         t[2 * num_units + c], t[2 * num_units + num_copies + c]});
    }
  }
  return result;
}

}  // namespace gopt::hardware::backend
