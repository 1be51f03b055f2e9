#!/usr/bin/env bash
# Runs the paper's full experiment configs (Tables 3, 1 and 2, in that order) into
# results/, continuing whatever an earlier call left unfinished: finished results are
# skipped and GO jobs continue from their training snapshots (docs/config.md "Resuming"),
# so the hours the full configs need (README) can be spread over shorter runs.
# Stop it at any time with Ctrl-C (or SIGTERM); call it again to continue. The results
# files, snapshots and checkpoints of these three configs are not ignored by git: commit
# them (git add results/) to continue a run from another clone.
#
#   scripts/reproduce_tables.sh [--jobs N] [--only table1|table2|table3]
#
# Then: build/bin/gopt table results/table3_multitask.h5 (and table1, table2).
set -euo pipefail

cd "$(dirname "$0")/.."
jobs=2
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "reproduce_tables.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

gopt=build/bin/gopt
if [ ! -x "$gopt" ]; then
  echo "reproduce_tables.sh: $gopt not found; build first (scripts/setup.sh)" >&2
  exit 1
fi

for config in table3_multitask table1_placement table2_generalization; do
  case "$only" in
    "" | "${config%%_*}") ;;
    *) continue ;;
  esac
  out="results/$config.h5"
  resume=()
  [ -e "$out" ] && resume=(--resume)
  echo "reproduce_tables.sh: $config -> $out" >&2
  "$gopt" run "experiments/configs/$config.yaml" --out "$out" --jobs "$jobs" "${resume[@]}"
done
