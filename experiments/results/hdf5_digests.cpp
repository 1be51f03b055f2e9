// Content digests of results, running jobs and run metadata (experiments/results/hdf5_digests.h).
#include "experiments/results/hdf5_digests.h"

#include <map>
#include <nlohmann/json.hpp>

namespace gopt::experiments::h5 {
namespace {

class Digest {
 public:
  void bytes(const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
      hash_ = (hash_ ^ p[i]) * 1099511628211ULL;
    }
  }
  void u64(std::uint64_t v) { bytes(&v, sizeof v); }
  void i64(std::int64_t v) { bytes(&v, sizeof v); }
  void f64(double v) { bytes(&v, sizeof v); }
  void str(const std::string& v) {
    u64(v.size());
    bytes(v.data(), v.size());
  }
  template <typename T>
  void values(const std::vector<T>& v) {
    u64(v.size());
    for (const auto& x : v) bytes(&x, sizeof x);
  }
  void strings(const std::map<std::string, std::string>& m) {
    u64(m.size());
    for (const auto& [k, v] : m) {
      str(k);
      str(v);
    }
  }
  [[nodiscard]] std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 14695981039346656037ULL;
};

void curve_digest(Digest& d, const std::vector<agents::LearningCurvePoint>& curve) {
  d.u64(curve.size());
  for (const auto& p : curve) {
    d.i64(p.step);
    d.i64(p.samples);
    d.f64(p.best_step_time_s);
    d.f64(p.mean_step_time_s);
    d.f64(p.wall_s);
  }
}

}  // namespace

std::uint64_t result_digest(const RunResult& r) {
  Digest d;
  d.str(r.key.workload);
  d.str(r.key.agent);
  d.u64(r.key.seed);
  d.i64(r.order);
  d.str(r.agent_type);
  d.i64(r.learner);
  d.i64(r.held_out);
  d.str(r.graph);
  d.str(r.hardware);
  d.u64(r.problem_seed);
  d.i64(r.num_nodes);
  d.i64(r.num_devices);
  d.f64(r.best_step_time_s);
  d.i64(r.oom);
  d.i64(r.oom_device);
  d.f64(r.lower_bound_critical_path_s);
  d.f64(r.lower_bound_work_s);
  d.i64(r.bytes_moved);
  d.f64(r.wall_s);
  d.i64(r.samples);
  if (r.reward != "simulated") {  // format 2.5: only then, so earlier rows keep their digests
    d.str(r.reward);
    d.i64(r.reward_executions);
  }
  d.strings(r.options);
  d.strings(r.resolved_options);
  if (r.measured_step_time_s >= 0) {
    d.f64(r.measured_step_time_s);
    d.str(r.measured_backend);
    d.f64(r.measured_spread);
    d.str(r.op_times);
    d.i64(r.op_times_in_sample);
  }
  // Provenance (format version 2) enters only when recorded, so that results of version-1
  // files keep their digests.
  if (!r.provenance.empty()) {
    for (const auto& [key, field] : provenance_fields(r.provenance)) d.str(*field);
  }
  if (r.budget) {
    d.i64(r.budget->max_steps);
    d.i64(r.budget->max_samples);
    d.f64(r.budget->max_seconds);
  }
  for (const auto* field : {&r.decision.placement, &r.decision.priority, &r.decision.fusion}) {
    d.i64(field->has_value());
    if (*field) d.values(**field);
  }
  d.values(r.device_busy_s);
  d.values(r.device_peak_memory_bytes);
  if (r.learner) curve_digest(d, r.learning_curve);
  // Recorded since format 2.1; only when there are some, so older rows keep their digests.
  if (!r.best_improvements.empty()) {
    d.u64(r.best_improvements.size());
    for (const auto& i : r.best_improvements) {
      d.i64(i.samples);
      d.f64(i.step_time_s);
    }
  }
  return d.value();
}

std::uint64_t running_digest(const RunningJob& j) {
  Digest d;
  d.u64(j.rows.size());
  for (const auto& k : j.rows) {
    d.str(k.workload);
    d.str(k.agent);
    d.u64(k.seed);
  }
  for (const auto* v : {&j.agent_type, &j.state, &j.message, &j.updated, &j.host}) d.str(*v);
  d.i64(j.max_steps);
  d.i64(j.pid);
  curve_digest(d, j.learning_curve);
  return d.value();
}

std::uint64_t measurement_digest(const Measurement& m) {
  Digest d;
  d.str(m.key.workload);
  d.str(m.key.agent);
  d.u64(m.key.seed);
  d.f64(m.simulated_step_time_s);
  d.f64(m.measured_step_time_s);
  d.f64(m.measured_spread);
  d.i64(m.repeats);
  d.i64(m.rounds);
  d.i64(m.warmup_steps);
  d.f64(m.cpu_share);
  d.i64(m.fusion_dropped);
  for (const auto* v : {&m.measured_backend, &m.profile, &m.measured_at}) d.str(*v);
  for (const auto& [key, field] : provenance_fields(m.provenance)) d.str(*field);
  for (double t : m.step_times_s) d.f64(t);  // none before format 2.3: its digest unchanged
  // Format 2.4's fusion counts; all 0 in older files, whose digests are then unchanged.
  if (m.fused_groups != 0 || m.fused_ops != 0 || m.fused_loop_ops != 0) {
    d.i64(m.fused_groups);
    d.i64(m.fused_ops);
    d.i64(m.fused_loop_ops);
  }
  return d.value();
}

std::string history_json(const std::vector<RunRecord>& history) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& run : history) {
    nlohmann::json j;
    j["start_time"] = run.start_time;
    for (const auto& [key, field] : provenance_fields(run.provenance)) j[key] = *field;
    if (!run.config_yaml.empty()) j["config"] = run.config_yaml;
    list.push_back(std::move(j));
  }
  return list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::uint64_t metadata_digest(const RunMetadata& m) {
  Digest d;
  const Provenance& p = m.provenance;
  for (const auto* v : {&m.experiment, &m.table, &m.config_source, &m.config_yaml, &p.gopt_version,
                        &p.git_revision, &p.host, &m.start_time}) {
    d.str(*v);
  }
  // Attributes added later enter only when present, so that adding one never makes a
  // file written before it read as damaged.
  for (const auto* v : {&p.cpu_numerics, &p.libraries, &p.command, &p.config_hash}) {
    if (!v->empty()) d.str(*v);
  }
  if (!m.history.empty()) d.str(history_json(m.history));
  return d.value();
}

}  // namespace gopt::experiments::h5
