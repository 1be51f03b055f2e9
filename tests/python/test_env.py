"""gopt.env.PlacementEnv against the Gymnasium Env contract, and its rewards, OOM
penalty, colocation and errors, on rnnlm_2 unrolled 3 steps (344 ops) on two P100s,
where the human expert's layer-per-GPU placement beats putting every op on GPU 0.

Run: PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
"""

import math
import pathlib
import re

import numpy as np
import pytest

import gopt
import gopt.env
from gopt.env import PlacementEnv, check_env_api

GRAPH_SET = {"seq_len": "3"}
# The source tree's shipped hardware profiles (this file is tests/python/test_env.py).
PROFILES_DIR = pathlib.Path(__file__).resolve().parents[2] / "hardware" / "profiles"


@pytest.fixture(scope="module")
def graph():
    return gopt.load_graph("rnnlm_2", set=GRAPH_SET)


@pytest.fixture(scope="module")
def hardware():
    return gopt.load_hardware("p100x2_pcie")


@pytest.fixture(scope="module")
def expert_placement(graph, hardware):
    return np.asarray(gopt.propose("human_expert", graph, hardware).placement)


def make_env(graph, hardware, **options):
    return PlacementEnv(graph, hardware, **options)


def test_reset_returns_the_reference_observation_and_info(graph, hardware):
    env = make_env(graph, hardware)
    out = env.reset(seed=3)
    assert isinstance(out, tuple) and len(out) == 2
    obs, info = out
    assert env.observation_space.contains(obs)
    assert set(obs) == {"node_features", "edge_index", "placement", "device_busy_fraction",
                        "step_time_ratio"}
    np.testing.assert_array_equal(obs["placement"], np.zeros(graph.num_ops, dtype=np.int64))
    assert obs["step_time_ratio"][0] == pytest.approx(1.0)
    assert info["step"] == 0
    assert info["step_time_s"] == info["reference_step_time_s"] > 0
    assert info["best_step_time_s"] == info["reference_step_time_s"]
    assert info["device_busy_s"].shape == (hardware.num_devices,)
    assert info["device_busy_s"][1] == 0.0  # nothing runs on GPU 1


def test_observation_columns_follow_the_graph(graph, hardware):
    env = make_env(graph, hardware)
    obs, _ = env.reset()
    features = obs["node_features"]
    k = len(gopt.OP_KINDS)
    assert features.dtype == np.float32
    assert features.shape == (graph.num_ops, len(PlacementEnv.NODE_FEATURE_NAMES) + k)
    assert features.min() >= 0.0 and features.max() <= 1.0
    np.testing.assert_array_equal(features[:, 7:].argmax(axis=1), graph.op_kinds)
    np.testing.assert_array_equal(features[:, 7:].sum(axis=1), np.ones(graph.num_ops))
    # Topological rank: 0 for the first op of the order, 1 for the last.
    order = np.asarray(graph.topological_order)
    assert features[order[0], 4] == 0.0 and features[order[-1], 4] == 1.0
    assert np.all(np.diff(features[order, 4]) > 0)
    np.testing.assert_array_equal(features[:, 6], (np.asarray(graph.layer) >= 0).astype(np.float32))
    assert obs["edge_index"].dtype == np.int64
    np.testing.assert_array_equal(obs["edge_index"].T, graph.edges)
    raw = make_env(graph, hardware, normalize=False).reset()[0]["node_features"]
    assert raw[:, 0].max() == pytest.approx(math.log1p(np.asarray(graph.flops).max()), rel=1e-6)


def test_step_returns_a_five_tuple_of_the_documented_types(graph, hardware):
    env = make_env(graph, hardware)
    env.reset(seed=1)
    env.action_space.seed(1)
    out = env.step(env.action_space.sample())
    assert isinstance(out, tuple) and len(out) == 5
    obs, reward, terminated, truncated, info = out
    assert env.observation_space.contains(obs)
    assert type(reward) is float and math.isfinite(reward)
    assert terminated is False and truncated is False
    for key in ("step_time_s", "scored_step_time_s", "oom", "oom_device", "bytes_moved",
                "device_busy_s", "device_peak_memory_bytes", "reference_step_time_s",
                "best_step_time_s", "best_placement", "step"):
        assert key in info, key
    assert info["step"] == 1
    assert reward == -info["scored_step_time_s"]
    ratio = info["step_time_s"] / info["reference_step_time_s"]
    assert obs["step_time_ratio"][0] == pytest.approx(ratio)


