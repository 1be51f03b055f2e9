#include "tests/support/files.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace gopt::testing {
namespace {

int remove_entry(const char* path, const struct stat* /*info*/, int /*flag*/, struct FTW* /*ftw*/) {
  return std::remove(path) == 0 ? 0 : -1;
}

// The directories make_temp_dir created, removed when the process exits.
class TempDirs {
 public:
  ~TempDirs() {
    for (const auto& dir : dirs_) remove_tree(dir);
  }
  void add(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(dir);
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> dirs_;
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

void remove_tree(const std::string& path) {
  // Depth first (children before their directory), without following symbolic links.
  (void)::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string make_temp_dir(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + name + "_" +
                    std::to_string(::getpid());
  remove_tree(dir);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    std::perror(("make_temp_dir: " + dir).c_str());
    std::abort();
  }
  temp_dirs().add(dir);
  return dir;
}

}  // namespace gopt::testing
