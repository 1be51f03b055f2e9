"""The example REINFORCE agent (notebooks/examples/reinforce_placement.py) learns on a toy
problem: on rnnlm_2 unrolled 3 steps on two P100s it beats the single-device placement
within its budget for every seed tried, its sampled placements get faster as it trains,
and a seed gives one run.

Run: PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
"""

import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("torch", reason="the example agent is written in PyTorch (python3-torch)")

# The example lives in the source tree next to the notebooks (this file is
# tests/python/test_example_agent.py).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "examples"))
import reinforce_placement  # noqa: E402

GRAPH, HARDWARE, GRAPH_SET = "rnnlm_2", "p100x2_pcie", {"seq_len": "3"}
STEPS = 200
WINDOW = 20  # steps averaged at the start and at the end of the curve


def train(seed):
    return reinforce_placement.train(GRAPH, HARDWARE, STEPS, seed, graph_set=GRAPH_SET,
                                     compare_expert=False)


@pytest.fixture(scope="module")
def runs():
    return {seed: train(seed) for seed in (1, 2, 3)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_beats_the_single_device_placement(runs, seed):
    r = runs[seed]
    assert r["best_step_time_s"] < r["single_device_step_time_s"], r["best_step_time_s"]
    assert not r["final_oom"]
    assert r["final_step_time_s"] < r["single_device_step_time_s"], r["final_step_time_s"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sampled_placements_get_faster(runs, seed):
    times_s = np.array([point["step_time_s"] for point in runs[seed]["curve"]])
    assert times_s.size == STEPS
    assert times_s[-WINDOW:].mean() < times_s[:WINDOW].mean()
    best_s = [point["best_step_time_s"] for point in runs[seed]["curve"]]
    assert all(b >= a for a, b in zip(best_s[1:], best_s[:-1]))  # best never gets worse


def test_a_seed_gives_one_run(runs):
    again = train(1)
    def times_s(run):
        return [point["step_time_s"] for point in run["curve"]]

    assert times_s(again) == times_s(runs[1])
    assert again["best_step_time_s"] == runs[1]["best_step_time_s"]
