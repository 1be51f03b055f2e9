#include "tests/support/files.h"

#include <ftw.h>

#include <cstdio>

namespace gopt::testing {
namespace {

int remove_entry(const char* path, const struct stat* /*info*/, int /*flag*/, struct FTW* /*ftw*/) {
  return std::remove(path) == 0 ? 0 : -1;
}

}  // namespace

void remove_tree(const std::string& path) {
  // Depth first (children before their directory), without following symbolic links.
  (void)::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace gopt::testing
