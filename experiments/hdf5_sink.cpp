#include "experiments/hdf5_sink.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "core/errors.h"

namespace gopt::experiments {
namespace {

// Owns one HDF5 identifier and closes it with the matching H5*close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, -1)), closer_(o.closer_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, -1);
      closer_ = o.closer_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }
  [[nodiscard]] hid_t get() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }
  /// Gives up ownership (to close it with a checked call).
  hid_t release() { return std::exchange(id_, -1); }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// HDF5 prints its error stack to stderr by default; gopt reports its own messages.
void silence_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// Errors while reading or writing a file we opened: the file is named, the object too.
[[noreturn]] void fail(const std::string& file, const std::string& object,
                       const std::string& what) {
  throw core::InputError(file, object, what);
}

Handle check(hid_t id, Handle::Closer closer, const std::string& file, const std::string& object,
             const std::string& what) {
  if (id < 0) fail(file, object, what);
  return Handle(id, closer);
}

Handle string_type() {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

// --- content digests -------------------------------------------------------------------

// FNV-1a (64-bit) over a result's values as written. HDF5 checksums its metadata (with
// the libver bounds of write_access) but not raw data or the global heap of variable-length
// strings; the digest catches damage there, which would otherwise read back as wrong
// numbers or names.
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

// The file's run history as its root attribute `history` holds it: a JSON list of runs.
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

// --- writing -------------------------------------------------------------------------

class Writer {
 public:
  Writer(std::string file, hid_t object, std::string object_name)
      : file_(std::move(file)), object_(object), name_(std::move(object_name)) {}

  // Fixed-length strings: stored inside the attribute's own header message, which HDF5
  // checksums. Variable-length ones live in the global heap, which it does not, and
  // HDF5 1.10 crashed in H5HG_read on a damaged heap (found by the damaged-file test).
  void attr(const char* key, const std::string& value) {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), std::max<std::size_t>(1, value.size()));
    H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    std::string padded = value;
    padded.resize(std::max<std::size_t>(1, value.size()), '\0');
    write_attr(key, type.get(), type.get(),
               [&](hid_t a, hid_t t) { return H5Awrite(a, t, padded.data()); });
  }
  void attr(const char* key, const char* value) { attr(key, std::string(value)); }
  void attr(const char* key, double value) {
    write_attr(key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
               [&](hid_t a, hid_t t) { return H5Awrite(a, t, &value); });
  }
  void attr(const char* key, std::int64_t value) {
    write_attr(key, H5T_STD_I64LE, H5T_NATIVE_INT64,
               [&](hid_t a, hid_t t) { return H5Awrite(a, t, &value); });
  }
  void attr(const char* key, std::uint64_t value) {
    write_attr(key, H5T_STD_U64LE, H5T_NATIVE_UINT64,
               [&](hid_t a, hid_t t) { return H5Awrite(a, t, &value); });
  }
  void attr(const char* key, bool value) { attr(key, static_cast<std::int64_t>(value ? 1 : 0)); }

  template <typename T>
  void dataset(const char* key, const std::vector<T>& values, hid_t file_type, hid_t mem_type) {
    hsize_t dims[1] = {values.size()};
    Handle space = check(H5Screate_simple(1, dims, nullptr), H5Sclose, file_, name_,
                         "cannot create a dataspace");
    Handle set = check(
        H5Dcreate2(object_, key, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
        H5Dclose, file_, name_ + "/" + key, "cannot create the dataset");
    if (!values.empty() &&
        H5Dwrite(set.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
      fail(file_, name_ + "/" + key, "cannot write the dataset (disk full?)");
    }
  }

 private:
  template <typename F>
  void write_attr(const char* key, hid_t file_type, hid_t mem_type, F&& write) {
    if (H5Aexists(object_, key) > 0) H5Adelete(object_, key);
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Handle a = check(H5Acreate2(object_, key, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose, file_, name_, std::string("cannot create attribute '") + key + "'");
    if (write(a.get(), mem_type) < 0) {
      fail(file_, name_, std::string("cannot write attribute '") + key + "'");
    }
  }

  std::string file_;
  hid_t object_;
  std::string name_;
};

// --- reading -------------------------------------------------------------------------

class AttrReader {
 public:
  AttrReader(std::string file, hid_t object, std::string object_name)
      : file_(std::move(file)), object_(object), name_(std::move(object_name)) {}

  // Absent is false; unreadable (damaged metadata) is an error, never "absent".
  [[nodiscard]] bool has(const char* key) const {
    htri_t exists = H5Aexists(object_, key);
    if (exists < 0) {
      fail(file_, name_,
           std::string("cannot read the attributes (looking for '") + key +
               "'; the file is damaged)");
    }
    return exists > 0;
  }

  std::string string(const char* key) const {
    Handle a = open(key);
    Handle type(H5Aget_type(a.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING) wrong_type(key, "a string");
    if (H5Tis_variable_str(type.get()) > 0) {
      Handle mem = string_type();
      char* p = nullptr;
      if (H5Aread(a.get(), mem.get(), &p) < 0) unreadable(key);
      std::string s = p ? p : "";
      H5free_memory(p);
      return s;
    }
    std::size_t size = H5Tget_size(type.get());
    if (size == 0 || size > (std::size_t{1} << 30)) unreadable(key);
    std::string s(size, '\0');
    // The file's own type (size, padding, character set), so nothing is converted.
    Handle mem(H5Tcopy(type.get()), H5Tclose);
    if (H5Aread(a.get(), mem.get(), s.data()) < 0) unreadable(key);
    s.resize(std::strlen(s.c_str()));
    return s;
  }

  double number(const char* key) const {
    Handle a = open(key);
    Handle type(H5Aget_type(a.get()), H5Tclose);
    auto cls = H5Tget_class(type.get());
    if (cls != H5T_FLOAT && cls != H5T_INTEGER) wrong_type(key, "a number");
    double v = 0;
    if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0) unreadable(key);
    return v;
  }

  std::int64_t int64(const char* key) const {
    Handle a = open(key);
    Handle type(H5Aget_type(a.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_INTEGER) wrong_type(key, "an integer");
    std::int64_t v = 0;
    if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) unreadable(key);
    return v;
  }

  std::uint64_t uint64(const char* key) const {
    Handle a = open(key);
    Handle type(H5Aget_type(a.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_INTEGER) wrong_type(key, "an integer");
    std::uint64_t v = 0;
    if (H5Aread(a.get(), H5T_NATIVE_UINT64, &v) < 0) unreadable(key);
    return v;
  }

 private:
  Handle open(const char* key) const {
    if (!has(key)) {
      fail(file_, name_,
           std::string("missing attribute '") + key +
               "' (the file is truncated or was not written by gopt)");
    }
    return check(H5Aopen(object_, key, H5P_DEFAULT), H5Aclose, file_, name_,
                 std::string("cannot open attribute '") + key + "'");
  }
  [[noreturn]] void wrong_type(const char* key, const char* expected) const {
    fail(file_, name_, std::string("attribute '") + key + "': expected " + expected);
  }
  [[noreturn]] void unreadable(const char* key) const {
    fail(file_, name_, std::string("cannot read attribute '") + key + "' (truncated file?)");
  }

  std::string file_;
  hid_t object_;
  std::string name_;
};

// Absent is false; an unreadable group index (damaged metadata) is an error.
bool has_link(const std::string& file, hid_t loc, const char* name) {
  htri_t exists = H5Lexists(loc, name, H5P_DEFAULT);
  if (exists < 0) fail(file, name, "cannot read the group's index (the file is damaged)");
  return exists > 0;
}

template <typename T>
std::vector<T> read_dataset(const std::string& file, hid_t loc, const std::string& loc_name,
                            const char* key, hid_t mem_type) {
  std::string object = loc_name + "/" + key;
  Handle set = check(H5Dopen2(loc, key, H5P_DEFAULT), H5Dclose, file, object,
                     "cannot open the dataset (truncated file?)");
  Handle space(H5Dget_space(set.get()), H5Sclose);
  if (H5Sget_simple_extent_ndims(space.get()) != 1) fail(file, object, "expected a 1-D dataset");
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  std::vector<T> values(static_cast<std::size_t>(dims[0]));
  if (!values.empty() &&
      H5Dread(set.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    fail(file, object, "cannot read the dataset (truncated file?)");
  }
  return values;
}

// The names of a group's members. A group whose index cannot be read is damaged: that is
// an error, never an empty list (an empty list read as "No results" before).
std::vector<std::string> member_names(const std::string& file, hid_t group,
                                      const std::string& group_name) {
  H5G_info_t info{};
  std::vector<std::string> names;
  if (H5Gget_info(group, &info) < 0) {
    fail(file, group_name, "cannot read the group's index (the file is damaged)");
  }
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t n =
        H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n < 0) {
      fail(file, group_name,
           "cannot read the name of member " + std::to_string(i) + " (the file is damaged)");
    }
    std::string name(static_cast<std::size_t>(n) + 1, '\0');
    H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                       H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(n));
    names.push_back(name);
  }
  return names;
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
  AttrReader root(file, f.get(), "/");
  if (!root.has("format") || root.string("format") != kResultsFormatName) {
    fail(file, "",
         "not a gopt results file (expected the root attribute format = '" +
             std::string(kResultsFormatName) + "', written by `gopt run`)");
  }
  version = root.int64("format_version");
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
  if (!has_link(file, f.get(), "results"))
    fail(file, "/results", "missing group (truncated file?)");
  return f;
}

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

RunResult read_result(const std::string& file, hid_t group, const std::string& name) {
  AttrReader a(file, group, name);
  RunResult r;
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
  if (a.has("lower_bound_s")) r.lower_bound_s = a.number("lower_bound_s");  // since 2026-11-24
  r.bytes_moved = a.int64("bytes_moved");
  r.wall_s = a.number("wall_s");
  r.samples = a.int64("samples");
  if (a.has("measured_step_time_s")) {  // validation results only
    r.measured_step_time_s = a.number("measured_step_time_s");
    r.measured_backend = a.string("measured_backend");
    r.measured_spread = a.number("measured_spread");
    if (a.has("op_times")) r.op_times = a.string("op_times");  // absent before it existed
    if (a.has("op_times_in_sample")) r.op_times_in_sample = a.int64("op_times_in_sample") != 0;
  }
  auto read_options = [&](const char* attribute, std::map<std::string, std::string>& out) {
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
  };
  read_options("options", r.options);
  if (a.has("resolved_options")) read_options("resolved_options", r.resolved_options);
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
  {
    Handle d = check(H5Gopen2(group, "devices", H5P_DEFAULT), H5Gclose, file, name + "/devices",
                     "missing group (truncated file?)");
    std::string dn = name + "/devices";
    r.device_busy_s = read_dataset<double>(file, d.get(), dn, "busy_s", H5T_NATIVE_DOUBLE);
    r.device_peak_memory_bytes =
        read_dataset<std::int64_t>(file, d.get(), dn, "peak_memory_bytes", H5T_NATIVE_INT64);
  }
  if (has_link(file, group, "learning_curve")) r.learning_curve = read_curve(file, group, name);
  if (a.has("digest") && a.uint64("digest") != result_digest(r)) {  // absent before #32
    fail(file, name, "the result's contents do not match its digest (the file is damaged)");
  }
  return r;
}

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

// A `learning_curve` group under `parent` (named `object`): one dataset per field.
void write_curve(const std::string& file, hid_t parent, const std::string& object,
                 const std::vector<agents::LearningCurvePoint>& curve) {
  Handle c = check(H5Gcreate2(parent, "learning_curve", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                   H5Gclose, file, object + "/learning_curve", "cannot create the group");
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

// A new, empty group `name` under `parent` (named `object` in messages), in place of one
// with the same name.
Handle replace_group(const std::string& file, hid_t parent, const std::string& name,
                     const std::string& object) {
  if (has_link(file, parent, name.c_str()) && H5Ldelete(parent, name.c_str(), H5P_DEFAULT) < 0) {
    fail(file, object, "cannot replace the group");
  }
  return check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
               file, object, "cannot create the group");
}

// The running jobs' group: /running, created when first needed.
constexpr const char* kRunning = "running";

// Writes a running job's group under /running (replacing its previous one); `complete`
// last, as for results.
void write_running_group(const std::string& file, hid_t root, const RunningJob& j) {
  if (!has_link(file, root, kRunning)) {
    check(H5Gcreate2(root, kRunning, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, file,
          "/running", "cannot create the group");
  }
  Handle running = check(H5Gopen2(root, kRunning, H5P_DEFAULT), H5Gclose, file, "/running",
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

// Removes the running jobs that will write `key` (their result is in the file now).
void remove_running(const std::string& file, hid_t root, const ResultKey& key) {
  if (!has_link(file, root, kRunning)) return;
  Handle running = check(H5Gopen2(root, kRunning, H5P_DEFAULT), H5Gclose, file, "/running",
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

// Writes one result group under `results` (replacing one with the same key); its
// `complete` attribute is written last.
void write_result_group(const std::string& file, hid_t results, const RunResult& r) {
  const std::string name = result_group_name(r.key);
  const std::string object = "/results/" + name;
  Handle g = replace_group(file, results, name, object);
  Writer w(file, g.get(), object);
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
  w.attr("options", nlohmann::json(r.options).dump());
  if (!r.resolved_options.empty()) {
    w.attr("resolved_options", nlohmann::json(r.resolved_options).dump());
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

  auto group = [&](const char* sub) {
    return check(H5Gcreate2(g.get(), sub, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, file,
                 object + "/" + sub, "cannot create the group");
  };
  if (r.decision.placement || r.decision.priority || r.decision.fusion) {
    Handle d = group("decision");
    Writer dw(file, d.get(), object + "/decision");
    if (r.decision.placement) {
      dw.dataset("placement", *r.decision.placement, H5T_STD_I32LE, H5T_NATIVE_INT32);
    }
    if (r.decision.priority) {
      dw.dataset("priority", *r.decision.priority, H5T_STD_I32LE, H5T_NATIVE_INT32);
    }
    if (r.decision.fusion)
      dw.dataset("fusion", *r.decision.fusion, H5T_STD_I32LE, H5T_NATIVE_INT32);
  }
  {
    Handle d = group("devices");
    Writer dw(file, d.get(), object + "/devices");
    dw.dataset("busy_s", r.device_busy_s, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
    dw.dataset("peak_memory_bytes", r.device_peak_memory_bytes, H5T_STD_I64LE, H5T_NATIVE_INT64);
  }
  if (r.learner) write_curve(file, g.get(), object, r.learning_curve);
  w.attr("digest", result_digest(r));
  // Written last: a group without it was interrupted mid-write and is not a result.
  w.attr("complete", static_cast<std::int64_t>(1));
}

// --- crash-safe updates ----------------------------------------------------------------

// File access for files gopt writes: metadata with checksums (superblock v2 and object
// headers of HDF5 1.8 and later), so that damage is detected when the file is read
// instead of being followed; no HDF5 file lock (files are replaced by rename, see
// Hdf5Sink::Impl::update, and serialized by the sink's own lock file).
Handle write_access() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  H5Pset_file_locking(fapl.get(), false, true);
  return fapl;
}

// Forces a file's (or directory's) contents to disk; errors are reported as a full disk.
void sync_path(const std::string& file, const std::filesystem::path& path, bool directory) {
  int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) {
    if (directory) return;  // best effort on file systems that refuse
    fail(file, "", "cannot reopen the file to sync it");
  }
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0 && !directory) fail(file, "", "cannot write the file to disk (disk full?)");
}

// Damaged-file wording shared by `--resume` and the reader.
std::string refused_resume(const core::InputError& e) {
  return e.problem() +
         "; the file is damaged or not a gopt results file, and --resume left it untouched: "
         "write to a new file (--out NEW.h5), or start this one again with --overwrite";
}

// Removes a temporary file unless disarmed: a write that fails or throws leaves no copy.
struct RemoveOnError {
  std::filesystem::path p;
  bool armed = true;
  ~RemoveOnError() {
    std::error_code ec;
    if (armed) std::filesystem::remove(p, ec);
  }
};

}  // namespace

std::string result_group_name(const ResultKey& key) {
  return key.workload + ":" + key.agent + ":" + std::to_string(key.seed);
}

// The results file is never modified in place. Every change (the first file, the run's
// metadata, each result) is made on a copy, `<file>.tmp-<pid>`, which is closed, synced
// and renamed over the file: a crash or SIGKILL at any moment leaves either the previous
// file or the new one, each complete and readable. The copy costs a read and a write of
// the file per result, small next to the seconds to hours a result takes.
struct Hdf5Sink::Impl {
  std::filesystem::path path;
  std::string file;  // path as text, for messages
  std::mutex mutex;
  bool open = false;
  bool dropped_incomplete = false;  // groups a killed older gopt left half-written
  std::vector<ResultKey> existing;
  std::string existing_config;
  int lock_fd = -1;
  std::filesystem::path lock_path;

  // Takes `<file>.lock` (flock), so that two runs never write one file.
  void lock() {
    lock_path = path;
    lock_path += ".lock";
    lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0) fail(file, "", "cannot create the lock file " + lock_path.string());
    if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(lock_fd);
      lock_fd = -1;
      fail(
          file, "",
          "another `gopt run` is writing this results file (" + lock_path.string() + " is locked)");
    }
  }
  // Copies a killed writer left behind (`<file>.tmp-<pid>`); only the lock holder writes.
  void remove_stale_copies() {
    const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    const std::string prefix = path.filename().string() + ".tmp-";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().filename().string().rfind(prefix, 0) == 0) {
        std::filesystem::remove(entry.path(), ec);
      }
    }
  }
  void unlock() {
    if (lock_fd < 0) return;
    std::error_code ec;
    std::filesystem::remove(lock_path, ec);
    ::close(lock_fd);
    lock_fd = -1;
  }

  std::filesystem::path temp_path() const {
    auto tmp = path;
    tmp += ".tmp-" + std::to_string(::getpid());
    return tmp;
  }

  // Makes the copy's contents the file's: close, sync, rename, sync the directory.
  void commit(Handle& f, const std::filesystem::path& tmp) {
    if (H5Fclose(f.release()) < 0) fail(file, "", "cannot write the file (disk full?)");
    sync_path(file, tmp, false);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) fail(file, "", "cannot move the written file into place: " + ec.message());
    auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    sync_path(file, dir, true);
  }

  // A new, empty results file in place of whatever is at `path`.
  void create() {
    const auto tmp = temp_path();
    RemoveOnError guard{tmp};
    Handle fapl = write_access();
    // Free space is tracked in the file (HDF5 1.10's persistent free-space managers), so
    // that space an update frees (a running job's curve, replaced at every flush) is reused
    // by later updates instead of lost at each close: without it a 15 s run flushing every
    // 0.05 s grew the file to 1 MB for 56 KB of curve.
    Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    H5Pset_file_space_strategy(fcpl.get(), H5F_FSPACE_STRATEGY_FSM_AGGR, 1, 1);
    Handle f = check(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose, file,
                     "", "cannot create the HDF5 file (directory writable?)");
    Writer root(file, f.get(), "/");
    root.attr("format", std::string(kResultsFormatName));
    root.attr("format_version", kResultsFormatVersion);
    check(H5Gcreate2(f.get(), "results", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, file,
          "/results", "cannot create the group");
    commit(f, tmp);
    guard.armed = false;
  }

  // Applies `change(file_id)` to a copy of the file and renames it into place.
  template <typename Change>
  void update(Change&& change) {
    const auto tmp = temp_path();
    RemoveOnError guard{tmp};
    std::error_code ec;
    std::filesystem::copy_file(path, tmp, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) fail(file, "", "cannot copy the file to update it: " + ec.message());
    Handle fapl = write_access();
    Handle f = check(H5Fopen(tmp.c_str(), H5F_ACC_RDWR, fapl.get()), H5Fclose, file, "",
                     "cannot open the HDF5 file for writing");
    if (!dropped_incomplete) {
      Handle results = check(H5Gopen2(f.get(), "results", H5P_DEFAULT), H5Gclose, file, "/results",
                             "cannot open the group");
      for (const auto& name : member_names(file, results.get(), "/results")) {
        Handle g(H5Gopen2(results.get(), name.c_str(), H5P_DEFAULT), H5Gclose);
        AttrReader a(file, g.get(), "/results/" + name);
        const bool complete = g.valid() && a.has("complete") && a.int64("complete") == 1;
        g.reset();
        if (!complete && H5Ldelete(results.get(), name.c_str(), H5P_DEFAULT) < 0) {
          fail(file, "/results/" + name, "cannot remove an incomplete result");
        }
      }
    }
    change(f.get());
    commit(f, tmp);
    guard.armed = false;
    dropped_incomplete = true;
  }
};

Hdf5Sink::Hdf5Sink(std::filesystem::path path, Hdf5SinkOptions options)
    : impl_(std::make_unique<Impl>()) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  silence_hdf5();
  impl_->path = std::move(path);
  impl_->file = impl_->path.string();
  const std::string& file = impl_->file;
  std::error_code ec;
  const bool exists = std::filesystem::exists(impl_->path, ec);
  if (exists && options.open_mode == OpenMode::kCreate) {
    fail(file, "",
         "the results file exists; continue it with --resume, or replace it with --overwrite");
  }
  if (exists && options.open_mode == OpenMode::kResume) {
    // Read-only first: the whole file is checked (structure, schema version, every result
    // group) before anything is written, and a file that fails is left as it was.
    impl_->lock();
    impl_->remove_stale_copies();
    ResultsFile existing;
    try {
      existing = read_results_file(impl_->path);
    } catch (const core::InputError& e) {
      impl_->unlock();
      throw core::InputError(file, e.location(), refused_resume(e));
    }
    if (existing.format_version != kResultsFormatVersion) {
      impl_->unlock();
      fail(file, "",
           "results format version " + std::to_string(existing.format_version) +
               ": this gopt reads it but writes only version " +
               std::to_string(kResultsFormatVersion) +
               " (results with provenance), and --resume does not mix the two; the file was "
               "left untouched: continue in a new file (--out NEW.h5); `gopt table` and the "
               "notebooks still read this one");
    }
    for (const auto& r : existing.results) impl_->existing.push_back(r.key);
    impl_->existing_config = existing.metadata.config_yaml;
    impl_->open = true;
    return;
  }
  if (impl_->path.has_parent_path()) {
    std::filesystem::create_directories(impl_->path.parent_path(), ec);
    if (ec) fail(file, "", "cannot create the directory (" + ec.message() + ")");
  }
  impl_->lock();
  try {
    impl_->create();
  } catch (...) {
    impl_->unlock();
    throw;
  }
  impl_->dropped_incomplete = true;
  impl_->open = true;
}

Hdf5Sink::~Hdf5Sink() {
  try {
    close();
  } catch (...) {
    // Destructors must not throw; close() errors were reported by an explicit close().
  }
}

const std::vector<ResultKey>& Hdf5Sink::existing() const { return impl_->existing; }
const std::string& Hdf5Sink::existing_config() const { return impl_->existing_config; }
const std::filesystem::path& Hdf5Sink::path() const { return impl_->path; }

void Hdf5Sink::begin(const RunMetadata& m) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->open) fail(impl_->file, "", "the results file is closed");
  silence_hdf5();
  const std::string& file = impl_->file;
  impl_->update([&](hid_t f) {
    Writer root(file, f, "/");
    // A file an earlier run began keeps that run's facts; a new one (or one whose first
    // run was killed before writing them) takes this run's.
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
    // Jobs an earlier run left running (stopped, failed or killed) are this run's to do.
    if (has_link(file, f, kRunning) && H5Ldelete(f, kRunning, H5P_DEFAULT) < 0) {
      fail(file, "/running", "cannot remove the earlier run's running jobs");
    }
  });
}

