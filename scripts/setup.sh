#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for gopt: installs every Debian package the project
# needs (idempotent, non-interactive, as root or through sudo), then configures and builds.
#
# Usage: scripts/setup.sh [--no-build] [--build-dir DIR] [--build-type TYPE] [-- extra cmake args]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$here/build"
build_type="Release"
do_build=1
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) do_build=0 ;;
    --build-dir) build_dir="$2"; shift ;;
    --build-type) build_type="$2"; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# Every package the project needs, in one place.
packages=(
  build-essential cmake ninja-build pkg-config git clang-format clang-tidy
  libboost-graph-dev
  libhdf5-dev
  libyaml-cpp-dev
  nlohmann-json3-dev
  libcli11-dev
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  libmetis-dev
  libtorch-dev libopenblas0-pthread
  libgloo-dev
  libonnx-dev libprotobuf-dev
  python3-torch python3-torchvision python3-onnx
  python3
  python3-h5py python3-pandas python3-matplotlib
  python3-dev python3-numpy pybind11-dev python3-pytest
  jupyter-nbconvert python3-nbconvert python3-ipykernel python3-nbformat jupyter-notebook
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "setup.sh: installing ${missing[*]}" >&2
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ "$do_build" = 1 ] || exit 0
jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${extra[@]}"
cmake --build "$build_dir" -j "$jobs"
