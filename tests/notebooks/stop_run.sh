#!/usr/bin/env bash
# Runs `gopt run CONFIG --out FILE` with learning curves written every 0.05 s and stops it
# with SIGINT after SECONDS: the file then holds a stopped job's curve (CTest
# `notebooks_live_results`). Fails unless gopt exits 130 (stopped) in time.
#
# Usage: tests/notebooks/stop_run.sh GOPT CONFIG FILE SECONDS
set -uo pipefail
gopt="$1" config="$2" file="$3" seconds="$4"
"$gopt" run "$config" --out "$file" --overwrite --curve-every 0.05 &
pid=$!
sleep "$seconds"
kill -INT "$pid"
wait "$pid"
rc=$?
if [ "$rc" -ne 130 ]; then
  echo "stop_run.sh: gopt run exited $rc, expected 130 (stopped by SIGINT)" >&2
  exit 1
fi
