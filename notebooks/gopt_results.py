"""Read gopt results files (HDF5 written by `gopt run`; schema: docs/results-format.md).

The notebooks in this folder use this module only, so that a schema change has one place
to follow. Needs Debian's python3-h5py, python3-pandas and python3-numpy.

    import gopt_results as gr
    meta = gr.metadata("results/quickstart.h5")          # the first run's facts, history
    runs = gr.history("results/quickstart.h5")            # one row per run into the file
    df = gr.results_frame("results/quickstart.h5")        # one row per (workload, agent, seed)
    curves = gr.learning_curves("results/quickstart.h5")  # one row per learner update
    running = gr.running_jobs("results/quickstart.h5")    # jobs still training, one row each
    table = gr.placement_table(df)                        # `gopt table`'s placement table
    meas = gr.measurements_frame("results/quickstart.h5") # one row per `gopt measure` result
    gr.measured_table(df, meas)                           # `gopt table --table measured`
    gr.measured_winners_table(df, meas)                   # ... and its winners table
"""

from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pandas as pd

FORMAT_NAME = "gopt-results"
# The schema versions this module reads: 1, and 2 (provenance per result, the run history;
# minor version 2 adds /measured).
OLDEST_FORMAT_VERSION = 1
FORMAT_VERSION = 2

RESULT_ATTRS = [
    "workload", "agent", "seed", "order", "agent_type", "learner", "held_out", "graph",
    "hardware", "problem_seed", "num_nodes", "num_devices", "best_step_time_s", "oom",
    "oom_device", "lower_bound_critical_path_s", "lower_bound_work_s", "bytes_moved",
    "wall_s", "samples",
]
# Written only by `gopt validate` (measured on a real backend); absent otherwise.
MEASURED_ATTRS = ["measured_step_time_s", "measured_backend", "measured_spread", "op_times",
                  "op_times_in_sample"]
# The tightest lower bound (simulator/lower_bounds.h); absent in files written before
# 2026-11-24, where results_frame fills it with max(critical path, work).
BOUND_ATTR = "lower_bound_s"
# Where a result came from (format version 2; None in version-1 files): the binary, the
# machine, the libraries, the command and the config's hash.
PROVENANCE_ATTRS = ["git_revision", "gopt_version", "host", "cpu_numerics", "libraries",
                    "command", "config_hash"]
# A learner's training budget (format version 2; None for agents that do not learn). No
# limit reads as the int64 maximum (samples) or inf (seconds).
BUDGET_ATTRS = ["budget_steps", "budget_samples", "budget_seconds"]
CURVE_FIELDS = ["step", "samples", "best_step_time_s", "mean_step_time_s", "wall_s"]
# The attributes of a /measured/<workload>:<agent>:<seed> group (format 2.2, written by
# `gopt measure`: the result's decision executed on this machine's backend), after its key
# (workload, agent, seed) and without digest and complete. Since 2.3 the group has one
# dataset, step_times_s (every timed step); since 2.4 the fusion counts (fused_groups,
# fused_ops, fused_loop_ops; None in older files).
MEASUREMENT_ATTRS = [
    "simulated_step_time_s", "measured_step_time_s", "measured_spread", "repeats", "rounds",
    "warmup_steps", "cpu_share", "fusion_dropped", "fused_groups", "fused_ops",
    "fused_loop_ops", "measured_backend", "profile",
    "measured_at", "gopt_version", "git_revision", "host", "cpu_numerics", "libraries",
    "command", "config_hash", "format_minor_version",
]


