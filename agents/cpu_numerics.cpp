#include "agents/cpu_numerics.h"

#include <ATen/Version.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.h"

namespace gopt::agents {
namespace {

constexpr const char* kVariable = "GOPT_CPU_KERNEL";

// The forced path, or -1 while none is set or read yet.
std::atomic<int> g_forced_path{-1};
std::once_flag g_environment_read;

CpuKernelPath parse_environment() {
  const char* value = std::getenv(kVariable);
  if (value == nullptr || *value == '\0' || std::string_view(value) == "native") {
    return native_cpu_kernel_path();
  }
  const std::string_view v(value);
  for (auto path : {CpuKernelPath::kBaseline, CpuKernelPath::kAvx2, CpuKernelPath::kAvx512}) {
    if (v != to_string(path)) continue;
    if (!cpu_supports(path)) {
      throw core::InputError("environment", kVariable,
                             "this CPU does not run the '" + std::string(v) +
                                 "' path; it runs up to '" +
                                 std::string(to_string(native_cpu_kernel_path())) + "'");
    }
    return path;
  }
  throw core::InputError(
      "environment", kVariable,
      "expected baseline, avx2, avx512 or native, found '" + std::string(v) + "'");
}

// "X" from the "CPU capability usage: X" line of LibTorch's build summary.
std::string aten_capability() {
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  const auto at = config.find(key);
  if (at == std::string::npos) return "unknown";
  const auto begin = at + key.size();
  return config.substr(begin, config.find('\n', begin) - begin);
}

// What OpenBLAS says it picked, when OpenBLAS is the loaded BLAS.
std::string openblas_core() {
  using CoreName = char* (*)();
  auto* symbol = dlsym(RTLD_DEFAULT, "openblas_get_corename");
  if (symbol == nullptr) return "unknown";
  const char* name = reinterpret_cast<CoreName>(symbol)();
  return name == nullptr ? "unknown" : name;
}

// The OpenBLAS kernel set a CPU with `path` should use, and the sets at least as wide.
struct BlasCores {
  const char* wanted;
  std::vector<std::string> as_wide;  // lower case, as openblas_get_corename names them
};

std::optional<BlasCores> blas_cores_for(CpuKernelPath path, bool bf16) {
  switch (path) {
    case CpuKernelPath::kAvx512:
      // OpenBLAS takes Cooperlake's set on the CPUs it knows with AVX-512 BF16, and its
      // results differ from SkylakeX's; an unknown one should land where a known one does.
      if (bf16) return BlasCores{"Cooperlake", {"cooperlake", "sapphirerapids"}};
      return BlasCores{"SkylakeX", {"skylakex", "cooperlake", "sapphirerapids"}};
    case CpuKernelPath::kAvx2:
      return BlasCores{"Haswell", {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"}};
    case CpuKernelPath::kBaseline:
      break;
  }
  return std::nullopt;
}

// OpenBLAS's kernels need AVX-512 BW, DQ and CD beside F and VL for its SkylakeX set.
bool cpu_runs_skylakex_kernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return cpu_supports(CpuKernelPath::kAvx512) && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd");
#else
  return false;
#endif
}

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

}  // namespace

std::string select_openblas_kernels() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";
  using CoreName = char* (*)();
  using Hook = void (*)();
  auto* core_name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  // Internal to OpenBLAS's DYNAMIC_ARCH builds (driver/others/dynamic.c), but exported:
  // quit forgets the chosen kernel table, init chooses again, reading OPENBLAS_CORETYPE.
  auto* quit = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto* init = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (core_name == nullptr || quit == nullptr || init == nullptr) return "";
  auto path = native_cpu_kernel_path();
  if (path == CpuKernelPath::kAvx512 && !cpu_runs_skylakex_kernels()) path = CpuKernelPath::kAvx2;
  const auto cores = blas_cores_for(path, cpu_has_avx512_bf16());
  if (!cores) return "";
  const char* name = core_name();
  std::string before = name != nullptr ? name : "";
  std::string lower = before;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (std::find(cores->as_wide.begin(), cores->as_wide.end(), lower) != cores->as_wide.end()) {
    return "";
  }
  ::setenv("OPENBLAS_CORETYPE", cores->wanted, 1);
  quit();
  init();
  const char* after = core_name();
  return "OpenBLAS: " + before + " -> " + (after != nullptr ? after : "unknown");
}

std::string_view to_string(CpuKernelPath path) {
  switch (path) {
    case CpuKernelPath::kBaseline:
      return "baseline";
    case CpuKernelPath::kAvx2:
      return "avx2";
    case CpuKernelPath::kAvx512:
      return "avx512";
  }
  return "baseline";
}

bool cpu_supports(CpuKernelPath path) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  switch (path) {
    case CpuKernelPath::kBaseline:
      return true;
    case CpuKernelPath::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuKernelPath::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  return false;
#else
  return path == CpuKernelPath::kBaseline;
#endif
}

CpuKernelPath native_cpu_kernel_path() {
  if (cpu_supports(CpuKernelPath::kAvx512)) return CpuKernelPath::kAvx512;
  if (cpu_supports(CpuKernelPath::kAvx2)) return CpuKernelPath::kAvx2;
  return CpuKernelPath::kBaseline;
}

CpuKernelPath cpu_kernel_path() {
  std::call_once(g_environment_read, [] {
    const auto parsed = parse_environment();
    int unset = -1;
    g_forced_path.compare_exchange_strong(unset, static_cast<int>(parsed));
  });
  return static_cast<CpuKernelPath>(g_forced_path.load());
}

void set_cpu_kernel_path(CpuKernelPath path) {
  if (!cpu_supports(path)) {
    throw core::InputError("set_cpu_kernel_path", "",
                           "this CPU does not run the '" + std::string(to_string(path)) + "' path");
  }
  g_forced_path.store(static_cast<int>(path));
}

std::string cpu_numerics_description() {
  const auto path = cpu_kernel_path();
  const bool native = path == native_cpu_kernel_path();
  return "gopt kernels " + std::string(to_string(path)) + (native ? " (native)" : " (forced)") +
         "; ATen " + aten_capability() + "; OpenBLAS " + openblas_core();
}

std::string cpu_numerics_environment(const std::string& description) {
  // The parts of cpu_numerics_description, with the variable each is forced by.
  struct Part {
    std::string prefix;
    std::string variable;
    bool lower;  // the variable takes the name in lower case
  };
  const Part parts[] = {{"gopt kernels ", "GOPT_CPU_KERNEL", true},
                        {"ATen ", "ATEN_CPU_CAPABILITY", true},
                        {"OpenBLAS ", "OPENBLAS_CORETYPE", false}};
  std::vector<std::string> assignments;
  std::stringstream in(description);
  std::string item;
  while (std::getline(in, item, ';')) {
    item.erase(0, item.find_first_not_of(' '));
    for (const auto& part : parts) {
      if (item.rfind(part.prefix, 0) != 0) continue;
      std::string name = item.substr(part.prefix.size());
      name = name.substr(0, name.find(' '));  // "avx512 (native)" -> "avx512"
      if (name.empty() || name == "unknown") continue;
      if (part.lower) {
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      }
      assignments.push_back(part.variable + "=" + name);
    }
  }
  std::string out;
  for (const auto& a : assignments) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace gopt::agents
