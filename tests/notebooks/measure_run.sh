#!/usr/bin/env bash
# A tiny measured table end to end (CTest `notebooks_measured`): a quick `gopt calibrate` of
# this machine (two CPU workers), CONFIG run on that profile, `gopt measure` of every
# result (a handful of repeats), `gopt table --table measured`, then the notebook helper's
# measured frames (tests/notebooks/measured_check.py). Asserts fields, never times.
#
# Usage: tests/notebooks/measure_run.sh GOPT CONFIG DIR
set -euo pipefail
gopt="$1" config="$2" dir="$3"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$dir"
"$gopt" calibrate --backend cpu --devices 2 --quick --out "$dir/cpu2.yaml" > /dev/null
"$gopt" run "$config" --set "hardware=$dir/cpu2.yaml" --out "$dir/measured.h5" --overwrite
"$gopt" measure "$dir/measured.h5" --rounds 2 --warmup 1 --steps 2
"$gopt" table "$dir/measured.h5" --table measured | grep -q 'simulator error'
/usr/bin/python3 "$here/measured_check.py" "$dir/measured.h5"
