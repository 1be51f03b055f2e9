// Writing the results file's groups and attributes (experiments/results/hdf5_write.h).
#include "experiments/results/hdf5_write.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "experiments/results/hdf5_digests.h"
#include "experiments/results/hdf5_io.h"
#include "experiments/results/hdf5_read.h"
#include "experiments/results/results_file.h"

namespace gopt::experiments::h5 {
namespace {

// A new group `sub` under the group `g` (named `object`).
Handle create_subgroup(const std::string& file, hid_t g, const std::string& object,
                       const char* sub) {
  return check(H5Gcreate2(g, sub, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, file,
               object + "/" + sub, "cannot create the group");
}

// A `learning_curve` group under `parent` (named `object`): one dataset per field.
void write_curve(const std::string& file, hid_t parent, const std::string& object,
                 const std::vector<agents::LearningCurvePoint>& curve) {
  Handle c = create_subgroup(file, parent, object, "learning_curve");
  Writer cw(file, c.get(), object + "/learning_curve");
  std::vector<std::int64_t> step;
  std::vector<std::int64_t> samples;
  std::vector<double> best;
  std::vector<double> mean;
  std::vector<double> wall;
  for (const auto& p : curve) {
    step.push_back(p.step);
    samples.push_back(p.samples);
    best.push_back(p.best_step_time_s);
    mean.push_back(p.mean_step_time_s);
    wall.push_back(p.wall_s);
  }
  cw.dataset("step", step, H5T_STD_I64LE, H5T_NATIVE_INT64);
  cw.dataset("samples", samples, H5T_STD_I64LE, H5T_NATIVE_INT64);
  cw.dataset("best_step_time_s", best, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
  cw.dataset("mean_step_time_s", mean, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
  cw.dataset("wall_s", wall, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
}

// A learner's `best_improvements` group under `parent` (named `object`): the samples that
// improved its best step time, and those step times.
void write_improvements(const std::string& file, hid_t parent, const std::string& object,
                        const std::vector<agents::BestImprovement>& improvements) {
  Handle g = create_subgroup(file, parent, object, "best_improvements");
  Writer w(file, g.get(), object + "/best_improvements");
  std::vector<std::int64_t> samples;
  std::vector<double> best;
  for (const auto& i : improvements) {
    samples.push_back(i.samples);
    best.push_back(i.step_time_s);
  }
  w.dataset("samples", samples, H5T_STD_I64LE, H5T_NATIVE_INT64);
  w.dataset("best_step_time_s", best, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
}

// A result's scalar attributes: its key and facts, options, provenance, budget and, for
// validation results, the measurement.
void write_result_attributes(Writer& w, const RunResult& r) {
  w.attr("workload", r.key.workload);
  w.attr("agent", r.key.agent);
  w.attr("seed", r.key.seed);
  w.attr("order", r.order);
  w.attr("agent_type", r.agent_type);
  w.attr("learner", r.learner);
  w.attr("held_out", r.held_out);
  w.attr("graph", r.graph);
  w.attr("hardware", r.hardware);
  w.attr("problem_seed", r.problem_seed);
  w.attr("num_nodes", r.num_nodes);
  w.attr("num_devices", static_cast<std::int64_t>(r.num_devices));
  w.attr("best_step_time_s", r.best_step_time_s);
  w.attr("oom", r.oom);
  w.attr("oom_device", static_cast<std::int64_t>(r.oom_device));
  w.attr("lower_bound_critical_path_s", r.lower_bound_critical_path_s);
  w.attr("lower_bound_work_s", r.lower_bound_work_s);
  if (r.lower_bound_s > 0) w.attr("lower_bound_s", r.lower_bound_s);
  w.attr("bytes_moved", r.bytes_moved);
  w.attr("wall_s", r.wall_s);
  w.attr("samples", r.samples);
  if (r.reward != "simulated") {  // format 2.5; absent: simulated
    w.attr("reward", r.reward);
    w.attr("reward_executions", r.reward_executions);
  }
  w.attr("format_minor_version", kResultsFormatMinorVersion);
  // Text that is not UTF-8 (a Latin-1 path in an option) is written with U+FFFD in its
  // place rather than losing the result, as the run history is (hdf5_digests.cpp).
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  w.attr("options", nlohmann::json(r.options).dump(-1, ' ', false, kReplace));
  if (!r.resolved_options.empty()) {
    w.attr("resolved_options", nlohmann::json(r.resolved_options).dump(-1, ' ', false, kReplace));
  }
  if (!r.provenance.empty()) {
    for (const auto& [key, field] : provenance_fields(r.provenance)) w.attr(key, *field);
  }
  if (r.budget) {
    w.attr("budget_steps", r.budget->max_steps);
    w.attr("budget_samples", r.budget->max_samples);
    w.attr("budget_seconds", r.budget->max_seconds);
  }
  if (r.measured_step_time_s >= 0) {
    w.attr("measured_step_time_s", r.measured_step_time_s);
    w.attr("measured_backend", r.measured_backend);
    w.attr("measured_spread", r.measured_spread);
    w.attr("op_times", r.op_times);
    w.attr("op_times_in_sample", r.op_times_in_sample);
  }
}

// The `decision` group (only the parts the decision has; none when it is empty).
void write_decision(const std::string& file, hid_t g, const std::string& object,
                    const core::Decision& decision) {
  if (!decision.placement && !decision.priority && !decision.fusion) return;
  Handle d = create_subgroup(file, g, object, "decision");
  Writer dw(file, d.get(), object + "/decision");
  if (decision.placement) {
    dw.dataset("placement", *decision.placement, H5T_STD_I32LE, H5T_NATIVE_INT32);
  }
  if (decision.priority) {
    dw.dataset("priority", *decision.priority, H5T_STD_I32LE, H5T_NATIVE_INT32);
  }
  if (decision.fusion) dw.dataset("fusion", *decision.fusion, H5T_STD_I32LE, H5T_NATIVE_INT32);
}

// The `devices` group: per-device busy time and peak memory.
void write_devices(const std::string& file, hid_t g, const std::string& object,
                   const RunResult& r) {
  Handle d = create_subgroup(file, g, object, "devices");
  Writer dw(file, d.get(), object + "/devices");
  dw.dataset("busy_s", r.device_busy_s, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
  dw.dataset("peak_memory_bytes", r.device_peak_memory_bytes, H5T_STD_I64LE, H5T_NATIVE_INT64);
}

}  // namespace

void write_result_group(const std::string& file, hid_t results, const RunResult& r) {
  const std::string name = result_group_name(r.key);
  const std::string object = "/results/" + name;
  Handle g = replace_group(file, results, name, object);
  Writer w(file, g.get(), object);
  write_result_attributes(w, r);
  write_decision(file, g.get(), object, r.decision);
  write_devices(file, g.get(), object, r);
  if (r.learner) write_curve(file, g.get(), object, r.learning_curve);
  if (!r.best_improvements.empty()) {
    write_improvements(file, g.get(), object, r.best_improvements);
  }
  w.attr("digest", result_digest(r));
  // Written last: a group without it was interrupted mid-write and is not a result.
  w.attr("complete", static_cast<std::int64_t>(1));
}

// Writes a running job's group under /running (replacing its previous one); `complete`
// last, as for results.
void write_running_group(const std::string& file, hid_t root, const RunningJob& j) {
  if (!has_link(file, root, kRunningGroup)) {
    check(H5Gcreate2(root, kRunningGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, file,
          "/running", "cannot create the group");
  }
  Handle running = check(H5Gopen2(root, kRunningGroup, H5P_DEFAULT), H5Gclose, file, "/running",
                         "cannot open the group");
  const std::string name = result_group_name(j.rows.at(0));
  const std::string object = "/running/" + name;
  Handle g = replace_group(file, running.get(), name, object);
  Writer w(file, g.get(), object);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& k : j.rows) rows.push_back({k.workload, k.agent, k.seed});
  w.attr("rows", rows.dump());
  w.attr("agent_type", j.agent_type);
  w.attr("state", j.state);
  if (!j.message.empty()) w.attr("message", j.message);
  w.attr("max_steps", j.max_steps);
  w.attr("updated", j.updated);
  w.attr("host", j.host);
  w.attr("pid", j.pid);
  write_curve(file, g.get(), object, j.learning_curve);
  w.attr("digest", running_digest(j));
  w.attr("complete", static_cast<std::int64_t>(1));
}

void write_measured_group(const std::string& file, hid_t root, const Measurement& m) {
  if (!has_link(file, root, kMeasuredGroup)) {
    check(H5Gcreate2(root, kMeasuredGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, file,
          "/measured", "cannot create the group");
  }
  Handle measured = check(H5Gopen2(root, kMeasuredGroup, H5P_DEFAULT), H5Gclose, file, "/measured",
                          "cannot open the group");
  const std::string name = result_group_name(m.key);
  const std::string object = "/measured/" + name;
  Handle g = replace_group(file, measured.get(), name, object);
  Writer w(file, g.get(), object);
  w.attr("workload", m.key.workload);
  w.attr("agent", m.key.agent);
  w.attr("seed", m.key.seed);
  w.attr("simulated_step_time_s", m.simulated_step_time_s);
  w.attr("measured_step_time_s", m.measured_step_time_s);
  w.attr("measured_spread", m.measured_spread);
  w.attr("repeats", m.repeats);
  w.attr("rounds", m.rounds);
  w.attr("warmup_steps", m.warmup_steps);
  w.attr("cpu_share", m.cpu_share);
  w.attr("fusion_dropped", m.fusion_dropped);
  w.attr("fused_groups", m.fused_groups);
  w.attr("fused_ops", m.fused_ops);
  w.attr("fused_loop_ops", m.fused_loop_ops);
  w.attr("measured_backend", m.measured_backend);
  w.attr("profile", m.profile);
  w.attr("measured_at", m.measured_at);
  for (const auto& [key, field] : provenance_fields(m.provenance)) w.attr(key, *field);
  w.dataset("step_times_s", m.step_times_s, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
  w.attr("format_minor_version", kResultsFormatMinorVersion);
  w.attr("digest", measurement_digest(m));
  w.attr("complete", static_cast<std::int64_t>(1));
}

// Removes the running jobs that will write `key` (their result is in the file now).
void remove_running(const std::string& file, hid_t root, const ResultKey& key) {
  if (!has_link(file, root, kRunningGroup)) return;
  Handle running = check(H5Gopen2(root, kRunningGroup, H5P_DEFAULT), H5Gclose, file, "/running",
                         "cannot open the group");
  for (const auto& name : member_names(file, running.get(), "/running")) {
    bool writes_key = name == result_group_name(key);
    {
      Handle g(H5Gopen2(running.get(), name.c_str(), H5P_DEFAULT), H5Gclose);
      if (!writes_key && g.valid()) {
        AttrReader a(file, g.get(), "/running/" + name);
        if (a.has("rows")) {
          const auto rows = nlohmann::json::parse(a.string("rows"), nullptr, false);
          const nlohmann::json k = {key.workload, key.agent, key.seed};
          writes_key = rows.is_array() && std::find(rows.begin(), rows.end(), k) != rows.end();
        }
      }
    }
    if (writes_key && H5Ldelete(running.get(), name.c_str(), H5P_DEFAULT) < 0) {
      fail(file, "/running/" + name, "cannot remove the running job's group");
    }
  }
}

void remove_all_running(const std::string& file, hid_t root) {
  if (has_link(file, root, kRunningGroup) && H5Ldelete(root, kRunningGroup, H5P_DEFAULT) < 0) {
    fail(file, "/running", "cannot remove the earlier run's running jobs");
  }
}

void write_run_metadata(const std::string& file, hid_t f, const RunMetadata& m) {
  Writer root(file, f, "/");
  RunMetadata stored = m;
  stored.history.clear();
  if (AttrReader(file, f, "/").has("start_time")) {
    stored = read_metadata(file, f);
  } else {
    root.attr("experiment", m.experiment);
    root.attr("table", m.table);
    root.attr("config_source", m.config_source);
    root.attr("config", m.config_yaml);
    root.attr("start_time", m.start_time);
    for (const auto& [key, field] : provenance_fields(m.provenance)) root.attr(key, *field);
  }
  RunRecord run{m.start_time, m.provenance, std::string()};
  if (m.config_yaml != stored.config_yaml) run.config_yaml = m.config_yaml;
  stored.history.push_back(std::move(run));
  root.attr("history", history_json(stored.history));
  root.attr("last_start_time", m.start_time);
  root.attr("metadata_digest", metadata_digest(stored));
}

}  // namespace gopt::experiments::h5