class ResultsFileError(Exception):
    """The file is missing, not HDF5, truncated, or not a gopt results file."""


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def open_results(path):
    """Opens a results file read-only (without HDF5's file lock, so a file that a running
    `gopt run` writes can be read) after checking its format marker."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ResultsFileError(f"{path}: no such file")
    try:
        try:
            f = h5py.File(path, "r", locking=False)
        except TypeError:  # h5py older than 3.5
            f = h5py.File(path, "r")
    except OSError as e:
        raise ResultsFileError(f"{path}: not a readable HDF5 file (truncated?): {e}") from e
    if _text(f.attrs.get("format", "")) != FORMAT_NAME:
        f.close()
        raise ResultsFileError(
            f"{path}: not a gopt results file (no root attribute format = '{FORMAT_NAME}')")
    version = int(f.attrs.get("format_version", 0))
    if not OLDEST_FORMAT_VERSION <= version <= FORMAT_VERSION:
        f.close()
        raise ResultsFileError(f"{path}: results format version {version}; this module reads "
                               f"versions {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}")
    return f


def _complete(group):
    return int(group.attrs.get("complete", 0)) == 1


def _value(v):
    return _text(v) if isinstance(v, (bytes, str)) else v.item() if hasattr(v, "item") else v


def metadata(path):
    """The file attributes, those of the run that created it: experiment, table, config
    (resolved YAML), gopt_version, git_revision, host, libraries, command, config_hash,
    start_time, ...; `history` is the list of every run into the file (dicts, see
    history()), empty for version-1 files."""
    with open_results(path) as f:
        meta = {k: _value(v) for k, v in f.attrs.items()}
    meta["history"] = json.loads(meta["history"]) if "history" in meta else []
    return meta


def history(path):
    """One row per run into the file, the first one first (`gopt run`, then each
    `--resume`): start_time, the provenance fields and config (that run's resolved config
    when it differs from the file's, else None). Empty for version-1 files."""
    runs = metadata(path)["history"]
    return pd.DataFrame([{"start_time": r["start_time"], **{k: r[k] for k in PROVENANCE_ATTRS},
                          "config": r.get("config")} for r in runs],
                        columns=["start_time"] + PROVENANCE_ATTRS + ["config"])


def results_frame(path):
    """One row per complete result, in config order, with every scalar attribute, the
    agent options (a dict), its provenance and budget (None where the file or agent has
    none) and best_step_time_ms."""
    rows = []
    with open_results(path) as f:
        for name, g in f["results"].items():
            if not _complete(g):
                continue
            row = {}
            for key in RESULT_ATTRS:
                value = g.attrs[key]
                row[key] = _text(value) if isinstance(value, (bytes, str)) else value.item()
            for key in ("learner", "held_out", "oom"):
                row[key] = bool(row[key])
            row["options"] = json.loads(_text(g.attrs["options"]))
            basic = max(row["lower_bound_critical_path_s"], row["lower_bound_work_s"])
            row[BOUND_ATTR] = max(basic, float(g.attrs.get(BOUND_ATTR, 0.0)))
            for key in MEASURED_ATTRS:
                if key in g.attrs:
                    row[key] = _value(g.attrs[key])
            for key in PROVENANCE_ATTRS + BUDGET_ATTRS:
                row[key] = _value(g.attrs[key]) if key in g.attrs else None
            rows.append(row)
    measured = [k for k in MEASURED_ATTRS if any(k in r for r in rows)]
    df = pd.DataFrame(rows, columns=RESULT_ATTRS + [BOUND_ATTR, "options"] + measured
                      + PROVENANCE_ATTRS + BUDGET_ATTRS)
    df = df.sort_values(["order", "workload", "agent", "seed"]).reset_index(drop=True)
    df["best_step_time_ms"] = df["best_step_time_s"] * 1e3
    return df


def _keyed_frame(source, fields, workload, agent, seed, **more):
    """The datasets `fields` of the group `source` as columns, after workload, agent, seed
    and the columns in `more`."""
    frame = pd.DataFrame({k: np.asarray(source[k]) for k in fields})
    for i, (name, value) in enumerate({"workload": workload, "agent": agent, "seed": seed,
                                       **more}.items()):
        frame.insert(i, name, value)
    return frame


def _curve_frame(group, workload, agent, seed, state):
    return _keyed_frame(group["learning_curve"], CURVE_FIELDS, workload, agent, seed,
                        state=state)


def _running_groups(f):
    """(group, rows) of each complete /running entry; rows: [(workload, agent, seed)]."""
    if "running" not in f:
        return []
    return [(g, [tuple(r) for r in json.loads(_text(g.attrs["rows"]))])
            for g in f["running"].values() if _complete(g)]


def learning_curves(path, running=False):
    """One row per learner update: workload, agent, seed, state and the curve fields.
    state is "finished" for results; with running=True the curves so far of jobs still
    training (`/running`) are included with their state ("running", "stopped", "failed"),
    once per result the job will write."""
    frames = []
    with open_results(path) as f:
        for name, g in f["results"].items():
            if not _complete(g) or "learning_curve" not in g:
                continue
            frames.append(_curve_frame(g, _text(g.attrs["workload"]), _text(g.attrs["agent"]),
                                       g.attrs["seed"].item(), "finished"))
        if running:
            for g, rows in _running_groups(f):
                for workload, agent, seed in rows:
                    frames.append(_curve_frame(g, workload, agent, int(seed),
                                               _text(g.attrs["state"])))
    if not frames:
        return pd.DataFrame(columns=["workload", "agent", "seed", "state"] + CURVE_FIELDS)
    return pd.concat(frames, ignore_index=True)


def best_so_far(path):
    """One row per simulation that improved a finished learner's best step time: workload,
    agent, seed, samples (simulations so far, that one counted), best_step_time_s. The
    convergence functions below count samples on it sample by sample. A result written
    before these were recorded (2026-11-29) contributes its learning-curve points instead,
    one per update, which count to the end of the update that reached a target."""
    frames = []
    with open_results(path) as f:
        for name, g in f["results"].items():
            if not _complete(g) or "learning_curve" not in g:
                continue
            source = g["best_improvements"] if "best_improvements" in g else g["learning_curve"]
            frames.append(_keyed_frame(source, ("samples", "best_step_time_s"),
                                       _text(g.attrs["workload"]), _text(g.attrs["agent"]),
                                       g.attrs["seed"].item()))
    if not frames:
        return pd.DataFrame(columns=["workload", "agent", "seed", "samples", "best_step_time_s"])
    return pd.concat(frames, ignore_index=True)


def running_jobs(path):
    """Jobs still training when the file was last written (`/running`; `gopt table`'s
    `running` table): one row per job with the first result it will write (workload,
    agent, seed), every workload it writes, its state, updates so far of its budget,
    samples, best step time so far and when it was written. Empty once the run finished."""
    columns = ["workload", "agent", "seed", "workloads", "agent_type", "state", "updates",
               "max_steps", "samples", "best_step_time_ms", "updated", "host", "pid"]
    rows = []
    with open_results(path) as f:
        for g, keys in _running_groups(f):
            step = np.asarray(g["learning_curve/step"])
            samples = np.asarray(g["learning_curve/samples"])
            best = np.asarray(g["learning_curve/best_step_time_s"])
            state = _text(g.attrs["state"])
            if state == "failed" and "message" in g.attrs:
                state += ": " + _text(g.attrs["message"])
            rows.append({
                "workload": keys[0][0], "agent": keys[0][1], "seed": int(keys[0][2]),
                "workloads": [k[0] for k in keys], "agent_type": _text(g.attrs["agent_type"]),
                "state": state, "updates": int(step[-1]) if len(step) else 0,
                "max_steps": int(g.attrs["max_steps"]),
                "samples": int(samples[-1]) if len(samples) else 0,
                "best_step_time_ms": float(best[-1]) * 1e3 if len(best) else float("nan"),
                "updated": _text(g.attrs["updated"]), "host": _text(g.attrs["host"]),
                "pid": int(g.attrs["pid"]),
            })
    return pd.DataFrame(rows, columns=columns)


def measurements_frame(path):
    """One row per complete `/measured` group (`gopt measure`: a result's decision executed
    on a real backend): workload, agent, seed, the executed decision's simulated and measured
    step times (s; measured: the median of the timed steps), measured_spread ((max - min) /
    median of the timed steps), repeats, rounds, warmup_steps, cpu_share (of the busiest
    worker), fusion_dropped (bool: measured by a gopt that did not execute fusion, so both
    times are of the unfused decision), fused_groups, fused_ops and fused_loop_ops (how the
    backend ran the decision's fusion; None before format 2.4), the backend, profile, measured_at, the measuring process's
    provenance and format_minor_version; then step_times_s (a numpy array of every timed
    step, None before format 2.3) and spread: the interquartile range of the step times over
    their median, as `gopt table` reports it (measured_spread when there are no step times).
    Empty (same columns) when nothing was measured."""
    columns = ["workload", "agent", "seed"] + MEASUREMENT_ATTRS + ["step_times_s", "spread"]
    rows = []
    with open_results(path) as f:
        if "measured" in f:
            for name, g in f["measured"].items():
                if not _complete(g):
                    continue
                row = {k: _value(g.attrs[k]) if k in g.attrs else None
                       for k in ["workload", "agent", "seed"] + MEASUREMENT_ATTRS}
                row["seed"] = int(row["seed"])
                row["fusion_dropped"] = bool(row["fusion_dropped"])
                times = np.asarray(g["step_times_s"], dtype=float) if "step_times_s" in g else None
                row["step_times_s"] = times
                row["spread"] = (relative_iqr(times) if times is not None and len(times)
                                 else row["measured_spread"])
                rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def relative_iqr(values):
    """The interquartile range of values over their median (numpy's default, linear
    percentiles; gopt's hardware::relative_iqr); 0 when empty or the median is 0."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return 0.0
    median = float(np.median(values))
    if not median > 0:
        return 0.0
    q25, q75 = np.percentile(values, [25, 75])
    return float((q75 - q25) / median)


def decision(path, workload, agent, seed):
    """The decision arrays of one result: a dict with any of placement, priority, fusion."""
    with open_results(path) as f:
        g = f["results"][f"{workload}:{agent}:{seed}"]
        if "decision" not in g:
            return {}
        return {k: np.asarray(v) for k, v in g["decision"].items()}


def device_stats(path, workload, agent, seed):
    """One result's per-device compute busy time (seconds) and peak memory (bytes), as two
    numpy arrays (empty when the result stores none)."""
    with open_results(path) as f:
        g = f["results"][f"{workload}:{agent}:{seed}"]
        if "devices" not in g:
            return np.array([]), np.array([])
        d = g["devices"]
        return np.asarray(d["busy_s"], dtype=float), np.asarray(d["peak_memory_bytes"],
                                                                 dtype=float)


def placement_table(df):
    """`gopt table`'s placement table as a DataFrame: mean step time (ms) over seeds per
    workload and agent (NaN when every seed ran out of memory), then the best learned
    agent's step-time reduction (percent) over each non-learning agent, with an average
    row."""
    agents = list(dict.fromkeys(df["agent"]))
    workloads = list(dict.fromkeys(df["workload"]))
    valid = df[~df["oom"]]
    times = valid.pivot_table(index="workload", columns="agent", values="best_step_time_ms",
                              aggfunc="mean")
    times = times.reindex(index=workloads, columns=agents)
    # As `gopt table`: with GO agents present, they are the subjects and every other agent
    # (HDP included) a reference; otherwise the learners against the non-learners.
    types = {a: str(df.loc[df["agent"] == a, "agent_type"].iloc[0]) for a in agents}
    go = [a for a in agents if types[a].startswith("go_")]
    learners = go or [a for a in agents if df.loc[df["agent"] == a, "learner"].any()]
    baselines = [a for a in agents if a not in learners]
    table = times.rename(columns=lambda a: f"{a} (ms)")
    if learners and baselines:
        best = times[learners].min(axis=1)
        table["best GO" if go else "best learned"] = times[learners].idxmin(axis=1)
        for b in baselines:
            table[f"vs {b}"] = 100.0 * (times[b] - best) / times[b]
        _add_best_baseline(table, times, baselines, learners)
        columns = [f"vs {b}" for b in baselines] + [f"{a} vs best baseline" for a in learners]
        # With the search reference, also against the best of the paper's baselines (the
        # average `gopt table`'s summary line gives).
        paper = [b for b in baselines if types[b] != "annealing"]
        if paper and len(paper) < len(baselines):
            best_paper = times[paper].min(axis=1)
            for a in learners:
                table[f"{a} vs best paper baseline"] = 100.0 * (best_paper - times[a]) / best_paper
                columns.append(f"{a} vs best paper baseline")
        if len(workloads) > 1:
            table.loc["average"] = table[columns].mean()
    return table


def _add_best_baseline(table, times, baselines, subjects):
    """Adds `gopt table`'s best-baseline columns to `table` (indexed by workload): the
    fastest of `baselines` per workload (named; the first in config order on a tie), its
    time (ms), and each subject's step-time reduction (percent) relative to it."""
    base = times[baselines]
    has = base.notna().any(axis=1)
    table["best baseline"] = base[has].idxmin(axis=1).reindex(times.index)
    table["best baseline (ms)"] = base.min(axis=1)
    for a in subjects:
        table[f"{a} vs best baseline"] = (100.0 * (table["best baseline (ms)"] - times[a])
                                          / table["best baseline (ms)"])


def _types(df):
    return {a: str(df.loc[df["agent"] == a, "agent_type"].iloc[0])
            for a in dict.fromkeys(df["agent"])}


def _baselines(df):
    """(subjects, baselines) as `gopt table` splits them: the GO agents against every other
    agent when there are GO agents, else the learners against the agents that do not learn."""
    agents = list(dict.fromkeys(df["agent"]))
    types = _types(df)
    go = [a for a in agents if types[a].startswith("go_")]
    subjects = go or [a for a in agents if df.loc[df["agent"] == a, "learner"].any()]
    return subjects, [a for a in agents if a not in subjects]


def bounds_table(df):
    """`gopt table`'s lower bounds and optimality gaps: per workload the bound (ms; the
    tightest recorded, simulator/lower_bounds.h), the basic max(critical path, work) (ms),
    each agent's gap (mean step time / bound) and the best agent's, with an average row."""
    agents = list(dict.fromkeys(df["agent"]))
    workloads = list(dict.fromkeys(df["workload"]))
    times = df[~df["oom"]].pivot_table(index="workload", columns="agent",
                                       values="best_step_time_ms", aggfunc="mean")
    times = times.reindex(index=workloads, columns=agents)
    bound = df.groupby("workload")[BOUND_ATTR].max().reindex(workloads) * 1e3
    basic = (df.assign(basic=df[["lower_bound_critical_path_s", "lower_bound_work_s"]].max(axis=1))
             .groupby("workload")["basic"].max().reindex(workloads) * 1e3)
    table = pd.DataFrame({"bound (ms)": bound, "max(critical path, work) (ms)": basic})
    for a in agents:
        table[f"{a} gap"] = times[a] / bound
    table["best / bound"] = times.min(axis=1) / bound
    if len(workloads) > 1:
        table.loc["average"] = table[[c for c in table.columns if "gap" in c or "/" in c]].mean()
    return table


SINGLE_TASK_GO = ("go_placement", "go_scheduling", "go_fusion")
TWO_TASK_GO = ("go_placement_scheduling", "go_placement_fusion", "go_scheduling_fusion")


def multitask_table(df):
    """`gopt table`'s multi-task table (GO paper Table 3) as a DataFrame: per workload the
    step times (ms) of the references tf_default and single_device, then every other agent's
    step-time reduction (percent) over each reference, and for go_multitask over the best of
    the single-task and of the two-task GO agents; an average row. Empty when the run has no
    reference."""
    agents = list(dict.fromkeys(df["agent"]))
    workloads = list(dict.fromkeys(df["workload"]))
    types = {a: str(df.loc[df["agent"] == a, "agent_type"].iloc[0]) for a in agents}
    times = df[~df["oom"]].pivot_table(index="workload", columns="agent",
                                       values="best_step_time_ms", aggfunc="mean")
    times = times.reindex(index=workloads, columns=agents)
    refs = []
    for kind, label in (("tf_default", "TF default"), ("single_device", "single GPU")):
        match = [a for a in agents if types[a] == kind]
        if match:
            refs.append((match[0], label))
    if not refs:
        return pd.DataFrame()
    table = pd.DataFrame(index=workloads)
    for ref, label in refs:
        table[f"{label} (ms)"] = times[ref]
    groups = [("best single task", [a for a in agents if types[a] in SINGLE_TASK_GO]),
              ("best two tasks", [a for a in agents if types[a] in TWO_TASK_GO])]
    for a in agents:
        if any(a == ref for ref, _ in refs):
            continue
        for ref, label in refs:
            table[f"{a} vs {label}"] = 100.0 * (times[ref] - times[a]) / times[ref]
        if types[a] != "go_multitask":
            continue
        for label, group in groups:
            if group:
                best = times[group].min(axis=1)
                table[f"{a} vs {label}"] = 100.0 * (best - times[a]) / best
    go = [a for a in agents if types[a].startswith("go_")]
    others = [a for a in agents if a not in go]
    if go and others:
        _add_best_baseline(table, times, others, go)
    if len(workloads) > 1:
        table.loc["average"] = table[[c for c in table.columns if " vs " in c]].mean()
    return table


def samples_to_reach(curve, target_s):
    """Simulations a best-so-far frame (best_so_far, or learning_curves at one point per
    update) needed to reach a best step time <= target_s (None: never)."""
    hit = curve[curve["best_step_time_s"] <= target_s * (1 + 1e-12)]
    return int(hit["samples"].iloc[0]) if len(hit) else None


def convergence(curves, fast="go_one", slow="hdp"):
    """Per (workload, seed): `slow`'s final best step time, the simulations each agent took to
    reach it, and their ratio (how many times fewer samples `fast` needed; the paper reports
    15x for GO against HDP). Agents are matched by label."""
    rows = []
    for (workload, seed), group in curves.groupby(["workload", "seed"]):
        a = group[group["agent"] == fast].sort_values("samples")
        b = group[group["agent"] == slow].sort_values("samples")
        if a.empty or b.empty:
            continue
        target = b["best_step_time_s"].min()
        n_fast, n_slow = samples_to_reach(a, target), samples_to_reach(b, target)
        rows.append({"workload": workload, "seed": seed, f"{slow} final best (ms)": target * 1e3,
                     f"{fast} samples": n_fast, f"{slow} samples": n_slow,
                     "times fewer": (n_slow / n_fast) if n_fast else None})
    return pd.DataFrame(rows)



def convergence_table(df, curves):
    """`gopt table`'s convergence table: per workload and agent in `curves` (best_so_far for
    the count sample by sample, as `gopt table`; learning_curves counts whole updates), the
    simulations it used (mean over seeds) and, per seed, the simulations it took to
    reach three targets, averaged over the seeds that reached them (NaN: none did; the
    `... seeds` column says how many did): HDP's final best of the same seed (the paper's
    measure, undefined where HDP found nothing that fits), the human expert's step time
    (tf_default's when there is no expert), and 1.05 times the same seed's best baseline."""
    types = _types(df)
    _, baselines = _baselines(df)
    hdp = next((a for a in types if types[a] == "hdp"), None)
    expert = next((a for a in types if types[a] in ("human_expert", "tf_default")), None)
    valid = df[~df["oom"]].set_index(["workload", "agent", "seed"])["best_step_time_s"]

    def time(workload, agent, seed):
        key = (workload, agent, seed)
        return float(valid.loc[key]) if agent is not None and key in valid.index else None

    def best_baseline(workload, seed):
        found = [t for t in (time(workload, b, seed) for b in baselines) if t is not None]
        return min(found) * 1.05 if found else None

    targets = []
    if hdp:
        targets.append((f"{hdp} final best", lambda w, s: time(w, hdp, s)))
    if expert:
        targets.append((expert, lambda w, s: time(w, expert, s)))
    targets.append(("best baseline + 5%", best_baseline))
    rows = []
    for (workload, agent), group in curves.groupby(["workload", "agent"], sort=False):
        runs = df[(df["workload"] == workload) & (df["agent"] == agent)]
        row = {"workload": workload, "agent": agent, "samples": runs["samples"].mean()}
        for label, target in targets:
            reached, goals = [], []
            for seed, c in group.groupby("seed"):
                goal = target(workload, seed)
                if goal is None:
                    continue
                goals.append(goal)
                n = samples_to_reach(c.sort_values("samples"), goal)
                if n is not None:
                    reached.append(n)
            row[f"{label} (ms)"] = np.mean(goals) * 1e3 if goals else np.nan
            row[f"samples to {label}"] = np.mean(reached) if reached else np.nan
            row[f"samples to {label}: seeds"] = f"{len(reached)} of {len(goals)}"
        rows.append(row)
    return pd.DataFrame(rows)


def _kendall_tau_b(a, b):
    """Kendall's tau-b of two equal-length sequences, as `gopt table` (hardware/validation.cpp):
    0 where it is undefined (every value of one sequence tied)."""
    try:
        from scipy.stats import kendalltau
    except ImportError:
        kendalltau = None
    if kendalltau is not None:
        tau = kendalltau(a, b).correlation
        return 0.0 if np.isnan(tau) else float(tau)
    concordant = discordant = ties_a = ties_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    denom = np.sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b))
    return (concordant - discordant) / denom if denom > 0 else 0.0


