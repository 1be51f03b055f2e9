// Reading the results file back: format and version checks, metadata, results and
// running jobs (experiments/results/hdf5_read.h, read_results_file of
// experiments/results/results_file.h).
#include "experiments/results/hdf5_read.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "experiments/results/hdf5_digests.h"
#include "experiments/results/hdf5_io.h"
#include "experiments/results/results_file.h"

namespace gopt::experiments {
namespace h5 {
namespace {

// --- format and version ------------------------------------------------------------------

// The root attributes `format` and `format_version` of an open file: a gopt results file of
// a version this build reads, which it returns.
std::int64_t check_format_version(const std::string& file, hid_t f) {
  AttrReader root(file, f, "/");
  if (!root.has("format") || root.string("format") != kResultsFormatName) {
    fail(file, "",
         "not a gopt results file (expected the root attribute format = '" +
             std::string(kResultsFormatName) + "', written by `gopt run`)");
  }
  const std::int64_t version = root.int64("format_version");
  if (version < 1) {
    fail(file, "",
         "results format version " + std::to_string(version) +
             " is not one gopt ever wrote (the file is damaged)");
  }
  if (version > kResultsFormatVersion) {
    fail(file, "",
         "results format version " + std::to_string(version) +
             " is newer than this gopt reads (versions " +
             std::to_string(kOldestReadResultsFormatVersion) + " to " +
             std::to_string(kResultsFormatVersion) + "); update gopt");
  }
  return version;
}

// Opens an existing file, checking it is a gopt results file of a version we read, which
// goes to `version`.
Handle open_results(const std::string& file, unsigned flags, std::int64_t& version) {
  silence_hdf5();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) fail(file, "", "no such file");
  if (H5Fis_hdf5(file.c_str()) <= 0) {
    fail(file, "",
         "not an HDF5 file (or truncated before its header was written); expected a gopt "
         "results file written by `gopt run`");
  }
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  // Readers skip HDF5's file lock so that a file a running `gopt run` writes can be read.
  if (flags == H5F_ACC_RDONLY) H5Pset_file_locking(fapl.get(), false, true);
  hid_t id = H5Fopen(file.c_str(), flags, fapl.get());
  if (id < 0) {
    fail(file, "",
         flags == H5F_ACC_RDONLY
             ? "cannot open the HDF5 file (truncated or damaged)"
             : "cannot open the HDF5 file for writing (truncated or damaged, or another "
               "`gopt run` has it open)");
  }
  Handle f(id, H5Fclose);
  version = check_format_version(file, f.get());
  if (!has_link(file, f.get(), "results"))
    fail(file, "/results", "missing group (truncated file?)");
  return f;
}

// --- results and running jobs --------------------------------------------------------------

// The `learning_curve` group under `group` (named `name`).
std::vector<agents::LearningCurvePoint> read_curve(const std::string& file, hid_t group,
                                                   const std::string& name) {
  Handle c = check(H5Gopen2(group, "learning_curve", H5P_DEFAULT), H5Gclose, file,
                   name + "/learning_curve", "cannot open the group");
  std::string cn = name + "/learning_curve";
  auto step = read_dataset<std::int64_t>(file, c.get(), cn, "step", H5T_NATIVE_INT64);
  auto samples = read_dataset<std::int64_t>(file, c.get(), cn, "samples", H5T_NATIVE_INT64);
  auto best = read_dataset<double>(file, c.get(), cn, "best_step_time_s", H5T_NATIVE_DOUBLE);
  auto mean = read_dataset<double>(file, c.get(), cn, "mean_step_time_s", H5T_NATIVE_DOUBLE);
  auto wall = read_dataset<double>(file, c.get(), cn, "wall_s", H5T_NATIVE_DOUBLE);
  if (samples.size() != step.size() || best.size() != step.size() || mean.size() != step.size() ||
      wall.size() != step.size()) {
    fail(file, cn, "datasets of different lengths");
  }
  std::vector<agents::LearningCurvePoint> curve;
  for (std::size_t i = 0; i < step.size(); ++i) {
    curve.push_back({step[i], samples[i], best[i], mean[i], wall[i]});
  }
  return curve;
}

// The `best_improvements` group under `group` (named `name`).
std::vector<agents::BestImprovement> read_improvements(const std::string& file, hid_t group,
                                                       const std::string& name) {
  const std::string gn = name + "/best_improvements";
  Handle g = check(H5Gopen2(group, "best_improvements", H5P_DEFAULT), H5Gclose, file, gn,
                   "cannot open the group");
  auto samples = read_dataset<std::int64_t>(file, g.get(), gn, "samples", H5T_NATIVE_INT64);
  auto best = read_dataset<double>(file, g.get(), gn, "best_step_time_s", H5T_NATIVE_DOUBLE);
  if (best.size() != samples.size()) fail(file, gn, "datasets of different lengths");
  std::vector<agents::BestImprovement> improvements;
  for (std::size_t i = 0; i < samples.size(); ++i) improvements.push_back({samples[i], best[i]});
  return improvements;
}

// A running job's group under /running (written by write_running_group).
RunningJob read_running(const std::string& file, hid_t group, const std::string& name) {
  AttrReader a(file, group, name);
  RunningJob j;
  try {
    for (const auto& row : nlohmann::json::parse(a.string("rows"))) {
      j.rows.push_back({row.at(0).get<std::string>(), row.at(1).get<std::string>(),
                        row.at(2).get<std::uint64_t>()});
    }
  } catch (const nlohmann::json::exception& e) {
    fail(file, name,
         std::string("attribute 'rows': expected a JSON list of [workload, agent, seed] (") +
             e.what() + ")");
  }
  j.agent_type = a.string("agent_type");
  j.state = a.string("state");
  if (a.has("message")) j.message = a.string("message");
  j.max_steps = a.int64("max_steps");
  j.updated = a.string("updated");
  j.host = a.string("host");
  j.pid = a.int64("pid");
  j.learning_curve = read_curve(file, group, name);
  if (a.uint64("digest") != running_digest(j)) {
    fail(file, name, "the running job's contents do not match its digest (the file is damaged)");
  }
  return j;
}

// A result's scalar attributes: its key and facts and, for validation results, the
// measurement.
void read_result_attributes(const AttrReader& a, RunResult& r) {
  r.key.workload = a.string("workload");
  r.key.agent = a.string("agent");
  r.key.seed = a.uint64("seed");
  r.order = a.int64("order");
  r.agent_type = a.string("agent_type");
  r.learner = a.int64("learner") != 0;
  r.held_out = a.int64("held_out") != 0;
  r.graph = a.string("graph");
  r.hardware = a.string("hardware");
  r.problem_seed = a.uint64("problem_seed");
  r.num_nodes = a.int64("num_nodes");
  r.num_devices = static_cast<std::int32_t>(a.int64("num_devices"));
  r.best_step_time_s = a.number("best_step_time_s");
  r.oom = a.int64("oom") != 0;
  r.oom_device = static_cast<std::int32_t>(a.int64("oom_device"));
  r.lower_bound_critical_path_s = a.number("lower_bound_critical_path_s");
  r.lower_bound_work_s = a.number("lower_bound_work_s");
  if (a.has("lower_bound_s")) r.lower_bound_s = a.number("lower_bound_s");  // later 1.x files
  r.bytes_moved = a.int64("bytes_moved");
  r.wall_s = a.number("wall_s");
  r.samples = a.int64("samples");
  if (a.has("reward")) {  // format 2.5, learners on measured rewards
    r.reward = a.string("reward");
    r.reward_executions = a.int64("reward_executions");
  }
  if (a.has("format_minor_version")) r.format_minor_version = a.int64("format_minor_version");
  if (a.has("measured_step_time_s")) {  // validation results only
    r.measured_step_time_s = a.number("measured_step_time_s");
    r.measured_backend = a.string("measured_backend");
    r.measured_spread = a.number("measured_spread");
    if (a.has("op_times")) r.op_times = a.string("op_times");  // absent before it existed
    if (a.has("op_times_in_sample")) r.op_times_in_sample = a.int64("op_times_in_sample") != 0;
  }
}

// The JSON object of strings in `attribute` (the agent's options), into `out`.
void read_options(const std::string& file, const std::string& name, const AttrReader& a,
                  const char* attribute, std::map<std::string, std::string>& out) {
  try {
    auto options = nlohmann::json::parse(a.string(attribute));
    for (auto it = options.begin(); it != options.end(); ++it) {
      out[it.key()] = it.value().get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    fail(file, name,
         std::string("attribute '") + attribute + "': expected a JSON object of strings (" +
             e.what() + ")");
  }
}

// What ran: the options as configured and resolved, the provenance and a learner's budget
// (the last three since format version 2).
void read_what_ran(const std::string& file, const std::string& name, const AttrReader& a,
                   RunResult& r) {
  read_options(file, name, a, "options", r.options);
  if (a.has("resolved_options"))
    read_options(file, name, a, "resolved_options", r.resolved_options);
  for (const auto& [key, field] : provenance_fields(r.provenance)) {  // format version 2
    if (a.has(key)) *field = a.string(key);
  }
  if (a.has("budget_steps")) {  // learners, format version 2
    agents::TrainBudget budget;
    budget.max_steps = a.int64("budget_steps");
    budget.max_samples = a.int64("budget_samples");
    budget.max_seconds = a.number("budget_seconds");
    r.budget = budget;
  }
}

// The `decision` group, when the result has one, and the `devices` group.
void read_decision_and_devices(const std::string& file, hid_t group, const std::string& name,
                               RunResult& r) {
  if (has_link(file, group, "decision")) {
    Handle d = check(H5Gopen2(group, "decision", H5P_DEFAULT), H5Gclose, file, name + "/decision",
                     "cannot open the group");
    std::string dn = name + "/decision";
    if (has_link(file, d.get(), "placement")) {
      r.decision.placement =
          read_dataset<std::int32_t>(file, d.get(), dn, "placement", H5T_NATIVE_INT32);
    }
    if (has_link(file, d.get(), "priority")) {
      r.decision.priority =
          read_dataset<std::int32_t>(file, d.get(), dn, "priority", H5T_NATIVE_INT32);
    }
    if (has_link(file, d.get(), "fusion")) {
      r.decision.fusion = read_dataset<std::int32_t>(file, d.get(), dn, "fusion", H5T_NATIVE_INT32);
    }
  }
  Handle d = check(H5Gopen2(group, "devices", H5P_DEFAULT), H5Gclose, file, name + "/devices",
                   "missing group (truncated file?)");
  std::string dn = name + "/devices";
  r.device_busy_s = read_dataset<double>(file, d.get(), dn, "busy_s", H5T_NATIVE_DOUBLE);
  r.device_peak_memory_bytes =
      read_dataset<std::int64_t>(file, d.get(), dn, "peak_memory_bytes", H5T_NATIVE_INT64);
}

RunResult read_result(const std::string& file, hid_t group, const std::string& name) {
  AttrReader a(file, group, name);
  RunResult r;
  read_result_attributes(a, r);
  read_what_ran(file, name, a, r);
  read_decision_and_devices(file, group, name, r);
  if (has_link(file, group, "learning_curve")) r.learning_curve = read_curve(file, group, name);
  if (has_link(file, group, "best_improvements")) {
    r.best_improvements = read_improvements(file, group, name);
  }
  if (a.has("digest") && a.uint64("digest") != result_digest(r)) {  // early 1.x files: none
    fail(file, name, "the result's contents do not match its digest (the file is damaged)");
  }
  return r;
}

// The complete results under /results, into `out` (a group a killed run left half-written
// is counted in out.incomplete).
void read_results(const std::string& file, hid_t f, ResultsFile& out) {
  Handle results = check(H5Gopen2(f, "results", H5P_DEFAULT), H5Gclose, file, "/results",
                         "cannot open the group (truncated file?)");
  for (const auto& name : member_names(file, results.get(), "/results")) {
    std::string object = "/results/" + name;
    Handle g = check(H5Gopen2(results.get(), name.c_str(), H5P_DEFAULT), H5Gclose, file, object,
                     "cannot open the result group (truncated file?)");
    AttrReader a(file, g.get(), object);
    if (!a.has("complete") || a.int64("complete") != 1) {
      ++out.incomplete;
      continue;
    }
    out.results.push_back(read_result(file, g.get(), object));
  }
}

// The complete running jobs under /running, into `out`.
void read_running_jobs(const std::string& file, hid_t f, ResultsFile& out) {
  if (!has_link(file, f, kRunningGroup)) return;
  Handle running = check(H5Gopen2(f, kRunningGroup, H5P_DEFAULT), H5Gclose, file, "/running",
                         "cannot open the group (truncated file?)");
  for (const auto& name : member_names(file, running.get(), "/running")) {
    std::string object = "/running/" + name;
    Handle g = check(H5Gopen2(running.get(), name.c_str(), H5P_DEFAULT), H5Gclose, file, object,
                     "cannot open the running job's group (truncated file?)");
    AttrReader a(file, g.get(), object);
    if (a.has("complete") && a.int64("complete") == 1) {
      out.running.push_back(read_running(file, g.get(), object));
    }
  }
}

// A measurement's group under /measured (written by write_measured_group).
Measurement read_measurement(const std::string& file, hid_t group, const std::string& name) {
  AttrReader a(file, group, name);
  Measurement m;
  m.key.workload = a.string("workload");
  m.key.agent = a.string("agent");
  m.key.seed = a.uint64("seed");
  m.simulated_step_time_s = a.number("simulated_step_time_s");
  m.measured_step_time_s = a.number("measured_step_time_s");
  m.measured_spread = a.number("measured_spread");
  m.repeats = a.int64("repeats");
  m.rounds = a.int64("rounds");
  m.warmup_steps = a.int64("warmup_steps");
  m.cpu_share = a.number("cpu_share");
  m.fusion_dropped = a.int64("fusion_dropped") != 0;
  m.measured_backend = a.string("measured_backend");
  m.profile = a.string("profile");
  m.measured_at = a.string("measured_at");
  for (const auto& [key, field] : provenance_fields(m.provenance)) *field = a.string(key);
  m.format_minor_version = a.int64("format_minor_version");
  if (m.format_minor_version >= 3) {
    m.step_times_s = read_dataset<double>(file, group, name, "step_times_s", H5T_NATIVE_DOUBLE);
  }
  if (m.format_minor_version >= 4) {
    m.fused_groups = a.int64("fused_groups");
    m.fused_ops = a.int64("fused_ops");
    m.fused_loop_ops = a.int64("fused_loop_ops");
  }
  if (a.uint64("digest") != measurement_digest(m)) {
    fail(file, name, "the measurement's contents do not match its digest (the file is damaged)");
  }
  return m;
}

// The complete measurements under /measured (format 2.2), into `out`.
void read_measurements(const std::string& file, hid_t f, ResultsFile& out) {
  if (!has_link(file, f, kMeasuredGroup)) return;
  Handle measured = check(H5Gopen2(f, kMeasuredGroup, H5P_DEFAULT), H5Gclose, file, "/measured",
                          "cannot open the group (truncated file?)");
  for (const auto& name : member_names(file, measured.get(), "/measured")) {
    std::string object = "/measured/" + name;
    Handle g = check(H5Gopen2(measured.get(), name.c_str(), H5P_DEFAULT), H5Gclose, file, object,
                     "cannot open the measurement's group (truncated file?)");
    AttrReader a(file, g.get(), object);
    if (a.has("complete") && a.int64("complete") == 1) {
      out.measurements.push_back(read_measurement(file, g.get(), object));
    }
  }
  std::sort(out.measurements.begin(), out.measurements.end(),
            [](const Measurement& a, const Measurement& b) { return a.key < b.key; });
}

// --- metadata ------------------------------------------------------------------------------

// The root attribute `history` (format version 2), written by history_json.
std::vector<RunRecord> read_history(const std::string& file, const std::string& text) {
  std::vector<RunRecord> history;
  const auto list = nlohmann::json::parse(text, nullptr, false);
  if (!list.is_array()) fail(file, "/", "attribute 'history': expected a JSON list of runs");
  try {
    for (const auto& j : list) {
      RunRecord run;
      run.start_time = j.at("start_time").get<std::string>();
      for (const auto& [key, field] : provenance_fields(run.provenance)) {
        *field = j.at(key).get<std::string>();
      }
      if (j.contains("config")) run.config_yaml = j.at("config").get<std::string>();
      history.push_back(std::move(run));
    }
  } catch (const nlohmann::json::exception& e) {
    fail(file, "/",
         std::string("attribute 'history': expected a JSON list of runs with start_time, "
                     "gopt_version, git_revision, host, cpu_numerics, libraries, command and "
                     "config_hash (") +
             e.what() + ")");
  }
  return history;
}

}  // namespace

RunMetadata read_metadata(const std::string& file, hid_t f) {
  AttrReader a(file, f, "/");
  // A run killed between creating the file and writing its attributes leaves them absent.
  auto text = [&](const char* key) { return a.has(key) ? a.string(key) : std::string(); };
  RunMetadata m;
  m.experiment = text("experiment");
  m.table = text("table");
  m.config_source = text("config_source");
  m.config_yaml = text("config");
  m.start_time = text("start_time");
  for (const auto& [key, field] : provenance_fields(m.provenance)) *field = text(key);
  if (a.has("history")) m.history = read_history(file, a.string("history"));
  if (a.has("metadata_digest") && a.uint64("metadata_digest") != metadata_digest(m)) {
    fail(file, "/", "the run's attributes do not match their digest (the file is damaged)");
  }
  return m;
}

}  // namespace h5

ResultsFile read_results_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  ResultsFile out;
  h5::Handle f = h5::open_results(file, H5F_ACC_RDONLY, out.format_version);
  out.path = file;
  out.metadata = h5::read_metadata(file, f.get());
  const h5::AttrReader root(file, f.get(), "/");
  if (root.has("format_minor_version")) {
    out.format_minor_version = root.int64("format_minor_version");
  }
  h5::read_results(file, f.get(), out);
  h5::read_running_jobs(file, f.get(), out);
  h5::read_measurements(file, f.get(), out);
  std::stable_sort(out.results.begin(), out.results.end(),
                   [](const RunResult& a, const RunResult& b) {
                     return a.order != b.order ? a.order < b.order : a.key < b.key;
                   });
  return out;
}

const Measurement* ResultsFile::measurement(const ResultKey& key) const {
  const auto it =
      std::lower_bound(measurements.begin(), measurements.end(), key,
                       [](const Measurement& m, const ResultKey& k) { return m.key < k; });
  return it != measurements.end() && it->key == key ? &*it : nullptr;
}

}  // namespace gopt::experiments
