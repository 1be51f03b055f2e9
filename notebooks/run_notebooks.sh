#!/usr/bin/env bash
# Executes every notebook in this folder headless against a results file (CI: the CTest
# test `notebooks`), then checks that every plotting cell drew an image and saves the
# figures as PNG files in OUTPUT_DIR/figures. Fails when jupyter nbconvert is missing:
# scripts/setup.sh installs it.
#
# Usage: notebooks/run_notebooks.sh RESULTS.h5 OUTPUT_DIR [NOTEBOOK=RESULTS.h5 ...]
#   (NOTEBOOK=FILE gives one notebook, e.g. generalization, its own results file)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
absolute() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
results="$(absolute "$1")"
out="$2"
shift 2
declare -A own
for pair in "$@"; do own["${pair%%=*}"]="$(absolute "${pair#*=}")"; done
if ! command -v jupyter >/dev/null 2>&1 || ! jupyter nbconvert --version >/dev/null 2>&1; then
  echo "run_notebooks.sh: jupyter nbconvert not found; install jupyter-nbconvert," \
       "python3-nbconvert, python3-ipykernel, python3-h5py, python3-pandas," \
       "python3-matplotlib (scripts/setup.sh does)" >&2
  exit 1
fi
mkdir -p "$out"
# No MPLBACKEND here: the kernel's inline backend is what puts figures into the notebook
# (with Agg, plt.show() drew nothing and the executed notebooks had empty plot cells).
unset MPLBACKEND
export GOPT_RESULTS="$results" GOPT_NOTEBOOKS_DIR="$here" PYDEVD_DISABLE_FILE_VALIDATION=1
for nb in "$here"/*.ipynb; do
  name="$(basename "$nb" .ipynb)"
  # The what-if notebook drives the Python module (docs/python.md), which a build without
  # pybind11 does not have.
  if [ "$name" = what_if_placement ] && ! /usr/bin/python3 -c 'import gopt' >/dev/null 2>&1; then
    echo "skipping $name.ipynb: the Python module gopt is not importable (PYTHONPATH=build/python)"
    continue
  fi
  GOPT_RESULTS="${own[$name]:-$results}"
  export GOPT_RESULTS
  echo "executing $name.ipynb against $GOPT_RESULTS"
  jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=240 \
    --output-dir "$out" "$nb"
done
python3 "$here/check_executed.py" "$out/figures" "$out"/*.ipynb
