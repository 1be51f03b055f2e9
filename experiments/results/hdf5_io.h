// The HDF5 plumbing of the results file (internal to experiments/results/hdf5_sink.cpp and the
// reader and writer beside it): identifiers closed by RAII, typed attribute writing and
// reading, 1-D datasets, group members. Every failure is a core::InputError naming the file
// and the object; HDF5's own error printing is turned off (silence_hdf5).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gopt::experiments::h5 {

/// The running jobs' group under the root: /running, created when first needed.
inline constexpr const char* kRunningGroup = "running";
/// Results' decisions measured on a real backend (`gopt measure`): /measured, created when
/// the first is written (format 2.2).
inline constexpr const char* kMeasuredGroup = "measured";

/// Owns one HDF5 identifier and closes it with the matching H5*close.
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

/// HDF5 prints its error stack to stderr by default; gopt reports its own messages.
void silence_hdf5();

/// Errors while reading or writing a file we opened: the file is named, the object too.
[[noreturn]] void fail(const std::string& file, const std::string& object, const std::string& what);

/// `id` owned by a Handle (dropping it closes `id` at once); fails with `what` when HDF5
/// returned an error.
Handle check(hid_t id, Handle::Closer closer, const std::string& file, const std::string& object,
             const std::string& what);

/// Variable-length UTF-8 strings, the memory type to read such an attribute.
[[nodiscard]] Handle string_type();

/// Writes attributes and 1-D datasets of one object (the root, a group).
class Writer {
 public:
  Writer(std::string file, hid_t object, std::string object_name)
      : file_(std::move(file)), object_(object), name_(std::move(object_name)) {}

  /// Fixed-length strings: stored inside the attribute's own header message, which HDF5
  /// checksums. Variable-length ones live in the global heap, which it does not, and
  /// HDF5 1.10 crashed in H5HG_read on a damaged heap (found by the damaged-file test).
  void attr(const char* key, const std::string& value);
  void attr(const char* key, const char* value) { attr(key, std::string(value)); }
  void attr(const char* key, double value);
  void attr(const char* key, std::int64_t value);
  void attr(const char* key, std::uint64_t value);
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

/// Reads typed attributes of one object; a missing, mistyped or unreadable one is an error
/// naming the attribute.
class AttrReader {
 public:
  AttrReader(std::string file, hid_t object, std::string object_name)
      : file_(std::move(file)), object_(object), name_(std::move(object_name)) {}

  /// Absent is false; unreadable (damaged metadata) is an error, never "absent".
  [[nodiscard]] bool has(const char* key) const;
  [[nodiscard]] std::string string(const char* key) const;
  [[nodiscard]] double number(const char* key) const;
  [[nodiscard]] std::int64_t int64(const char* key) const;
  [[nodiscard]] std::uint64_t uint64(const char* key) const;

 private:
  [[nodiscard]] Handle open(const char* key) const;
  [[noreturn]] void wrong_type(const char* key, const char* expected) const;
  [[noreturn]] void unreadable(const char* key) const;

  std::string file_;
  hid_t object_;
  std::string name_;
};

/// Whether `loc` has a member `name`. Absent is false; an unreadable group index (damaged
/// metadata) is an error.
[[nodiscard]] bool has_link(const std::string& file, hid_t loc, const char* name);

/// The 1-D dataset `key` under `loc` (named `loc_name` in messages).
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

/// The names of a group's members. A group whose index cannot be read is damaged: that is
/// an error, never an empty list (an empty list read as "No results" before).
[[nodiscard]] std::vector<std::string> member_names(const std::string& file, hid_t group,
                                                    const std::string& group_name);

/// A new, empty group `name` under `parent` (named `object` in messages), in place of one
/// with the same name.
[[nodiscard]] Handle replace_group(const std::string& file, hid_t parent, const std::string& name,
                                   const std::string& object);

}  // namespace gopt::experiments::h5
