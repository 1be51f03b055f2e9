#include "experiments/run_team.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <type_traits>

#include "core/errors.h"
#include "experiments/distributed.h"

namespace gopt::experiments {
namespace {

using Clock = std::chrono::steady_clock;

// --- Bytes ---------------------------------------------------------------------------
// Little more than memcpy: the ranks of a launch run the same build, and a mismatch is
// caught by the magic number and the exact length.
constexpr std::uint32_t kEventMagic = 0x67747632;  // "gtv2": results carry provenance

class Writer {
 public:
  template <typename T>
  void pod(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void text(const std::string& s) {
    pod<std::uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  template <typename T>
  void pods(const std::vector<T>& v) {
    pod<std::uint64_t>(v.size());
    for (const auto& x : v) pod(x);
  }
  void texts(const std::map<std::string, std::string>& m) {
    pod<std::uint64_t>(m.size());
    for (const auto& [k, v] : m) {
      text(k);
      text(v);
    }
  }
  template <typename T>
  void optional_pods(const std::optional<std::vector<T>>& v) {
    pod<std::uint8_t>(v ? 1 : 0);
    if (v) pods(*v);
  }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<std::uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  T pod() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string text() {
    const auto n = count(1);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> pods() {
    const auto n = count(sizeof(T));
    std::vector<T> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.push_back(pod<T>());
    return v;
  }
  std::map<std::string, std::string> texts() {
    const auto n = count(2 * sizeof(std::uint64_t));
    std::map<std::string, std::string> m;
    for (std::size_t i = 0; i < n; ++i) {
      auto k = text();
      m[k] = text();
    }
    return m;
  }
  template <typename T>
  std::optional<std::vector<T>> optional_pods() {
    if (pod<std::uint8_t>() == 0) return std::nullopt;
    return pods<T>();
  }
  void expect_end() const {
    if (at_ != bytes_.size()) throw core::Error("a team event has trailing bytes");
  }

 private:
  // A count of items of at least `item_bytes` each, checked against what is left.
  std::size_t count(std::size_t item_bytes) {
    const auto n = pod<std::uint64_t>();
    if (n > (bytes_.size() - at_) / std::max<std::size_t>(item_bytes, 1)) need(bytes_.size());
    return static_cast<std::size_t>(n);
  }
  void need(std::size_t n) const {
    if (n > bytes_.size() - at_) throw core::Error("a team event is truncated");
  }
  const std::vector<std::uint8_t>& bytes_;
  std::size_t at_ = 0;
};

void write_result(Writer& w, const RunResult& r) {
  w.text(r.key.workload);
  w.text(r.key.agent);
  w.pod(r.key.seed);
  w.pod(r.order);
  w.text(r.agent_type);
  w.pod<std::uint8_t>(r.learner);
  w.pod<std::uint8_t>(r.held_out);
  w.text(r.graph);
  w.text(r.hardware);
  w.pod(r.problem_seed);
  w.pod(r.num_nodes);
  w.pod(r.num_devices);
  w.pod(r.best_step_time_s);
  w.pod<std::uint8_t>(r.oom);
  w.pod(r.oom_device);
  w.pod(r.lower_bound_critical_path_s);
  w.pod(r.lower_bound_work_s);
  w.pod(r.lower_bound_s);
  w.pod(r.bytes_moved);
  w.pod(r.wall_s);
  w.pod(r.samples);
  w.optional_pods(r.decision.placement);
  w.optional_pods(r.decision.priority);
  w.optional_pods(r.decision.fusion);
  w.pods(r.device_busy_s);
  w.pods(r.device_peak_memory_bytes);
  w.pod<std::uint64_t>(r.learning_curve.size());
  for (const auto& p : r.learning_curve) {
    w.pod(p.step);
    w.pod(p.samples);
    w.pod(p.best_step_time_s);
    w.pod(p.mean_step_time_s);
    w.pod(p.wall_s);
  }
  w.texts(r.options);
  w.texts(r.resolved_options);
  w.pod(r.measured_step_time_s);
  w.text(r.measured_backend);
  w.pod(r.measured_spread);
  w.text(r.op_times);
  w.pod<std::uint8_t>(r.op_times_in_sample);
  for (const auto& [name, field] : provenance_fields(r.provenance)) w.text(*field);
  w.pod<std::uint8_t>(r.budget.has_value());
  if (r.budget) {
    w.pod(r.budget->max_steps);
    w.pod(r.budget->max_samples);
    w.pod(r.budget->max_seconds);
  }
}

RunResult read_result(Reader& in) {
  RunResult r;
  r.key.workload = in.text();
  r.key.agent = in.text();
  r.key.seed = in.pod<std::uint64_t>();
  r.order = in.pod<std::int64_t>();
  r.agent_type = in.text();
  r.learner = in.pod<std::uint8_t>() != 0;
  r.held_out = in.pod<std::uint8_t>() != 0;
  r.graph = in.text();
  r.hardware = in.text();
  r.problem_seed = in.pod<std::uint64_t>();
  r.num_nodes = in.pod<std::int64_t>();
  r.num_devices = in.pod<std::int32_t>();
  r.best_step_time_s = in.pod<double>();
  r.oom = in.pod<std::uint8_t>() != 0;
  r.oom_device = in.pod<std::int32_t>();
  r.lower_bound_critical_path_s = in.pod<double>();
  r.lower_bound_work_s = in.pod<double>();
  r.lower_bound_s = in.pod<double>();
  r.bytes_moved = in.pod<std::int64_t>();
  r.wall_s = in.pod<double>();
  r.samples = in.pod<std::int64_t>();
  r.decision.placement = in.optional_pods<core::DeviceId>();
  r.decision.priority = in.optional_pods<std::int32_t>();
  r.decision.fusion = in.optional_pods<std::int32_t>();
  r.device_busy_s = in.pods<double>();
  r.device_peak_memory_bytes = in.pods<std::int64_t>();
  const auto points = in.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < points; ++i) {
    agents::LearningCurvePoint p;
    p.step = in.pod<std::int64_t>();
    p.samples = in.pod<std::int64_t>();
    p.best_step_time_s = in.pod<double>();
    p.mean_step_time_s = in.pod<double>();
    p.wall_s = in.pod<double>();
    r.learning_curve.push_back(p);
  }
  r.options = in.texts();
  r.resolved_options = in.texts();
  r.measured_step_time_s = in.pod<double>();
  r.measured_backend = in.text();
  r.measured_spread = in.pod<double>();
  r.op_times = in.text();
  r.op_times_in_sample = in.pod<std::uint8_t>() != 0;
  for (const auto& [name, field] : provenance_fields(r.provenance)) *field = in.text();
  if (in.pod<std::uint8_t>() != 0) {
    agents::TrainBudget b;
    b.max_steps = in.pod<std::int64_t>();
    b.max_samples = in.pod<std::int64_t>();
    b.max_seconds = in.pod<double>();
    r.budget = b;
  }
  return r;
}

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string text_of(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

}  // namespace

// --- The plan --------------------------------------------------------------------------

RankPlan plan_ranks(const std::vector<double>& expected_s,
                    const std::vector<std::ptrdiff_t>& waits_for, int ranks) {
  GOPT_ASSERT(expected_s.size() == waits_for.size(), "one cost per item");
  GOPT_ASSERT(ranks >= 1, "at least one rank");
  const std::size_t n = expected_s.size();
  // Groups: an item that waits for none leads one; its waiters are its members.
  std::vector<std::vector<std::size_t>> members(n);
  std::vector<double> group_s(n, 0);
  std::vector<std::size_t> leaders;
  for (std::size_t i = 0; i < n; ++i) {
    const auto leader = waits_for[i] < 0 ? i : static_cast<std::size_t>(waits_for[i]);
    GOPT_ASSERT(leader <= i && waits_for[leader] < 0, "an item waits for an earlier leader");
    if (leader == i) {
      leaders.push_back(i);
    } else {
      members[leader].push_back(i);
    }
    group_s[leader] += expected_s[i];
  }
  std::stable_sort(leaders.begin(), leaders.end(),
                   [&](std::size_t a, std::size_t b) { return group_s[a] > group_s[b]; });
  RankPlan plan;
  plan.rank_of.assign(n, 0);
  plan.order.resize(static_cast<std::size_t>(ranks));
  std::vector<double> load(static_cast<std::size_t>(ranks), 0);
  for (const auto leader : leaders) {
    const auto r = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) -
                                            load.begin());  // the first of equal loads
    load[r] += group_s[leader];
    auto& m = members[leader];
    std::stable_sort(m.begin(), m.end(),
                     [&](std::size_t a, std::size_t b) { return expected_s[a] > expected_s[b]; });
    plan.order[r].push_back(leader);
    plan.order[r].insert(plan.order[r].end(), m.begin(), m.end());
    plan.rank_of[leader] = static_cast<int>(r);
    for (const auto i : m) plan.rank_of[i] = static_cast<int>(r);
  }
  return plan;
}

// --- Events ----------------------------------------------------------------------------

std::vector<std::uint8_t> encode_event(const TeamEvent& e) {
  Writer w;
  w.pod(kEventMagic);
  w.pod(static_cast<std::uint8_t>(e.kind));
  w.pod<std::int32_t>(e.worker);
  w.pod(e.item);
  w.pod(e.step);
  w.pod<std::uint64_t>(e.results.size());
  for (const auto& r : e.results) write_result(w, r);
  w.pod<std::uint64_t>(e.failures.size());
  for (const auto& [job, message] : e.failures) {
    w.text(job);
    w.text(message);
  }
  w.text(e.text);
  w.pod<std::uint8_t>(e.interrupted);
  return w.take();
}

TeamEvent decode_event(const std::vector<std::uint8_t>& bytes) {
  Reader in(bytes);
  if (in.pod<std::uint32_t>() != kEventMagic) {
    throw core::Error("a team event from another gopt build (the ranks must run the same one)");
  }
  TeamEvent e;
  const auto kind = in.pod<std::uint8_t>();
  if (kind > static_cast<std::uint8_t>(TeamEvent::Kind::kDone)) {
    throw core::Error("a team event of unknown kind " + std::to_string(kind));
  }
  e.kind = static_cast<TeamEvent::Kind>(kind);
  e.worker = in.pod<std::int32_t>();
  e.item = in.pod<std::int64_t>();
  e.step = in.pod<std::int64_t>();
  const auto results = in.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < results; ++i) e.results.push_back(read_result(in));
  const auto failures = in.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < failures; ++i) {
    auto job = in.text();
    e.failures.emplace_back(std::move(job), in.text());
  }
  e.text = in.text();
  e.interrupted = in.pod<std::uint8_t>() != 0;
  in.expect_end();
  return e;
}

