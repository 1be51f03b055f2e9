// The HDF5 results sink (experiments/results/hdf5_sink.h): the lock that keeps two runs from one
// file, crash-safe updates (each change made on a copy that is renamed into place), and
// what `--resume` accepts. The file's layout is written by experiments/results/hdf5_write.cpp and
// read back by hdf5_read.cpp; hdf5_io.h holds the HDF5 plumbing, hdf5_digests.h the
// content digests.
#include "experiments/results/hdf5_sink.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/file.h>
#include <unistd.h>

#include <mutex>
#include <system_error>
#include <utility>

#include "core/errors.h"
#include "experiments/results/hdf5_io.h"
#include "experiments/results/hdf5_write.h"

namespace gopt::experiments {
namespace {

using h5::AttrReader;
using h5::check;
using h5::fail;
using h5::Handle;
using h5::Writer;

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
      fail(file, "",
           "another gopt (`gopt run` or `gopt measure`) is writing this results file (" +
               lock_path.string() + " is locked)");
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
    root.attr("format_minor_version", kResultsFormatMinorVersion);
    check(H5Gcreate2(f.get(), "results", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, file,
          "/results", "cannot create the group");
    commit(f, tmp);
    guard.armed = false;
  }

  // Removes the result groups a killed older gopt left half-written (without `complete`).
  void drop_incomplete(hid_t f) {
    Handle results = check(H5Gopen2(f, "results", H5P_DEFAULT), H5Gclose, file, "/results",
                           "cannot open the group");
    for (const auto& name : h5::member_names(file, results.get(), "/results")) {
      Handle g(H5Gopen2(results.get(), name.c_str(), H5P_DEFAULT), H5Gclose);
      AttrReader a(file, g.get(), "/results/" + name);
      const bool complete = g.valid() && a.has("complete") && a.int64("complete") == 1;
      g.reset();
      if (!complete && H5Ldelete(results.get(), name.c_str(), H5P_DEFAULT) < 0) {
        fail(file, "/results/" + name, "cannot remove an incomplete result");
      }
    }
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
    if (!dropped_incomplete) drop_incomplete(f.get());
    change(f.get());
    commit(f, tmp);
    guard.armed = false;
    dropped_incomplete = true;
  }

  // Continues an existing file (OpenMode::kResume). Read-only first: the whole file is
  // checked (structure, schema version, every result group) before anything is written,
  // and a file that fails is left as it was.
  void resume() {
    lock();
    remove_stale_copies();
    ResultsFile file_read;
    try {
      file_read = read_results_file(path);
    } catch (const core::InputError& e) {
      unlock();
      throw core::InputError(file, e.location(), refused_resume(e));
    }
    if (file_read.format_version != kResultsFormatVersion) {
      unlock();
      fail(file, "",
           "results format version " + std::to_string(file_read.format_version) +
               ": this gopt reads it but writes only version " +
               std::to_string(kResultsFormatVersion) +
               " (results with provenance), and --resume does not mix the two; the file was "
               "left untouched: continue in a new file (--out NEW.h5); `gopt table` and the "
               "notebooks still read this one");
    }
    for (const auto& r : file_read.results) existing.push_back(r.key);
    existing_config = file_read.metadata.config_yaml;
  }

  // A new file in place of whatever is at `path` (creating its directory).
  void create_new() {
    std::error_code ec;
    if (path.has_parent_path()) {
      std::filesystem::create_directories(path.parent_path(), ec);
      if (ec) fail(file, "", "cannot create the directory (" + ec.message() + ")");
    }
    lock();
    try {
      create();
    } catch (...) {
      unlock();
      throw;
    }
    dropped_incomplete = true;
  }
};

Hdf5Sink::Hdf5Sink(std::filesystem::path path, Hdf5SinkOptions options)
    : impl_(std::make_unique<Impl>()) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  h5::silence_hdf5();
  impl_->path = std::move(path);
  impl_->file = impl_->path.string();
  std::error_code ec;
  const bool exists = std::filesystem::exists(impl_->path, ec);
  if (exists && options.open_mode == OpenMode::kCreate) {
    fail(impl_->file, "",
         "the results file exists; continue it with --resume, or replace it with --overwrite");
  }
  if (exists && options.open_mode == OpenMode::kResume) {
    impl_->resume();
  } else {
    impl_->create_new();
  }
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
  h5::silence_hdf5();
  const std::string& file = impl_->file;
  impl_->update([&](hid_t f) {
    h5::write_run_metadata(file, f, m);
    // Jobs an earlier run left running (stopped, failed or killed) are this run's to do.
    h5::remove_all_running(file, f);
  });
}

void Hdf5Sink::write(const RunResult& r) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const std::string& file = impl_->file;
  if (!impl_->open) fail(file, "", "the results file is closed");
  h5::silence_hdf5();
  impl_->update([&](hid_t f) {
    Handle results = check(H5Gopen2(f, "results", H5P_DEFAULT), H5Gclose, file, "/results",
                           "cannot open the group");
    h5::write_result_group(file, results.get(), r);
    h5::remove_running(file, f, r.key);
  });
}

void Hdf5Sink::update_running(const RunningJob& job) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const std::string& file = impl_->file;
  if (!impl_->open) fail(file, "", "the results file is closed");
  if (job.rows.empty()) fail(file, "/running", "a running job without results to write");
  h5::silence_hdf5();
  impl_->update([&](hid_t f) { h5::write_running_group(file, f, job); });
}

void Hdf5Sink::write_measurement(const Measurement& m) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const std::string& file = impl_->file;
  if (!impl_->open) fail(file, "", "the results file is closed");
  h5::silence_hdf5();
  impl_->update([&](hid_t f) { h5::write_measured_group(file, f, m); });
}

void Hdf5Sink::close() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->open = false;
  impl_->unlock();
}

}  // namespace gopt::experiments
