// A small stand-in for libFuzzer, linked into the harnesses of the normal (GCC) build so
// that CTest can run every harness on every CI run without a clang build: it replays the
// corpus given on the command line, then mutates it at random (bit flips, byte changes,
// insertions and deletions, dictionary tokens, splices) until -max_total_time. No coverage
// feedback and no sanitizers: it catches regressions of the contract, the libFuzzer build
// (docs/reliability.md) is the one that searches.
//
// Accepts the libFuzzer flags CTest passes: -max_total_time=S -runs=N -seed=N -dict=FILE
// -artifact_prefix=DIR/ and corpus directories or files (a missing one is skipped). A
// finding prints the check's message, writes the input to <artifact_prefix>crash-<n> and
// exits 1; a crash writes the input from a signal handler before the process dies.
#include <fcntl.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"

namespace {

using Bytes = std::vector<std::uint8_t>;

// The input being run, for the signal handler.
const Bytes* g_current = nullptr;
char g_crash_path[4096] = "crash-input";

extern "C" void on_fatal_signal(int sig) {
  if (g_current) {
    int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
      (void)ignored;
      ::close(fd);
    }
    const char msg[] =
        "standalone fuzz driver: fatal signal; input written to the artifact prefix\n";
    ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// libFuzzer/AFL dictionary lines: name="value" with \\, \" and \xNN escapes.
std::vector<Bytes> read_dictionary(const std::string& path) {
  std::vector<Bytes> tokens;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto first = line.find('"');
    auto last = line.rfind('"');
    if (line.empty() || line[0] == '#' || first == std::string::npos || last <= first) continue;
    Bytes token;
    for (std::size_t i = first + 1; i < last; ++i) {
      if (line[i] == '\\' && i + 1 < last) {
        ++i;
        if (line[i] == 'x' && i + 2 < last) {
          token.push_back(static_cast<std::uint8_t>(std::stoi(line.substr(i + 1, 2), nullptr, 16)));
          i += 2;
          continue;
        }
      }
      token.push_back(static_cast<std::uint8_t>(line[i]));
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

class Mutator {
 public:
  Mutator(std::uint64_t seed, std::vector<Bytes> dictionary)
      : rng_(seed), dictionary_(std::move(dictionary)) {}

  Bytes mutate(const std::vector<Bytes>& corpus) {
    Bytes out = corpus[pick(corpus.size())];
    const int rounds = 1 + static_cast<int>(pick(8));
    for (int i = 0; i < rounds; ++i) step(out, corpus);
    if (out.size() > kMaxSize) out.resize(kMaxSize);
    return out;
  }

 private:
  static constexpr std::size_t kMaxSize = 1 << 20;

  std::size_t pick(std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

  void step(Bytes& b, const std::vector<Bytes>& corpus) {
    const std::size_t at = pick(b.size() + 1);
    switch (pick(7)) {
      case 0:  // flip a bit
        if (!b.empty()) b[pick(b.size())] ^= static_cast<std::uint8_t>(1u << pick(8));
        break;
      case 1:  // an interesting byte
        if (!b.empty()) {
          static const std::uint8_t kBytes[] = {0,   1,    0x7f, 0x80, 0xff, '-',  '9',
                                                '"', '\\', '{',  '[',  ':',  '\n', 'e'};
          b[pick(b.size())] = kBytes[pick(sizeof kBytes)];
        }
        break;
      case 2: {  // delete a range
        if (b.empty()) break;
        std::size_t from = pick(b.size());
        std::size_t n = 1 + pick(std::min<std::size_t>(16, b.size() - from));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(from),
                b.begin() + static_cast<std::ptrdiff_t>(from + n));
        break;
      }
      case 3:  // insert random bytes
        for (std::size_t n = 1 + pick(8); n > 0; --n) {
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(at),
                   static_cast<std::uint8_t>(pick(256)));
        }
        break;
      case 4:  // a dictionary token, or a huge number
        if (!dictionary_.empty() && pick(4) != 0) {
          const Bytes& t = dictionary_[pick(dictionary_.size())];
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), t.begin(), t.end());
        } else {
          static const char* kNumbers[] = {"1e400",      "-1",  "9223372036854775807",
                                           "2147483648", "0",   "-0",
                                           "1e30",       "NaN", "4294967296"};
          std::string n = kNumbers[pick(std::size(kNumbers))];
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), n.begin(), n.end());
        }
        break;
      case 5: {  // duplicate a range
        if (b.empty()) break;
        std::size_t from = pick(b.size());
        std::size_t n = 1 + pick(std::min<std::size_t>(64, b.size() - from));
        Bytes copy(b.begin() + static_cast<std::ptrdiff_t>(from),
                   b.begin() + static_cast<std::ptrdiff_t>(from + n));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), copy.begin(), copy.end());
        break;
      }
      default: {  // splice another input's tail
        const Bytes& other = corpus[pick(corpus.size())];
        if (other.empty()) break;
        std::size_t from = pick(other.size());
        b.resize(at);
        b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  std::vector<Bytes> dictionary_;
};

}  // namespace