// --- StoreRunTeam ----------------------------------------------------------------------
//
// Keys (under the launch's prefix): "hb/R" rank R's heartbeat counter; "ev/R/K" rank R's
// K-th event and "evn/R" how many it sent; "start" and "plan" from rank 0; "abort" the
// first fatal error of any rank.

struct StoreRunTeam::Impl {
  Distributed& peers;
  int rank = 0;
  int size = 1;
  double timeout_s = 60;
  double beat_s = 0.5;

  std::mutex send_mutex;  // a rank's events are numbered in the order they are sent
  std::int64_t sent = 0;
  std::map<int, Clock::time_point> last_step;  // per worker, to thin kStep events

  std::vector<std::int64_t> received;  // rank 0: events read per rank
  std::vector<char> done;              // rank 0: ranks that sent kDone

  mutable std::mutex mutex;  // guards what the heartbeat thread shares
  std::optional<std::string> failure;
  std::vector<char> watched;  // ranks whose heartbeat this rank watches
  std::condition_variable cv;
  bool stopping = false;
  std::thread beat;

  explicit Impl(Distributed& p) : peers(p) {}

  void set_failure(const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!failure) failure = message;
  }

  void beat_loop() {
    std::vector<std::int64_t> last(static_cast<std::size_t>(size), -1);
    std::vector<Clock::time_point> moved(static_cast<std::size_t>(size), Clock::now());
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      const auto watching = watched;
      lock.unlock();
      try {
        peers.add("hb/" + std::to_string(rank), 1);
        if (auto abort = peers.try_get("abort")) set_failure(text_of(*abort));
        const auto now = Clock::now();
        for (int r = 0; r < size; ++r) {
          const auto u = static_cast<std::size_t>(r);
          if (!watching[u]) continue;
          const auto beats = peers.add("hb/" + std::to_string(r), 0);
          if (beats != last[u]) {
            last[u] = beats;
            moved[u] = now;
          } else if (std::chrono::duration<double>(now - moved[u]).count() > timeout_s) {
            set_failure("rank " + std::to_string(r) + " stopped answering: no heartbeat for " +
                        std::to_string(static_cast<int>(timeout_s)) +
                        " s (killed, out of memory, or its machine is unreachable)");
          }
        }
      } catch (const std::exception& e) {
        // e names the store; hosted by rank 0, its silence is rank 0's.
        set_failure(peers.launch().agent_store
                        ? std::string(e.what())
                        : "rank 0 stopped answering (" + std::string(e.what()) + ")");
      }
      lock.lock();
      cv.wait_for(lock, std::chrono::duration<double>(beat_s));
    }
  }

  // Waits for rank 0's `key`, watching for failures.
  std::vector<std::uint8_t> wait_for(const std::string& key) {
    for (;;) {
      if (auto value = peers.try_get(key)) return *value;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure) throw core::Error(*failure);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
};