def _measured_cells(df, meas):
    """Per (workload, agent) with a measured result, by workload then agent, each in df's
    order (as `gopt table`'s grid): seeds, oom_simulated (seeds the
    simulator said ran out of memory), the mean simulated and measured step times (s) and
    the largest spread. Measurements without a complete result in df are left out."""
    columns = ["workload", "agent", "seeds", "oom_simulated", "simulated_s", "measured_s",
               "spread_max"]
    if meas.empty or df.empty:
        return pd.DataFrame(columns=columns)
    keys = ["workload", "agent", "seed"]
    joined = df[keys + ["oom"]].merge(meas[keys + ["simulated_step_time_s",
                                                   "measured_step_time_s", "spread"]],
                                      on=keys, how="inner")
    if joined.empty:
        return pd.DataFrame(columns=columns)
    cells = (joined.groupby(["workload", "agent"], sort=False)
             .agg(seeds=("seed", "size"), oom_simulated=("oom", "sum"),
                  simulated_s=("simulated_step_time_s", "mean"),
                  measured_s=("measured_step_time_s", "mean"),
                  spread_max=("spread", "max"))
             .reset_index())
    workloads = {w: i for i, w in enumerate(dict.fromkeys(df["workload"]))}
    agents = {a: i for i, a in enumerate(dict.fromkeys(df["agent"]))}
    cells["_w"], cells["_a"] = cells["workload"].map(workloads), cells["agent"].map(agents)
    cells = cells.sort_values(["_w", "_a"]).drop(columns=["_w", "_a"]).reset_index(drop=True)
    cells["oom_simulated"] = cells["oom_simulated"].astype(int)
    return cells[columns]