int main(int argc, char** argv) {
  double max_seconds = 10;
  long long max_runs = -1;
  std::uint64_t seed = 1;
  std::string dict;
  std::string artifact_prefix;
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      std::size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? a.c_str() + n : nullptr;
    };
    if (auto v = value("-max_total_time="))
      max_seconds = std::stod(v);
    else if (auto v2 = value("-runs="))
      max_runs = std::stoll(v2);
    else if (auto v3 = value("-seed="))
      seed = std::stoull(v3);
    else if (auto v4 = value("-dict="))
      dict = v4;
    else if (auto v5 = value("-artifact_prefix="))
      artifact_prefix = v5;
    else if (!a.empty() && a[0] == '-')
      continue;  // other libFuzzer flags
    else
      inputs.emplace_back(a);
  }
  std::snprintf(g_crash_path, sizeof g_crash_path, "%scrash-input", artifact_prefix.c_str());
  for (int sig : {SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL}) std::signal(sig, on_fatal_signal);

  std::vector<Bytes> corpus;
  std::error_code ec;
  for (const auto& p : inputs) {
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
        if (e.is_regular_file(ec)) corpus.push_back(read_file(e.path()));
      }
    } else if (std::filesystem::is_regular_file(p, ec)) {
      corpus.push_back(read_file(p));
    }
  }
  if (corpus.empty()) corpus.emplace_back();

  long long runs = 0;
  long long accepted = 0;
  int findings = 0;
  auto run = [&](const Bytes& input) {
    g_current = &input;
    try {
      if (gopt::fuzz::GOPT_FUZZ_CHECK(input.data(), input.size()) ==
          gopt::fuzz::Outcome::kAccepted) {
        ++accepted;
      }
    } catch (const std::exception& e) {
      std::string path = artifact_prefix + "crash-" + std::to_string(findings++);
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(input.data()),
                 static_cast<std::streamsize>(input.size()));
      std::cerr << "FINDING (" << typeid(e).name() << "): " << e.what() << "\n  input: " << path
                << "\n";
    }
    g_current = nullptr;
    ++runs;
  };
  for (const auto& input : corpus) run(input);
  const std::size_t seeds = corpus.size();
  Mutator mutator(seed, dict.empty() ? std::vector<Bytes>{} : read_dictionary(dict));
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (findings == 0 && elapsed() < max_seconds && (max_runs < 0 || runs < max_runs)) {
    run(mutator.mutate(corpus));
  }
  std::cout << "standalone fuzz driver: " << runs << " runs (" << seeds << " seeds, " << accepted
            << " accepted) in " << elapsed() << " s, " << findings << " finding(s)\n";
  return findings == 0 ? 0 : 1;
}