StoreRunTeam::StoreRunTeam(Distributed& peers) : impl_(std::make_unique<Impl>(peers)) {
  auto& s = *impl_;
  s.rank = peers.rank();
  s.size = peers.world_size();
  s.timeout_s = peers.timeout_s();
  s.beat_s = std::min(0.5, s.timeout_s / 10);
  s.received.assign(static_cast<std::size_t>(s.size), 0);
  s.done.assign(static_cast<std::size_t>(s.size), 0);
  s.watched.assign(static_cast<std::size_t>(s.size), 0);
  for (int r = 0; r < s.size; ++r) {
    s.watched[static_cast<std::size_t>(r)] = s.rank == 0 ? r != 0 : r == 0;
  }
  s.beat = std::thread([&s] { s.beat_loop(); });
}

StoreRunTeam::~StoreRunTeam() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->beat.join();
}

int StoreRunTeam::rank() const { return impl_->rank; }
int StoreRunTeam::size() const { return impl_->size; }

RunStart StoreRunTeam::share_start(const RunStart& mine) {
  if (impl_->rank == 0) {
    Writer w;
    w.pod<std::uint64_t>(mine.done.size());
    for (const auto& k : mine.done) {
      w.text(k.workload);
      w.text(k.agent);
      w.pod(k.seed);
    }
    impl_->peers.set("start", w.take());
    return mine;
  }
  const auto bytes = impl_->wait_for("start");
  Reader in(bytes);
  RunStart start;
  const auto n = in.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    ResultKey k;
    k.workload = in.text();
    k.agent = in.text();
    k.seed = in.pod<std::uint64_t>();
    start.done.push_back(std::move(k));
  }
  in.expect_end();
  return start;
}

