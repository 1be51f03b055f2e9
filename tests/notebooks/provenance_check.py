#!/usr/bin/env python3
"""Checks that the notebooks' reader exposes provenance and reads both schema versions.

RESULTS.h5 is a format-version-2 file from `gopt run` (the notebooks test's run): every
row carries the run's git revision, command and config hash, learners their budget, and
the history holds that one run. FIXTURE.h5 is a committed version-1 file: it still reads,
its rows without provenance and its history empty. A copy marked version 3 is refused
with a message naming the versions this module reads.

Usage: provenance_check.py RESULTS.h5 FIXTURE.h5
"""
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
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    new, old = argv[1], argv[2]
    problems = []

    meta = gr.metadata(new)
    check(problems, meta["format_version"] == 2, f"{new}: format_version {meta['format_version']}")
    df = gr.results_frame(new)
    check(problems, len(df) > 0, f"{new}: no results")
    check(problems, (df["git_revision"] == meta["git_revision"]).all(),
          f"{new}: rows whose git_revision is not the file's {meta['git_revision']}")
    check(problems, (df["config_hash"] == meta["config_hash"]).all(),
          f"{new}: rows whose config_hash is not the file's")
    check(problems, df["command"].str.startswith("gopt run ").all(), f"{new}: commands")
    learners = df[df["learner"]]
    check(problems, len(learners) > 0 and learners["budget_steps"].notna().all(),
          f"{new}: learners without budget_steps")
    check(problems, df[~df["learner"]]["budget_steps"].isna().all(),
          f"{new}: agents that do not learn with a budget")
    runs = gr.history(new)
    check(problems, len(runs) == 1 and runs["git_revision"][0] == meta["git_revision"]
          and runs["config"][0] is None, f"{new}: history {runs.to_dict('records')}")

    df1 = gr.results_frame(old)
    check(problems, len(df1) > 0 and df1["git_revision"].isna().all(),
          f"{old}: version-1 rows with provenance")
    check(problems, gr.history(old).empty, f"{old}: a history in a version-1 file")

    with tempfile.TemporaryDirectory() as tmp:
        newer = os.path.join(tmp, "newer.h5")
        shutil.copy(new, newer)
        with h5py.File(newer, "r+") as f:
            f.attrs["format_version"] = 3
        try:
            gr.results_frame(newer)
            problems.append("a version-3 file was read")
        except gr.ResultsFileError as e:
            check(problems, "results format version 3; this module reads versions 1 to 2"
                  in str(e), f"version-3 message: {e}")

    for p in problems:
        print("provenance_check: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
