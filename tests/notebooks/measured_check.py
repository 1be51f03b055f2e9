#!/usr/bin/env python3
"""Checks that the notebooks' reader reads the measurements of `gopt measure` (/measured).

RESULTS.h5 is a results file some of whose results `gopt measure` executed on hardware:
measurements_frame has a row per measured result with positive measured and simulated step
times and its key among the file's results; measured_table has one row per measured
(workload, agent) and measured_winners_table one per measured workload, whose winners are
agents of that workload. A copy without /measured reads as no measurements and empty tables.

Usage: measured_check.py RESULTS.h5
"""
import math
import os
import shutil
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "notebooks"))
import gopt_results as gr  # noqa: E402


def check(problems, ok, what):
    if not ok:
        problems.append(what)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    path = argv[1]
    problems = []

    df = gr.results_frame(path)
    meas = gr.measurements_frame(path)
    check(problems, len(meas) > 0, f"{path}: no measurements")
    check(problems, (meas["measured_step_time_s"] > 0).all(),
          f"{path}: measured_step_time_s not positive")
    check(problems, (meas["simulated_step_time_s"] > 0).all(),
          f"{path}: simulated_step_time_s not positive")
    check(problems, (meas["measured_spread"] >= 0).all(), f"{path}: negative measured_spread")
    check(problems, meas["command"].str.startswith("gopt measure ").all(), f"{path}: commands")
    results = set(zip(df["workload"], df["agent"], df["seed"]))
    measured = set(zip(meas["workload"], meas["agent"], meas["seed"]))
    check(problems, measured <= results,
          f"{path}: measurements without a result: {sorted(measured - results)}")

    table = gr.measured_table(df, meas)
    workloads, agents = list(dict.fromkeys(df["workload"])), list(dict.fromkeys(df["agent"]))
    pairs = [(w, a) for w in workloads for a in agents if any(k[:2] == (w, a) for k in measured)]
    check(problems, list(zip(table["workload"], table["agent"])) == pairs,
          f"{path}: measured_table rows {list(zip(table['workload'], table['agent']))}, "
          f"expected {pairs}")
    check(problems, table["seeds"].sum() == len(meas), f"{path}: measured_table seeds")
    check(problems, ((table["measured_ms"] > 0) & (table["simulated_ms"] > 0)).all(),
          f"{path}: measured_table times")
    expected = 100 * (table["simulated_ms"] - table["measured_ms"]) / table["measured_ms"]
    check(problems, ((table["error_pct"] - expected).abs() < 1e-9).all(),
          f"{path}: measured_table error_pct")

    winners = gr.measured_winners_table(df, meas)
    measured_workloads = list(dict.fromkeys(w for w, _ in pairs))
    check(problems, list(winners["workload"]) == measured_workloads,
          f"{path}: measured_winners_table rows {list(winners['workload'])}, "
          f"expected {measured_workloads}")
    for _, row in winners.iterrows():
        agents = set(table.loc[table["workload"] == row["workload"], "agent"])
        check(problems, row["simulated_winner"] in agents and row["measured_winner"] in agents,
              f"{path}: {row['workload']}: winners not among {sorted(agents)}")
        check(problems, row["same"] in ("yes", "within spread", "no"),
              f"{path}: {row['workload']}: same = {row['same']}")
        tau = row["kendall_tau"]
        check(problems, math.isnan(tau) if len(agents) < 2 else -1 <= tau <= 1,
              f"{path}: {row['workload']}: kendall_tau {tau}")

    with tempfile.TemporaryDirectory() as tmp:
        bare = os.path.join(tmp, "bare.h5")
        shutil.copy(path, bare)
        with h5py.File(bare, "r+") as f:
            del f["measured"]
        none = gr.measurements_frame(bare)
        check(problems, none.empty and list(none.columns) == list(meas.columns),
              f"{bare}: measurements without /measured")
        check(problems, gr.measured_table(df, none).empty and
              gr.measured_winners_table(df, none).empty, f"{bare}: tables without /measured")

    for p in problems:
        print("measured_check: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
