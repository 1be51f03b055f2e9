"""Figures for the notebooks: what a reader of the GO paper looks at, from a results file.

Every function draws on matplotlib axes and returns the figure; the data comes from
gopt_results (the one reader of the file format). Step times are in milliseconds.

    import gopt_plots as gp
    path = gp.results_path()                        # GOPT_RESULTS, from the user's directory
    gp.step_times(df)                               # bars per workload and agent, bound marked
    gp.learning_curves(df, curves)                  # learners vs simulations, baselines labelled
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import gopt_results as gr


def results_path(default="results/quickstart.h5"):
    """The results file: GOPT_RESULTS, or `default`. A relative path is taken from the
    directory the user started Jupyter in ($PWD), not from the notebook's own folder, so
    `GOPT_RESULTS=results/quickstart.h5 jupyter notebook notebooks/placement.ipynb` works
    from the repository root; failing that, from the repository root beside this folder."""
    path = os.environ.get("GOPT_RESULTS", default)
    if os.path.isabs(path):
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    for base in (os.environ.get("PWD", ""), os.getcwd(), os.path.dirname(here)):
        if base and os.path.exists(os.path.join(base, path)):
            return os.path.join(base, path)
    return os.path.join(os.environ.get("PWD", os.getcwd()), path)


def _mean_times(df):
    workloads = list(dict.fromkeys(df["workload"]))
    agents = list(dict.fromkeys(df["agent"]))
    times = df[~df["oom"]].pivot_table(index="workload", columns="agent",
                                       values="best_step_time_ms", aggfunc="mean")
    return times.reindex(index=workloads, columns=agents), workloads, agents


def step_times(df, title="Step time per workload and agent"):
    """Grouped bars: mean step time over seeds per workload (groups) and agent (bars), on a
    log scale; the workload's lower bound as a black line across its group, and an agent
    whose every seed ran out of memory as an "OOM" label."""
    times, workloads, agents = _mean_times(df)
    bound = df.groupby("workload")[gr.BOUND_ATTR].max().reindex(workloads) * 1e3
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(workloads) * max(1, len(agents)) / 3), 4))
    width = 0.8 / max(1, len(agents))
    x = np.arange(len(workloads))
    for i, agent in enumerate(agents):
        values = times[agent].to_numpy(dtype=float)
        pos = x - 0.4 + width * (i + 0.5)
        ax.bar(pos, np.nan_to_num(values, nan=0.0), width, label=agent)
        for p, v in zip(pos, values):
            if np.isnan(v):
                ax.text(p, bound.max(), "OOM", rotation=90, ha="center", va="bottom",
                        fontsize="x-small")
    for xi, b in zip(x, bound):
        ax.hlines(b, xi - 0.45, xi + 0.45, colors="black", linewidth=2,
                  label="lower bound" if xi == 0 else None)
    ax.set_xticks(x)
    ax.set_xticklabels(workloads, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("step time (ms, log scale)")
    ax.set_title(title)
    ax.legend(fontsize="x-small", ncol=2)
    fig.tight_layout()
    return fig


def learning_curves(df, curves, workloads=None, field="best_step_time_s"):
    """Per workload: each learner's best (or mean, field="mean_step_time_s") step time so
    far against simulations, one line per (agent, seed); curves of jobs still training
    (gr.learning_curves(path, running=True)) dash-dotted and labelled with their state;
    every non-learning agent's step time (mean over seeds) as a labelled dashed line, and
    the lower bound as a dotted one."""
    workloads = workloads or list(dict.fromkeys(list(df["workload"]) + list(curves["workload"])))
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 3.6),
                             squeeze=False)
    state = curves["state"] if "state" in curves else pd.Series("finished", index=curves.index)
    for ax, workload in zip(axes[0], workloads):
        rows = df[df["workload"] == workload]
        mine = curves[curves["workload"] == workload].assign(state=state)
        for (agent, seed, how), c in mine.groupby(["agent", "seed", "state"], sort=False):
            c = c.sort_values("step")
            live = how != "finished"
            ax.plot(c["samples"], c[field] * 1e3, linestyle="-." if live else "-",
                    label=f"{agent} seed {seed}" + (f" ({how})" if live else ""))
        fixed = rows[~rows["learner"] & ~rows["oom"]].groupby("agent", sort=False)[
            "best_step_time_ms"].mean()
        for k, (agent, ms) in enumerate(fixed.items()):
            ax.axhline(ms, linestyle="--", linewidth=1, color=f"C{(k + 5) % 10}",
                       label=f"{agent} (baseline)")
        if len(rows):
            bound = rows[gr.BOUND_ATTR].max() * 1e3
            ax.axhline(bound, linestyle=":", color="black", label="lower bound")
        ax.set_title(workload)
        ax.set_xlabel("simulations")
        ax.set_ylabel(("best" if field == "best_step_time_s" else "mean") +
                      " step time (ms)")
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def convergence(df, curves):
    """Per workload: each learner's best step time so far relative to the best baseline of
    the same run (1 = level with it, below 1 = ahead), against simulations on a log scale,
    with the expert's level where the run has one. What the paper's convergence claim
    measures: how many samples a learner needs to get somewhere."""
    subjects, baselines = gr._baselines(df)
    types = gr._types(df)
    workloads = list(dict.fromkeys(curves["workload"])) or list(dict.fromkeys(df["workload"]))
    fig, axes = plt.subplots(1, max(1, len(workloads)), figsize=(5 * max(1, len(workloads)), 3.6),
                             squeeze=False)
    times, _, _ = _mean_times(df)
    for ax, workload in zip(axes[0], workloads):
        base_agents = [b for b in baselines if not df.loc[df["agent"] == b, "learner"].any()]
        best = times.loc[workload, base_agents].min() if base_agents else np.nan
        for (agent, seed), c in curves[curves["workload"] == workload].groupby(
                ["agent", "seed"], sort=False):
            c = c.sort_values("step")
            ax.plot(c["samples"], c["best_step_time_s"] * 1e3 / best, label=f"{agent} seed {seed}")
        ax.axhline(1.0, color="black", linewidth=1, label="best baseline")
        expert = next((a for a in base_agents if types[a] in ("human_expert", "tf_default")),
                      None)
        if expert is not None and not np.isnan(times.loc[workload, expert]):
            ax.axhline(times.loc[workload, expert] / best, linestyle="--", color="gray",
                       label=f"{expert}")
        ax.set_xscale("log")
        ax.set_title(workload)
        ax.set_xlabel("simulations (log scale)")
        ax.set_ylabel("best step time / best baseline")
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def device_load(path, workload, agent, seed):
    """One decision's per-device compute busy time (ms) and peak memory (GiB), as bars side
    by side: how evenly the placement loads the devices."""
    busy, peak = gr.device_stats(path, workload, agent, seed)
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    devices = np.arange(len(busy))
    a.bar(devices, busy * 1e3)
    a.set_xlabel("device")
    a.set_ylabel("compute busy time (ms)")
    b.bar(devices, peak / 2**30, color="C1")
    b.set_xlabel("device")
    b.set_ylabel("peak memory (GiB)")
    for ax in (a, b):
        ax.set_xticks(devices)
    fig.suptitle(f"{workload} / {agent} / seed {seed}")
    fig.tight_layout()
    return fig


def speedups(table, title):
    """Horizontal bars of a table's "... vs ..." columns averaged over workloads (the
    table's "average" row when it has one): each agent's step-time reduction in percent."""
    columns = [c for c in table.columns if " vs " in c]
    row = table.loc["average"] if "average" in table.index else table[columns].mean()
    values = row[columns].astype(float)
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(columns) + 1.2))
    ax.barh(range(len(columns)), values.to_numpy(), color=["C2" if v >= 0 else "C3"
                                                            for v in values])
    ax.set_yticks(range(len(columns)))
    ax.set_yticklabels(columns, fontsize="small")
    ax.axvline(0, color="black", linewidth=1)
    ax.invert_yaxis()
    ax.set_xlabel("step-time reduction (%), positive = faster")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _labelled_scatter(x, y, labels, xlabel, ylabel, line_label):
    """Points (x, y) labelled by `labels` on log scales, with the y = x line."""
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.scatter(x, y, s=18)
    for a, b, text in zip(x, y, labels):
        ax.annotate(text, (a, b), fontsize="xx-small", xytext=(3, 3), textcoords="offset points")
    lo = float(min(x.min(), y.min())) * 0.8
    hi = float(max(x.max(), y.max())) * 1.25
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label=line_label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
    fig.tight_layout()
    return fig


def measured_vs_simulated(df):
    """Validation: each decision's measured step time against the simulated one, both in
    ms on log scales, with the y = x line; points labelled by graph and agent."""
    ok = df.dropna(subset=["measured_step_time_s"])
    return _labelled_scatter(ok["best_step_time_s"] * 1e3, ok["measured_step_time_s"] * 1e3,
                             [f"{w} / {a}" for w, a in zip(ok["workload"], ok["agent"])],
                             "simulated step time (ms)", "measured step time (ms)", "y = x")


def simulated_vs_bound(df):
    """Validation without measurements: each agent's simulated step time (mean over seeds)
    against the workload's lower bound, with y = x (nothing can lie below it); points
    labelled by workload and agent."""
    means = df.groupby(["workload", "agent"], sort=False)[
        [gr.BOUND_ATTR, "best_step_time_ms"]].mean().reset_index()
    return _labelled_scatter(means[gr.BOUND_ATTR] * 1e3, means["best_step_time_ms"],
                             [f"{w} / {a}" for w, a in zip(means["workload"], means["agent"])],
                             "lower bound (ms)", "simulated step time (ms)",
                             "y = x (the bound)")
