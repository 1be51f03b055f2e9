#include "agents/cpu_numerics.h"

#include <ATen/Version.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.h"

namespace gopt::agents {
namespace {

constexpr const char* kVariable = "GOPT_CPU_KERNEL";
constexpr const char* kHideVariable = "GOPT_CPU_HIDE";

// The forced path, or -1 while none is forced (the native path is taken).
std::atomic<int> g_forced_path{-1};
std::once_flag g_environment_read;
// The widest path gopt takes this CPU to run (GOPT_CPU_HIDE), or -1 while not read yet.
std::atomic<int> g_ceiling{-1};

CpuKernelPath parse_hide_environment() {
  const char* value = std::getenv(kHideVariable);
  if (value == nullptr || *value == '\0') return CpuKernelPath::kAvx512;
  const std::string_view v(value);
  if (v == "none") return CpuKernelPath::kAvx512;
  if (v == "avx512") return CpuKernelPath::kAvx2;
  if (v == "avx2") return CpuKernelPath::kBaseline;
  throw core::InputError("environment", kHideVariable,
                         "expected avx512, avx2 or none, found '" + std::string(v) + "'");
}

// Whether the CPU itself runs `path`, whatever is hidden.
bool hardware_supports(CpuKernelPath path) {
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

// Why this CPU does not run `path`, for messages: "it runs up to 'avx2'", and what hides
// the rest when GOPT_CPU_HIDE or a test does.
std::string lacks_text(CpuKernelPath path) {
  std::string text = "this CPU does not run the '" + std::string(to_string(path)) +
                     "' path; it runs up to '" + std::string(to_string(native_cpu_kernel_path())) +
                     "'";
  if (hardware_supports(path)) {
    text += " (" + std::string(kHideVariable) + " or a test hides the wider paths)";
  }
  return text;
}

CpuKernelPath parse_environment() {
  const char* value = std::getenv(kVariable);
  if (value == nullptr || *value == '\0' || std::string_view(value) == "native") {
    return native_cpu_kernel_path();
  }
  const std::string_view v(value);
  for (auto path : {CpuKernelPath::kBaseline, CpuKernelPath::kAvx2, CpuKernelPath::kAvx512}) {
    if (v != to_string(path)) continue;
    if (!cpu_supports(path)) throw core::InputError("environment", kVariable, lacks_text(path));
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

// The OpenBLAS kernel set a CPU with `path` should use, and the sets that path runs (lower
// case, as openblas_get_corename names them; `runs_all_but`: every set except these).
struct BlasCores {
  const char* wanted;
  std::vector<std::string> sets;
  bool runs_all_but = false;

  [[nodiscard]] bool runs(const std::string& set) const {
    const bool listed = std::find(sets.begin(), sets.end(), set) != sets.end();
    return listed != runs_all_but;
  }
};

BlasCores blas_cores_for(CpuKernelPath path, bool bf16) {
  const std::vector<std::string> avx2_sets = {"haswell", "zen", "excavator"};
  const std::vector<std::string> avx512_sets = {"skylakex", "cooperlake", "sapphirerapids"};
  switch (path) {
    case CpuKernelPath::kAvx512:
      // OpenBLAS takes Cooperlake's set on the CPUs it knows with AVX-512 BF16, and its
      // results differ from SkylakeX's; an unknown one should land where a known one does.
      if (bf16) return BlasCores{"Cooperlake", {"cooperlake", "sapphirerapids"}};
      return BlasCores{"SkylakeX", avx512_sets};
    case CpuKernelPath::kAvx2:
      return BlasCores{"Haswell", avx2_sets};
    case CpuKernelPath::kBaseline:
      break;
  }
  // Whatever OpenBLAS picks on a CPU without AVX2, but none of the sets that need it (a CPU
  // whose AVX2 is hidden gets the SSE3 set, as run_on_cpu_path.sh forces for baseline).
  std::vector<std::string> wide = avx2_sets;
  wide.insert(wide.end(), avx512_sets.begin(), avx512_sets.end());
  return BlasCores{"Prescott", wide, true};
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
  return cpu_supports(CpuKernelPath::kAvx512) && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

}  // namespace

std::string select_cpu_kernels() {
  CpuKernelPath path = CpuKernelPath::kAvx512;
  try {
    path = native_cpu_kernel_path();
  } catch (const core::InputError&) {
    return "";  // a bad GOPT_CPU_HIDE: the command that reads the paths says so
  }
  std::string said;
  // ATen: LibTorch picks its own kernels from the CPU, so a hidden path is hidden there too.
  if (cpu_feature_ceiling() != CpuKernelPath::kAvx512 &&
      std::getenv("ATEN_CPU_CAPABILITY") == nullptr) {
    const char* aten = path == CpuKernelPath::kAvx2 ? "avx2" : "default";
    ::setenv("ATEN_CPU_CAPABILITY", aten, 1);
    said = std::string("ATen: ATEN_CPU_CAPABILITY=") + aten;
  }
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return said;
  using CoreName = char* (*)();
  using Hook = void (*)();
  auto* core_name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  // Internal to OpenBLAS's DYNAMIC_ARCH builds (driver/others/dynamic.c), but exported:
  // quit forgets the chosen kernel table, init chooses again, reading OPENBLAS_CORETYPE.
  auto* quit = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto* init = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (core_name == nullptr || quit == nullptr || init == nullptr) return said;
  if (path == CpuKernelPath::kAvx512 && !cpu_runs_skylakex_kernels()) path = CpuKernelPath::kAvx2;
  const auto cores = blas_cores_for(path, cpu_has_avx512_bf16());
  const char* name = core_name();
  std::string before = name != nullptr ? name : "";
  std::string lower = before;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (cores.runs(lower)) return said;
  ::setenv("OPENBLAS_CORETYPE", cores.wanted, 1);
  quit();
  init();
  const char* after = core_name();
  return said + (said.empty() ? "" : "; ") + "OpenBLAS: " + before + " -> " +
         (after != nullptr ? after : "unknown");
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

CpuKernelPath cpu_feature_ceiling() {
  int ceiling = g_ceiling.load();
  if (ceiling < 0) {
    ceiling = static_cast<int>(parse_hide_environment());  // throws for a bad value
    int unset = -1;
    if (!g_ceiling.compare_exchange_strong(unset, ceiling)) ceiling = unset;
  }
  return static_cast<CpuKernelPath>(ceiling);
}

void set_cpu_feature_ceiling(CpuKernelPath widest) {
  g_ceiling.store(static_cast<int>(widest));
  int forced = g_forced_path.load();
  while (forced > static_cast<int>(widest) && !g_forced_path.compare_exchange_weak(forced, -1)) {
  }
}

bool cpu_supports(CpuKernelPath path) {
  return hardware_supports(path) &&
         static_cast<int>(path) <= static_cast<int>(cpu_feature_ceiling());
}

CpuKernelPath native_cpu_kernel_path() {
  if (cpu_supports(CpuKernelPath::kAvx512)) return CpuKernelPath::kAvx512;
  if (cpu_supports(CpuKernelPath::kAvx2)) return CpuKernelPath::kAvx2;
  return CpuKernelPath::kBaseline;
}

CpuKernelPath cpu_kernel_path() {
  std::call_once(g_environment_read, [] {
    const auto parsed = parse_environment();
    if (parsed == native_cpu_kernel_path()) return;  // not forced: follow the native path
    int unset = -1;
    g_forced_path.compare_exchange_strong(unset, static_cast<int>(parsed));
  });
  const int forced = g_forced_path.load();
  return forced < 0 ? native_cpu_kernel_path() : static_cast<CpuKernelPath>(forced);
}

void set_cpu_kernel_path(CpuKernelPath path) {
  if (!cpu_supports(path)) throw core::InputError("set_cpu_kernel_path", "", lacks_text(path));
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
      // LibTorch on x86 says "NO AVX" for the path ATEN_CPU_CAPABILITY calls "default".
      if (part.variable == "ATEN_CPU_CAPABILITY" && name == "NO AVX") name = "default";
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
