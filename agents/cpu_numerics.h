// Which CPU code paths the learned agents' arithmetic takes, and how to force one. Float
// rounding differs between AVX-512, AVX2 and baseline x86-64 code (fused multiply-adds,
// vector widths, summation orders), and a learning trajectory amplifies the last bits, so
// results are reproducible on one machine and code path, not across CPUs. Tests and
// researchers force a path to compare; every results file records the one it ran on.
#pragma once

#include <string>
#include <string_view>

namespace gopt::agents {

/// The instruction sets gopt's own fused CPU kernels (the GO policy's segment attention)
/// are compiled for.
enum class CpuKernelPath { kBaseline, kAvx2, kAvx512 };

/// "baseline", "avx2" or "avx512".
[[nodiscard]] std::string_view to_string(CpuKernelPath path);

/// The widest path gopt takes this CPU to run: kAvx512 unless the environment variable
/// GOPT_CPU_HIDE hides instruction sets the CPU has, as if it lacked them, so that a machine
/// with AVX-512 runs what one without it does (tests, CI): `avx512` hides AVX-512 (every
/// subset, BF16 too; the ceiling is kAvx2), `avx2` hides AVX2 and FMA and with them AVX-512
/// (kBaseline), `none` or unset hides nothing. Read at the first call; throws
/// core::InputError naming GOPT_CPU_HIDE for another value. Every CPU check below, and the
/// kernels select_cpu_kernels picks for OpenBLAS and ATen, see only what it leaves.
[[nodiscard]] CpuKernelPath cpu_feature_ceiling();

/// Hides the paths wider than `widest` for the rest of the process, as GOPT_CPU_HIDE does
/// (tests; kAvx512 shows everything again). A forced path wider than `widest` is dropped
/// and the native path taken.
///
///   set_cpu_feature_ceiling(CpuKernelPath::kAvx2);  // as on a CPU without AVX-512
void set_cpu_feature_ceiling(CpuKernelPath widest);

/// Whether this CPU runs `path` and it is not hidden (kBaseline: always).
[[nodiscard]] bool cpu_supports(CpuKernelPath path);

/// The widest path this CPU runs that is not hidden.
[[nodiscard]] CpuKernelPath native_cpu_kernel_path();

/// The path the fused kernels take in this process: the one set by set_cpu_kernel_path, else
/// the environment variable GOPT_CPU_KERNEL (`baseline`, `avx2`, `avx512`, or `native`, the
/// default: native_cpu_kernel_path()), read at the first call. Throws core::InputError
/// naming GOPT_CPU_KERNEL for an unknown value or a path this CPU lacks or hides.
[[nodiscard]] CpuKernelPath cpu_kernel_path();

/// Forces `path` for the rest of the process (tests). Throws core::InputError if this CPU
/// lacks or hides it, and leaves the path as it was.
///
///   if (cpu_supports(CpuKernelPath::kAvx2)) set_cpu_kernel_path(CpuKernelPath::kAvx2);
void set_cpu_kernel_path(CpuKernelPath path);

/// Chooses the kernels of the libraries beneath the agents for the paths this CPU runs, as
/// gopt sees it (cpu_feature_ceiling). OpenBLAS 0.3.21 (Debian 12's) falls back to its
/// generic Prescott (SSE3) kernels on a CPU it does not know, such as a recent Xeon, and
/// GO's matrix products then run about 1.6 times slower (BM_GoPpoUpdate/gnmt_8: 6.6 s of
/// CPU against 3.9 s with its SkylakeX kernels). Unless OPENBLAS_CORETYPE is set, this
/// re-selects OpenBLAS's kernels for the widest path the CPU runs (Cooperlake for AVX-512
/// with BF16, which OpenBLAS picks itself on the BF16 CPUs it knows; SkylakeX for AVX-512;
/// Haswell for AVX2 and FMA; Prescott when AVX2 is hidden) when OpenBLAS picked a set that
/// path does not run, and sets OPENBLAS_CORETYPE so that child processes agree. When
/// GOPT_CPU_HIDE hides a path, it also sets ATEN_CPU_CAPABILITY (`avx2`, or `default`
/// without AVX2) unless that is set, so that LibTorch's kernels do not use what is hidden.
/// Call it at the start of main, before any thread uses BLAS or ATen. Returns what it did
/// ("OpenBLAS: Prescott -> SkylakeX"), or "" when there was nothing to do.
std::string select_cpu_kernels();

/// One line naming every CPU code path that shapes the agents' float results, for a results
/// file's provenance:
/// "gopt kernels avx512 (native); ATen AVX2; OpenBLAS SkylakeX". ATen's path is what
/// LibTorch reports (ATEN_CPU_CAPABILITY forces it), OpenBLAS's what the library says it
/// picked (OPENBLAS_CORETYPE forces it), "unknown" where it cannot be read.
[[nodiscard]] std::string cpu_numerics_description();

/// The environment that forces the paths of a cpu_numerics_description() line, as a
/// results file recorded it: "gopt kernels avx512 (native); ATen AVX2; OpenBLAS Cooperlake"
/// gives "GOPT_CPU_KERNEL=avx512 ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Cooperlake";
/// LibTorch's "NO AVX" (its default path on x86) gives ATEN_CPU_CAPABILITY=default; parts
/// it cannot name ("unknown") are left out.
[[nodiscard]] std::string cpu_numerics_environment(const std::string& description);

}  // namespace gopt::agents