void Hdf5Sink::write(const RunResult& r) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const std::string& file = impl_->file;
  if (!impl_->open) fail(file, "", "the results file is closed");
  silence_hdf5();
  impl_->update([&](hid_t f) {
    Handle results = check(H5Gopen2(f, "results", H5P_DEFAULT), H5Gclose, file, "/results",
                           "cannot open the group");
    write_result_group(file, results.get(), r);
    remove_running(file, f, r.key);
  });
}

void Hdf5Sink::update_running(const RunningJob& job) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const std::string& file = impl_->file;
  if (!impl_->open) fail(file, "", "the results file is closed");
  if (job.rows.empty()) fail(file, "/running", "a running job without results to write");
  silence_hdf5();
  impl_->update([&](hid_t f) { write_running_group(file, f, job); });
}

void Hdf5Sink::close() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->open = false;
  impl_->unlock();
}

ResultsFile read_results_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  ResultsFile out;
  Handle f = open_results(file, H5F_ACC_RDONLY, out.format_version);
  out.path = file;
  out.metadata = read_metadata(file, f.get());
  Handle results = check(H5Gopen2(f.get(), "results", H5P_DEFAULT), H5Gclose, file, "/results",
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
  if (has_link(file, f.get(), kRunning)) {
    Handle running = check(H5Gopen2(f.get(), kRunning, H5P_DEFAULT), H5Gclose, file, "/running",
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
  std::stable_sort(out.results.begin(), out.results.end(),
                   [](const RunResult& a, const RunResult& b) {
                     return a.order != b.order ? a.order < b.order : a.key < b.key;
                   });
  return out;
}

}  // namespace gopt::experiments