def measured_table(df, meas):
    """`gopt table FILE --table measured` (experiments/tables/measured.cpp) as a DataFrame:
    per workload and agent with measured results (results_frame's df, measurements_frame's
    meas), by workload then agent, each in df's order: the seeds measured, those of them the
    simulator said ran out of memory (oom_simulated), the means over those seeds of the
    simulated and measured step times (simulated_ms, measured_ms), the simulator's error on
    those means, 100 * (simulated - measured) / measured (error_pct), and 100 * the largest
    measured spread over the seeds (spread_pct). Empty when nothing was measured."""
    cells = _measured_cells(df, meas)
    return pd.DataFrame({
        "workload": cells["workload"], "agent": cells["agent"], "seeds": cells["seeds"],
        "oom_simulated": cells["oom_simulated"],
        "simulated_ms": cells["simulated_s"] * 1e3, "measured_ms": cells["measured_s"] * 1e3,
        "error_pct": 100.0 * (cells["simulated_s"] - cells["measured_s"]) / cells["measured_s"],
        "spread_pct": 100.0 * cells["spread_max"],
    }, columns=["workload", "agent", "seeds", "oom_simulated", "simulated_ms", "measured_ms",
                "error_pct", "spread_pct"])


def measured_winners_table(df, meas):
    """`gopt table FILE --table measured`'s winners table (experiments/tables/measured.cpp)
    as a DataFrame, one row per workload with measured results, in df's order: the fastest
    agent by its mean over the measured seeds in each world (simulated_winner,
    measured_winner; the first in config order on a tie); same: "yes", "within spread" when
    the simulated winner's measured time exceeds the measured winner's by at most the larger
    of their measured spreads (as a fraction of the measured winner's time), else "no";
    kendall_tau: tau-b between the agents' measured and simulated means (NaN with fewer than
    two agents, 0 where undefined, as `gopt table`). With GO agents (agent_type go_*) and
    other agents: the fastest GO agent's step-time reduction (percent) over the fastest other
    agent, each chosen in its own world (go_vs_best_baseline_simulated_pct and _measured_pct,
    the agents compared in best_go_simulated, best_baseline_simulated, best_go_measured,
    best_baseline_measured; NaN where a workload lacks either kind). No average row."""
    cells = _measured_cells(df, meas)
    subjects = [a for a, t in _types(df).items() if t.startswith("go_")]
    others = [a for a in dict.fromkeys(df["agent"]) if a not in subjects]
    with_go = bool(subjects) and bool(others)
    columns = ["workload", "simulated_winner", "measured_winner", "same", "kendall_tau"]
    if with_go:
        columns += ["go_vs_best_baseline_simulated_pct", "go_vs_best_baseline_measured_pct",
                    "best_go_simulated", "best_baseline_simulated", "best_go_measured",
                    "best_baseline_measured"]
    rows = []
    for workload, c in cells.groupby("workload", sort=False):
        c = c.set_index("agent")
        sim, real = c["simulated_s"].idxmin(), c["measured_s"].idxmin()
        same = "yes"
        if sim != real:
            gap = (c.at[sim, "measured_s"] - c.at[real, "measured_s"]) / c.at[real, "measured_s"]
            spread = max(c.at[sim, "spread_max"], c.at[real, "spread_max"])
            same = "within spread" if gap <= spread else "no"
        tau = (_kendall_tau_b(list(c["measured_s"]), list(c["simulated_s"])) if len(c) >= 2
               else float("nan"))
        row = {"workload": workload, "simulated_winner": sim, "measured_winner": real,
               "same": same, "kendall_tau": tau}
        if with_go:
            go, base = c[c.index.isin(subjects)], c[c.index.isin(others)]
            if len(go) and len(base):
                for world, column in (("simulated", "simulated_s"), ("measured", "measured_s")):
                    g, b = go[column].idxmin(), base[column].idxmin()
                    row[f"best_go_{world}"], row[f"best_baseline_{world}"] = g, b
                    row[f"go_vs_best_baseline_{world}_pct"] = (
                        100.0 * (base.at[b, column] - go.at[g, column]) / base.at[b, column])
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)