void StoreRunTeam::share_plan(std::vector<int>& rank_of) {
  if (impl_->rank == 0) {
    Writer w;
    w.pods(std::vector<std::int32_t>(rank_of.begin(), rank_of.end()));
    impl_->peers.set("plan", w.take());
    return;
  }
  const auto bytes = impl_->wait_for("plan");
  Reader in(bytes);
  const auto plan = in.pods<std::int32_t>();
  in.expect_end();
  if (plan.size() != rank_of.size()) {
    throw core::Error("rank " + std::to_string(impl_->rank) + " has " +
                      std::to_string(rank_of.size()) + " work items and rank 0 " +
                      std::to_string(plan.size()) +
                      ": the ranks read different configs or results files");
  }
  rank_of.assign(plan.begin(), plan.end());
}

void StoreRunTeam::send(const TeamEvent& event) {
  auto& s = *impl_;
  GOPT_ASSERT(s.rank != 0, "rank 0 receives events, it does not send them");
  std::lock_guard<std::mutex> lock(s.send_mutex);
  if (event.kind == TeamEvent::Kind::kStep) {
    // A learner's updates can come many times a second; rank 0's display needs a few.
    const auto now = Clock::now();
    auto it = s.last_step.find(event.worker);
    if (it != s.last_step.end() && now - it->second < std::chrono::milliseconds(500)) return;
    s.last_step[event.worker] = now;
  }
  const std::string prefix = std::to_string(s.rank);
  s.peers.set("ev/" + prefix + "/" + std::to_string(s.sent), encode_event(event));
  ++s.sent;
  s.peers.add("evn/" + prefix, 1);
}

std::vector<TeamEvent> StoreRunTeam::receive() {
  auto& s = *impl_;
  GOPT_ASSERT(s.rank == 0, "only rank 0 receives events");
  std::vector<TeamEvent> events;
  for (int r = 1; r < s.size; ++r) {
    const auto u = static_cast<std::size_t>(r);
    if (s.done[u]) continue;
    const auto prefix = std::to_string(r);
    const auto count = s.peers.add("evn/" + prefix, 0);
    for (; s.received[u] < count; ++s.received[u]) {
      const auto key = "ev/" + prefix + "/" + std::to_string(s.received[u]);
      auto bytes = s.peers.try_get(key);
      GOPT_ASSERT(bytes.has_value(), "an event is stored before it is counted");
      s.peers.remove(key);
      TeamEvent e = decode_event(*bytes);
      e.rank = r;
      if (e.kind == TeamEvent::Kind::kDone) {
        s.done[u] = 1;
        std::lock_guard<std::mutex> lock(s.mutex);
        s.watched[u] = 0;  // a rank that finished may exit: its silence is no failure
      }
      events.push_back(std::move(e));
      if (s.done[u]) break;
    }
  }
  return events;
}

std::optional<std::string> StoreRunTeam::failure() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->failure;
}

void StoreRunTeam::abort(const std::string& message) {
  const std::string text = "rank " + std::to_string(impl_->rank) + " stopped: " + message;
  try {
    // The first fatal error wins; a later one would only repeat what went wrong.
    if (!impl_->peers.try_get("abort")) impl_->peers.set("abort", bytes_of(text));
  } catch (const std::exception&) {
    // the store is gone too: the others notice the silence
  }
}

}  // namespace gopt::experiments
