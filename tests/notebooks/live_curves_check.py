#!/usr/bin/env python3
"""Checks that the notebooks' helpers show a job that was training when its run stopped.

Reads a results file written by tests/notebooks/stop_run.sh (a GO-one job stopped mid-
training): gopt_results.running_jobs lists it as stopped with its updates so far,
learning_curves(running=True) holds its curve, and gopt_plots.learning_curves draws it
labelled "(stopped)". Saves the figure as OUTPUT_DIR/live_curves.png.

Usage: live_curves_check.py RESULTS.h5 OUTPUT_DIR
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "notebooks"))
import gopt_plots as gp  # noqa: E402
import gopt_results as gr  # noqa: E402


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    path, out = argv[1], argv[2]
    problems = []
    running = gr.running_jobs(path)
    if len(running) != 1:
        problems.append(f"expected one running job, found {len(running)}")
    else:
        job = running.iloc[0]
        if (job["agent"], job["state"]) != ("go_one", "stopped"):
            problems.append(f"expected go_one stopped, found {job['agent']} {job['state']}")
        if not job["updates"] >= 1 or job["max_steps"] != 100000:
            problems.append(f"updates {job['updates']} of {job['max_steps']}")
    finished = gr.learning_curves(path)
    live = gr.learning_curves(path, running=True)
    stopped = live[live["state"] == "stopped"]
    if len(finished) != 0 or len(stopped) == 0 or len(stopped) != len(live):
        problems.append(f"curves: {len(finished)} finished, {len(stopped)} stopped of {len(live)}")
    df = gr.results_frame(path)
    fig = gp.learning_curves(df, live)
    labels = [line.get_label() for ax in fig.axes for line in ax.get_lines()]
    if "go_one seed 1 (stopped)" not in labels:
        problems.append(f"no line labelled 'go_one seed 1 (stopped)' among {labels}")
    os.makedirs(out, exist_ok=True)
    fig.savefig(os.path.join(out, "live_curves.png"))
    for p in problems:
        print(f"live_curves_check.py: {path}: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
