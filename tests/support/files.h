// File helpers for tests that write into temporary directories.
#pragma once

#include <string>

namespace gopt::testing {

/// Removes `path` and everything under it, if it exists (no error when it does not).
///
/// POSIX nftw, not std::filesystem::remove_all: a PyTorch wheel's libtorch.so exports its
/// own copy of std::filesystem::remove_all, which test binaries can bind to and which crashed
/// there (PyTorch 2.11 on Ubuntu 24.04).
void remove_tree(const std::string& path);

/// Creates an empty directory `<system temp>/<name>_<pid>` (emptied first if it exists) and
/// returns its path; it is removed with everything in it when the process exits (ctest runs
/// each test in its own process), so test runs leave no directories behind.
std::string make_temp_dir(const std::string& name);

/// The whole contents of a text file ("" when it cannot be read).
std::string read_text(const std::string& path);

/// A TCP port on localhost that nothing listens on now (bound, read and released; another
/// process may take it before the caller does, rarely).
int unused_local_port();

}  // namespace gopt::testing