def test_truncated_after_max_steps_and_never_terminated(graph, hardware):
    env = make_env(graph, hardware, max_steps=3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(graph.num_ops, dtype=np.int64))
    env.reset(seed=0)
    env.action_space.seed(0)
    flags = [env.step(env.action_space.sample())[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    with pytest.raises(RuntimeError, match="truncated after 3 steps"):
        env.step(env.action_space.sample())
    env.reset()
    assert env.step(env.action_space.sample())[3] is False


def run_seeded_random_policy(env, seed, steps=4):
    """A random policy drawing from env.np_random, which reset(seed=...) seeds."""
    obs, _ = env.reset(seed=seed)
    trajectory = []
    for _ in range(steps):
        action = env.np_random.integers(0, env.num_devices, size=env.num_ops)
        obs, reward, _, _, info = env.step(action)
        trajectory.append((obs["placement"].copy(), reward, info["step_time_s"]))
    return trajectory


def test_equal_seeds_give_equal_trajectories(graph, hardware):
    env = make_env(graph, hardware, reward="improvement")
    first = run_seeded_random_policy(env, seed=7)
    second = run_seeded_random_policy(make_env(graph, hardware, reward="improvement"), seed=7)
    other = run_seeded_random_policy(env, seed=8)
    for (p1, r1, t1), (p2, r2, t2) in zip(first, second):
        np.testing.assert_array_equal(p1, p2)
        assert (r1, t1) == (r2, t2)
    assert not np.array_equal(first[0][0], other[0][0])


@pytest.mark.parametrize("action, message", [
    (lambda n, d: np.zeros(n - 1, dtype=np.int64), r"shape \(\d+,\).*found shape"),
    (lambda n, d: np.zeros((1, n), dtype=np.int64), "found shape"),
    (lambda n, d: np.full(n, d, dtype=np.int64), r"expected a device in \[0, 2\), found 2"),
    (lambda n, d: np.full(n, -1, dtype=np.int64), "found -1"),
    (lambda n, d: np.zeros(n, dtype=np.float64), "expected integer devices, found dtype float64"),
])
def test_invalid_actions_raise_input_error(graph, hardware, action, message):
    env = make_env(graph, hardware)
    env.reset()
    with pytest.raises(gopt.InputError, match=message) as raised:
        env.step(action(graph.num_ops, hardware.num_devices))
    assert isinstance(raised.value, ValueError)
    assert env.step(np.zeros(graph.num_ops, dtype=np.int32))[4]["step"] == 1  # nothing counted


def test_bad_options_name_what_was_expected(graph, hardware):
    with pytest.raises(ValueError, match="neg_step_time, improvement, best_improvement.*'fast'"):
        make_env(graph, hardware, reward="fast")
    with pytest.raises(ValueError, match="max_steps"):
        make_env(graph, hardware, max_steps=0)
    with pytest.raises(ValueError, match="oom_penalty"):
        make_env(graph, hardware, oom_penalty=-1)
    with pytest.raises(ValueError, match="expected no options"):
        make_env(graph, hardware).reset(options={"placement": None})


def test_graph_and_hardware_load_by_name(graph):
    env = PlacementEnv("rnnlm_2", "p100x2_pcie", graph_set=GRAPH_SET)
    assert (env.num_ops, env.num_devices) == (graph.num_ops, 2)
    with pytest.raises(gopt.InputError):
        PlacementEnv("no_such_workload", "p100x2_pcie")


def step_reward(env, placement):
    return env.step(placement)[1]


def test_each_reward_prefers_the_expert_to_a_single_device(graph, hardware, expert_placement):
    single = np.zeros(graph.num_ops, dtype=np.int64)
    env = make_env(graph, hardware, reward="neg_step_time")
    env.reset()
    t_single = env.simulate(single).step_time_s
    t_expert = env.simulate(expert_placement).step_time_s
    assert t_expert < t_single  # the premise of this test

    rewards = [step_reward(env, single), step_reward(env, expert_placement)]
    assert rewards == pytest.approx([-t_single, -t_expert]) and rewards[1] > rewards[0]

    env = make_env(graph, hardware, reward="improvement")
    env.reset()
    assert step_reward(env, single) == 0.0
    assert step_reward(env, expert_placement) == pytest.approx((t_single - t_expert) / t_single)

    # best_improvement pays only for a new best; an episode's return is the best's gain.
    env = make_env(graph, hardware, reward="best_improvement")
    env.reset()
    rewards, placed = [], []
    for p in (single, expert_placement, single, expert_placement):
        obs, reward, _, _, info = env.step(p)
        rewards.append(reward)
        placed.append(obs["placement"])
    assert rewards[0] == 0.0 and rewards[1] > 0.0 and rewards[2:] == [0.0, 0.0]
    assert sum(rewards) == pytest.approx((t_single - t_expert) / t_single)
    assert info["best_step_time_s"] == pytest.approx(t_expert)
    np.testing.assert_array_equal(info["best_placement"], placed[1])


def test_a_reference_placement_sets_the_start_and_the_zero_of_improvement(
        graph, hardware, expert_placement):
    env = make_env(graph, hardware, reward="improvement", reference_placement=expert_placement)
    obs, info = env.reset()
    np.testing.assert_array_equal(obs["placement"], expert_placement)
    assert info["reference_step_time_s"] == env.simulate(expert_placement).step_time_s
    assert step_reward(env, expert_placement) == 0.0
    assert step_reward(env, np.zeros(graph.num_ops, dtype=np.int64)) < 0.0
    with pytest.raises(gopt.InputError, match="reference_placement"):
        make_env(graph, hardware, reference_placement=np.zeros(3, dtype=np.int64))


def test_out_of_memory_scores_the_penalty(graph, tmp_path):
    # The shipped profile with 1 MiB GPUs: every placement runs out of memory.
    text = (PROFILES_DIR / "p100x2_pcie.yaml").read_text(encoding="utf-8")
    small, count = re.subn(r"memory_capacity_bytes: *\d+", "memory_capacity_bytes: 1048576", text)
    assert count >= 1
    path = tmp_path / "p100x2_tiny.yaml"
    path.write_text(small, encoding="utf-8")
    env = PlacementEnv(graph, str(path), reward="neg_step_time", oom_penalty=2.0)
    _, info = env.reset()
    assert info["oom"] and info["best_step_time_s"] == math.inf and info["best_placement"] is None
    _, reward, _, _, info = env.step(np.zeros(graph.num_ops, dtype=np.int64))
    assert info["oom"] and info["oom_device"] == 0
    penalised_s = info["step_time_s"] + 2.0 * info["reference_step_time_s"]
    assert info["scored_step_time_s"] == pytest.approx(penalised_s)
    assert reward == pytest.approx(-info["scored_step_time_s"])
    assert info["best_step_time_s"] == math.inf


def test_colocation_groups_move_with_their_first_op(graph, hardware):
    groups = np.asarray(graph.colocation)
    members = np.flatnonzero(groups == groups[groups >= 0][0])
    assert members.size >= 2
    placement = np.zeros(graph.num_ops, dtype=np.int64)
    placement[members[1:]] = 1  # the group's first op stays on 0, the others ask for 1
    env = make_env(graph, hardware)
    env.reset()
    obs = env.step(placement)[0]
    assert np.all(obs["placement"][members] == 0)
    env = make_env(graph, hardware, colocate=False)
    env.reset()
    np.testing.assert_array_equal(env.step(placement)[0]["placement"], placement)


def test_check_env_api_passes():
    env = PlacementEnv("rnnlm_2", "p100x2_pcie", graph_set=GRAPH_SET, max_steps=2)
    check_env_api(env, seed=5, steps=3)


def test_check_env_api_catches_a_nondeterministic_env(graph, hardware):
    class Noisy(PlacementEnv):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            noise = float(np.random.default_rng().random())  # unseeded on purpose
            return obs, reward + noise, terminated, truncated, info

    with pytest.raises(AssertionError, match="equal seeds"):
        check_env_api(Noisy(graph, hardware), seed=1, steps=2)


# "step_time_ratio" has no finite upper bound (a placement can be any number of times
# slower), which check_env warns about.
@pytest.mark.filterwarnings("ignore:.*maximum value is -?infinity:UserWarning")
def test_gymnasium_check_env(graph, hardware):
    gymnasium = pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    env = make_env(graph, hardware, max_steps=5)
    assert isinstance(env, gymnasium.Env)
    check_env(env, skip_render_check=True)


def test_stand_in_spaces_sample_what_they_contain():
    box = gopt.env.Box(0.0, 1.0, shape=(3, 2), dtype=np.float32, seed=4)
    sample = box.sample()
    assert sample.dtype == np.float32 and box.contains(sample)
    assert not box.contains(np.full((3, 2), 2.0, np.float32))
    assert not box.contains(np.zeros((2, 3), np.float32))
    half = gopt.env.Box(0.0, np.inf, shape=(4,), dtype=np.float32, seed=1)
    assert half.contains(half.sample())
    ints = gopt.env.Box(0, 5, shape=(2, 7), dtype=np.int64, seed=2)
    assert ints.contains(ints.sample()) and ints.sample().dtype == np.int64

    multi = gopt.env.MultiDiscrete([2, 3, 4], seed=9)
    draws = np.stack([multi.sample() for _ in range(200)])
    assert draws.dtype == np.int64 and all(multi.contains(d) for d in draws)
    np.testing.assert_array_equal(draws.max(axis=0), [1, 2, 3])
    assert not multi.contains(np.array([0, 3, 0])) and not multi.contains(np.array([0.0, 0.0, 0.0]))

    space = gopt.env.Dict({"a": box, "b": multi})
    space.seed(11)
    first = space.sample()
    space.seed(11)
    again = space.sample()
    assert space.contains(first)
    np.testing.assert_array_equal(first["a"], again["a"])
    np.testing.assert_array_equal(first["b"], again["b"])
    assert not space.contains({"a": first["a"]})
