#include "tests/support/files.h"

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
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

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int unused_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  socklen_t length = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace gopt::testing
