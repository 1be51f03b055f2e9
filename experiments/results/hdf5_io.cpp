// The HDF5 plumbing of the results file (experiments/results/hdf5_io.h).
#include "experiments/results/hdf5_io.h"

#include <algorithm>
#include <cstring>

#include "core/errors.h"

namespace gopt::experiments::h5 {

void silence_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

void fail(const std::string& file, const std::string& object, const std::string& what) {
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

// --- Writer ------------------------------------------------------------------------------

void Writer::attr(const char* key, const std::string& value) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<std::size_t>(1, value.size()));
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  std::string padded = value;
  padded.resize(std::max<std::size_t>(1, value.size()), '\0');
  write_attr(key, type.get(), type.get(),
             [&](hid_t a, hid_t t) { return H5Awrite(a, t, padded.data()); });
}

void Writer::attr(const char* key, double value) {
  write_attr(key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
             [&](hid_t a, hid_t t) { return H5Awrite(a, t, &value); });
}

void Writer::attr(const char* key, std::int64_t value) {
  write_attr(key, H5T_STD_I64LE, H5T_NATIVE_INT64,
             [&](hid_t a, hid_t t) { return H5Awrite(a, t, &value); });
}

void Writer::attr(const char* key, std::uint64_t value) {
  write_attr(key, H5T_STD_U64LE, H5T_NATIVE_UINT64,
             [&](hid_t a, hid_t t) { return H5Awrite(a, t, &value); });
}

// --- AttrReader --------------------------------------------------------------------------

bool AttrReader::has(const char* key) const {
  htri_t exists = H5Aexists(object_, key);
  if (exists < 0) {
    fail(
        file_, name_,
        std::string("cannot read the attributes (looking for '") + key + "'; the file is damaged)");
  }
  return exists > 0;
}

std::string AttrReader::string(const char* key) const {
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

double AttrReader::number(const char* key) const {
  Handle a = open(key);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  auto cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) wrong_type(key, "a number");
  double v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0) unreadable(key);
  return v;
}

std::int64_t AttrReader::int64(const char* key) const {
  Handle a = open(key);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER) wrong_type(key, "an integer");
  std::int64_t v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) unreadable(key);
  return v;
}

std::uint64_t AttrReader::uint64(const char* key) const {
  Handle a = open(key);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER) wrong_type(key, "an integer");
  std::uint64_t v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_UINT64, &v) < 0) unreadable(key);
  return v;
}

Handle AttrReader::open(const char* key) const {
  if (!has(key)) {
    fail(file_, name_,
         std::string("missing attribute '") + key +
             "' (the file is truncated or was not written by gopt)");
  }
  return check(H5Aopen(object_, key, H5P_DEFAULT), H5Aclose, file_, name_,
               std::string("cannot open attribute '") + key + "'");
}

void AttrReader::wrong_type(const char* key, const char* expected) const {
  fail(file_, name_, std::string("attribute '") + key + "': expected " + expected);
}

void AttrReader::unreadable(const char* key) const {
  fail(file_, name_, std::string("cannot read attribute '") + key + "' (truncated file?)");
}

// --- groups ------------------------------------------------------------------------------

bool has_link(const std::string& file, hid_t loc, const char* name) {
  htri_t exists = H5Lexists(loc, name, H5P_DEFAULT);
  if (exists < 0) fail(file, name, "cannot read the group's index (the file is damaged)");
  return exists > 0;
}

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

Handle replace_group(const std::string& file, hid_t parent, const std::string& name,
                     const std::string& object) {
  if (has_link(file, parent, name.c_str()) && H5Ldelete(parent, name.c_str(), H5P_DEFAULT) < 0) {
    fail(file, object, "cannot replace the group");
  }
  return check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
               file, object, "cannot create the group");
}

}  // namespace gopt::experiments::h5
