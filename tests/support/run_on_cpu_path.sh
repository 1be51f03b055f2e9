#!/bin/sh
# Runs a test command with every CPU code path that shapes the learned agents' float
# results forced to one choice (docs/agents.md, "Determinism and CPU code paths"):
# gopt's fused kernels (GOPT_CPU_KERNEL), LibTorch's ATen kernels (ATEN_CPU_CAPABILITY)
# and OpenBLAS (OPENBLAS_CORETYPE; Zen is the AMD EPYC development machines' choice).
# GOPT_CPU_HIDE (avx512 or avx2), when set, hides those instruction sets here as gopt does,
# so that a machine with AVX-512 runs what one without it runs. `native` is the widest
# path left. Exits 77, which CTest reports as skipped, when this CPU lacks (or hides) the
# path, or when the path is the one this CPU takes anyway and the plain test run covers it.
#
# Usage: [GOPT_CPU_HIDE=avx512|avx2] run_on_cpu_path.sh native|baseline|avx2|avx512 COMMAND [ARGS...]
set -eu
path="$1"
shift
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
hide="${GOPT_CPU_HIDE:-none}"
case "$hide" in
  none) ;;
  avx512) flags=" $(printf '%s\n' $flags | grep -v '^avx512' | tr '\n' ' ') " ;;
  avx2) flags=" $(printf '%s\n' $flags | grep -v -e '^avx512' -e '^avx2$' -e '^fma$' | tr '\n' ' ') " ;;
  *) echo "run_on_cpu_path.sh: GOPT_CPU_HIDE: expected avx512, avx2 or none, found '$hide'" >&2; exit 2 ;;
esac
has() {
  for f in "$@"; do
    case "$flags" in *" $f "*) ;; *) return 1 ;; esac
  done
}
if has avx512f avx512vl avx2 fma; then native=avx512
elif has avx2 fma; then native=avx2
else native=baseline; fi
plain=1  # whether the plain test run already takes this path
if [ "$path" = native ]; then
  path="$native"
  [ "$hide" = none ] || plain=0
fi
case "$path" in
  baseline) need="" aten=default blas=Prescott ;;
  avx2) need="avx2 fma" aten=avx2 blas=Zen ;;
  avx512) need="avx512f avx512vl avx2 fma" aten=avx2 blas=SkylakeX ;;
  *) echo "run_on_cpu_path.sh: unknown path '$path' (native, baseline, avx2 or avx512)" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
if ! has $need; then
  echo "skipped: this CPU lacks the $path path (it lacks one of: $need; GOPT_CPU_HIDE=$hide)"
  exit 77
fi
if [ "$plain" = 1 ] && [ "$path" = "$native" ] && [ "$path" != baseline ]; then
  echo "skipped: $path is this CPU's native path, which the plain test run covers"
  exit 77
fi
echo "running on the $path path (GOPT_CPU_HIDE=$hide): GOPT_CPU_KERNEL=$path ATEN_CPU_CAPABILITY=$aten OPENBLAS_CORETYPE=$blas"
# No GPU visible, so that the GO agents' `device: auto` takes the CPU path under test.
CUDA_VISIBLE_DEVICES="" GOPT_CPU_HIDE="$hide" GOPT_CPU_KERNEL="$path" ATEN_CPU_CAPABILITY="$aten" OPENBLAS_CORETYPE="$blas" exec "$@"
