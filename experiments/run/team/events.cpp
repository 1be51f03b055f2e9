#include "experiments/run/team/events.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <type_traits>

#include "core/errors.h"

namespace gopt::experiments {
namespace {

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
  w.pod<std::uint64_t>(r.best_improvements.size());
  for (const auto& i : r.best_improvements) {
    w.pod(i.samples);
    w.pod(i.step_time_s);
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
  const auto improvements = in.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < improvements; ++i) {
    agents::BestImprovement b;
    b.samples = in.pod<std::int64_t>();
    b.step_time_s = in.pod<double>();
    r.best_improvements.push_back(b);
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

}  // namespace

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

// --- Before the run ----------------------------------------------------------------------

std::vector<std::uint8_t> encode_start(const RunStart& start) {
  Writer w;
  w.pod<std::uint64_t>(start.done.size());
  for (const auto& k : start.done) {
    w.text(k.workload);
    w.text(k.agent);
    w.pod(k.seed);
  }
  return w.take();
}

RunStart decode_start(const std::vector<std::uint8_t>& bytes) {
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

std::vector<std::uint8_t> encode_plan(const std::vector<int>& rank_of) {
  Writer w;
  w.pods(std::vector<std::int32_t>(rank_of.begin(), rank_of.end()));
  return w.take();
}

std::vector<std::int32_t> decode_plan(const std::vector<std::uint8_t>& bytes) {
  Reader in(bytes);
  auto plan = in.pods<std::int32_t>();
  in.expect_end();
  return plan;
}

}  // namespace gopt::experiments
