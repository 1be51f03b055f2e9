"""gopt.env: device placement as a Gymnasium-style reinforcement-learning environment.

`PlacementEnv` wraps one `gopt.Simulator` (a graph on a hardware profile). An episode is
the GO/HDP kind of search, not a sequence of per-op moves: every step proposes a *whole*
placement, the simulator runs one training step under it, and the reward scores its step
time. There is no terminal state (`terminated` is always False); an episode is truncated
after `max_steps` placements.

    import gopt.env
    env = gopt.env.PlacementEnv("rnnlm_2", "p100x2_pcie", reward="improvement",
                                graph_set={"seq_len": "5"})
    obs, info = env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    info["step_time_s"], info["best_step_time_s"]

Spaces (N ops, E edges, D devices, K = len(gopt.OP_KINDS)):

* action: `MultiDiscrete([D] * N)`, the device of every op (any integer dtype). With
  `colocate=True` (the default) ops of one colocation group are then moved to the device
  of the group's first op (lowest op index), as gopt's agents do: the graph says they
  must share a device. The observation's "placement" is the placement simulated.
* observation: a `Dict` of
  - "node_features": float32 (N, F), F = 7 + K, constant over an episode. Columns:
      0 log(1 + FLOPs), 1 log(1 + bytes read + bytes written), 2 log(1 + output bytes),
      3 log(1 + parameter bytes) -- natural logs, each divided by its largest value in
      the graph when `normalize=True` (so in [0, 1]; a column that is 0 everywhere stays
      0), raw when False;
      4 topological rank / (N - 1), in [0, 1];
      5 (layer + 1) / (largest layer + 1), 0 for ops with no layer;
      6 1 when the op has a layer, else 0;
      7 .. 7+K-1 one-hot op kind, in the order of gopt.OP_KINDS
    (`PlacementEnv.NODE_FEATURE_NAMES` holds the names of the first 7).
  - "edge_index": int64 (2, E), row 0 the source op, row 1 the target op of each edge;
  - "placement": int64 (N,), the placement last simulated (the reference placement,
    every op on device 0 unless given, after reset);
  - "device_busy_fraction": float32 (D,), each device's busy time (kernel time summed
    over its streams) over the step time, so in [0, streams];
  - "step_time_ratio": float32 (1,), the step time over the reference step time.

Rewards (t: the *scored* step time of this step's placement, t_ref that of the reference
placement; an out-of-memory placement scores its step time plus `oom_penalty` reference
step times, so OOM is always worse than the same placement fitting and a faster OOM
placement still beats a slower one):

* "neg_step_time": -t, in seconds;
* "improvement": (t_ref - t) / t_ref, the relative gain over the reference (0 for the
  reference itself, positive when faster);
* "best_improvement": (b_prev - b) / t_ref where b is the best scored time of the episode
  (starting at t_ref): positive only when a step finds a new best, so an episode's return
  is the relative gain of its best placement over the reference.

`info` (after reset and each step) holds the simulated figures of the last placement:
step_time_s, scored_step_time_s, oom, oom_device (-1 none), bytes_moved, device_busy_s
(float64 (D,)), device_peak_memory_bytes (int64 (D,)); and reference_step_time_s,
best_step_time_s and best_placement (the fastest placement that fit in memory among the
reference and this episode's steps; inf and None while none did), and step (placements
stepped this episode).

Gymnasium is optional. When it imports, `PlacementEnv` subclasses `gymnasium.Env` and
uses `gymnasium.spaces`; otherwise the small stand-ins below (`Box`, `MultiDiscrete`,
`Dict`, `Env`) provide the same attributes and methods that the environment and its
users need (Debian 12 packages no Gymnasium). `check_env_api` checks the contract either
way.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

try:  # The real package when installed; the stand-ins otherwise.
    import gymnasium as _gymnasium
    from gymnasium import spaces as _gym_spaces
except ImportError:  # pragma: no cover - which branch runs depends on the machine
    _gymnasium = None
    _gym_spaces = None

from . import _gopt

HAVE_GYMNASIUM = _gymnasium is not None

REWARDS = ("neg_step_time", "improvement", "best_improvement")

__all__ = ["PlacementEnv", "REWARDS", "HAVE_GYMNASIUM", "check_env_api", "node_features",
           "Box", "MultiDiscrete", "Dict", "Env"]


# --------------------------------------------------------------------------------------
# Minimal stand-ins for gymnasium.spaces and gymnasium.Env (used without Gymnasium).
# They follow Gymnasium's semantics for what they implement: seed() returns the seeds
# used, sample() draws from the space's own Generator, contains() checks dtype
# castability, shape and bounds.


class _Space:
    """Base of the stand-in spaces: a shape, a dtype and a seeded numpy Generator."""

    def __init__(self, shape: Optional[tuple], dtype: Any, seed: Optional[int] = None):
        self._shape = None if shape is None else tuple(int(s) for s in shape)
        self.dtype = None if dtype is None else np.dtype(dtype)
        self._np_random: Optional[np.random.Generator] = None
        if seed is not None:
            self.seed(seed)

    @property
    def shape(self) -> Optional[tuple]:
        return self._shape

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self.seed()
        return self._np_random

    def seed(self, seed: Optional[int] = None) -> list:
        self._np_random = np.random.default_rng(seed)
        return [seed]

    def __contains__(self, x) -> bool:
        return self.contains(x)


class Box(_Space):
    """Stand-in for gymnasium.spaces.Box: an array of `shape` with elementwise bounds."""

    def __init__(self, low, high, shape: Optional[Sequence[int]] = None, dtype=np.float32,
                 seed: Optional[int] = None):
        dtype = np.dtype(dtype)
        if shape is None:
            shape = np.shape(low) if np.ndim(low) else np.shape(high)
        shape = tuple(int(s) for s in shape)
        # Bounds in the space's dtype, as Gymnasium keeps them; an infinite bound of an
        # integer Box is the dtype's extreme.
        self.low, self.high = (self._bound(b, shape, dtype) for b in (low, high))
        super().__init__(shape, dtype, seed)

    @staticmethod
    def _bound(value, shape: tuple, dtype: np.dtype) -> np.ndarray:
        bound = np.asarray(value, dtype=np.float64)
        bound = np.broadcast_to(bound, shape) if bound.ndim == 0 else bound
        if bound.shape != shape:
            raise ValueError(f"Box: expected bounds of shape {shape}, found {bound.shape}")
        if not np.issubdtype(dtype, np.integer):
            return bound.astype(dtype)
        info = np.iinfo(dtype)
        out = np.where(np.isfinite(bound), bound, 0).astype(dtype)
        out[np.isposinf(bound)] = info.max
        out[np.isneginf(bound)] = info.min
        return out

    def sample(self) -> np.ndarray:
        rng = self.np_random
        if np.issubdtype(self.dtype, np.integer):
            return rng.integers(self.low, self.high, endpoint=True,
                                size=self.shape).astype(self.dtype)
        # As Gymnasium: uniform on bounded dimensions, shifted exponential on half-bounded
        # ones, normal on unbounded ones.
        low_ok, high_ok = np.isfinite(self.low), np.isfinite(self.high)
        out = np.empty(self.shape, dtype=np.float64)
        both = low_ok & high_ok
        out[both] = rng.uniform(self.low[both], self.high[both])
        only_low = low_ok & ~high_ok
        out[only_low] = self.low[only_low] + rng.exponential(size=int(only_low.sum()))
        only_high = ~low_ok & high_ok
        out[only_high] = self.high[only_high] - rng.exponential(size=int(only_high.sum()))
        neither = ~low_ok & ~high_ok
        out[neither] = rng.normal(size=int(neither.sum()))
        return out.astype(self.dtype)

    def contains(self, x) -> bool:
        if not isinstance(x, np.ndarray):
            try:
                x = np.asarray(x, dtype=self.dtype)
            except (ValueError, TypeError):
                return False
        return bool(np.can_cast(x.dtype, self.dtype) and x.shape == self.shape
                    and np.all(x >= self.low) and np.all(x <= self.high))

    def __repr__(self) -> str:
        return f"Box({self.low.min()}, {self.high.max()}, {self.shape}, {self.dtype})"


class MultiDiscrete(_Space):
    """Stand-in for gymnasium.spaces.MultiDiscrete: entry i an integer in [0, nvec[i])."""

    def __init__(self, nvec, dtype=np.int64, seed: Optional[int] = None):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        if np.any(self.nvec < 1):
            raise ValueError(f"MultiDiscrete: expected every nvec entry >= 1, "
                             f"found {self.nvec.min()}")
        super().__init__(self.nvec.shape, dtype, seed)

    def sample(self) -> np.ndarray:
        return (self.np_random.random(self.nvec.shape) * self.nvec).astype(self.dtype)

    def contains(self, x) -> bool:
        if isinstance(x, Sequence):
            x = np.array(x)
        if not isinstance(x, np.ndarray):
            return False
        return bool(x.shape == self.shape and x.dtype != object
                    and np.issubdtype(x.dtype, np.integer)
                    and np.all(x >= 0) and np.all(x < self.nvec))

    def __repr__(self) -> str:
        return f"MultiDiscrete({self.nvec.tolist() if self.nvec.size <= 8 else self.shape})"


class Dict(_Space):
    """Stand-in for gymnasium.spaces.Dict: a mapping of names to spaces."""

    def __init__(self, spaces: Mapping[str, _Space], seed: Optional[int] = None):
        self.spaces = dict(spaces)
        super().__init__(None, None, None)
        if seed is not None:
            self.seed(seed)

    def seed(self, seed: Optional[int] = None) -> list:
        # One seed per subspace, drawn from a generator seeded with `seed`, as Gymnasium.
        super().seed(seed)
        used = [seed]
        for space in self.spaces.values():
            used += space.seed(int(self._np_random.integers(2**31)))
        return used

    def sample(self) -> dict:
        return {k: space.sample() for k, space in self.spaces.items()}

    def contains(self, x) -> bool:
        return (isinstance(x, Mapping) and set(x.keys()) == set(self.spaces.keys())
                and all(self.spaces[k].contains(x[k]) for k in self.spaces))

    def __getitem__(self, key: str) -> _Space:
        return self.spaces[key]

    def keys(self):
        return self.spaces.keys()

    def __repr__(self) -> str:
        return "Dict(" + ", ".join(f"{k!r}: {v!r}" for k, v in self.spaces.items()) + ")"


class Env:
    """Stand-in for gymnasium.Env: `np_random`, seeded by `reset(seed=...)`."""

    metadata: dict = {"render_modes": []}
    render_mode = None
    observation_space: _Space
    action_space: _Space
    _np_random: Optional[np.random.Generator] = None

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    @property
    def unwrapped(self) -> "Env":
        return self

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        # gymnasium.utils.seeding.np_random(seed) is this same PCG64 Generator.
        if seed is not None:
            self._np_random = np.random.default_rng(seed)

    def step(self, action):
        raise NotImplementedError

    def render(self):
        return None

    def close(self):
        pass


if HAVE_GYMNASIUM:
    _Box, _MultiDiscrete, _Dict, _EnvBase = (_gym_spaces.Box, _gym_spaces.MultiDiscrete,
                                             _gym_spaces.Dict, _gymnasium.Env)
else:
    _Box, _MultiDiscrete, _Dict, _EnvBase = Box, MultiDiscrete, Dict, Env


# --------------------------------------------------------------------------------------
# The environment.


def _as_graph(graph, graph_set: Optional[Mapping[str, str]]):
    if isinstance(graph, _gopt.Graph):
        if graph_set:
            raise ValueError("PlacementEnv: graph_set overrides a suite graph's "
                             "hyperparameters; expected a graph name or path with it, found "
                             "a loaded gopt.Graph")
        return graph
    overrides = {k: str(v) for k, v in (graph_set or {}).items()}
    return _gopt.load_graph(str(graph), set=overrides)


def _as_hardware(hardware):
    if isinstance(hardware, _gopt.Hardware):
        return hardware
    return _gopt.load_hardware(str(hardware))


def node_features(graph, normalize: bool = True) -> np.ndarray:
    """The (num_ops, 7 + len(OP_KINDS)) float32 feature matrix of `graph`; the columns are
    those of the module docstring ("node_features")."""
    n = graph.num_ops
    kinds = np.asarray(graph.op_kinds, dtype=np.int64)
    num_kinds = len(_gopt.OP_KINDS)
    logs = np.stack([
        np.log1p(np.maximum(np.asarray(graph.flops, dtype=np.float64), 0.0)),
        np.log1p(np.asarray(graph.bytes_read, dtype=np.float64)
                 + np.asarray(graph.bytes_written, dtype=np.float64)),
        np.log1p(np.asarray(graph.output_bytes, dtype=np.float64)),
        np.log1p(np.asarray(graph.param_bytes, dtype=np.float64)),
    ], axis=1)
    if normalize and n > 0:
        largest = logs.max(axis=0)
        logs = logs / np.where(largest > 0, largest, 1.0)
    rank = np.empty(n, dtype=np.float64)
    rank[np.asarray(graph.topological_order, dtype=np.int64)] = np.arange(n, dtype=np.float64)
    rank /= max(n - 1, 1)
    layer = np.asarray(graph.layer, dtype=np.float64)
    has_layer = layer >= 0
    layers = max(layer.max(initial=-1.0), 0.0) + 1
    layer_fraction = np.where(has_layer, (layer + 1) / layers, 0.0)
    one_hot = np.zeros((n, num_kinds), dtype=np.float64)
    one_hot[np.arange(n), kinds] = 1.0
    return np.concatenate([logs, rank[:, None], layer_fraction[:, None],
                           has_layer[:, None].astype(np.float64), one_hot],
                          axis=1).astype(np.float32)


class PlacementEnv(_EnvBase):
    """Whole-graph device placement on the gopt simulator (see the module docstring).

    graph: a gopt.Graph, or a suite name / graph JSON / .onnx path for gopt.load_graph
      (`graph_set` then overrides suite hyperparameters, e.g. {"seq_len": "5"});
    hardware: a gopt.Hardware, or a profile name / YAML path for gopt.load_hardware;
    reward: one of REWARDS; oom_penalty: reference step times added to an OOM
      placement's step time (>= 0); max_steps: placements per episode before truncation;
    normalize: scale the log columns of node_features into [0, 1];
    colocate: move colocation groups onto their first op's device before simulating;
    reference_placement: the placement rewards compare against and reset starts from
      (default: every op on device 0, the single-device placement).
    """

    metadata = {"render_modes": []}
    NODE_FEATURE_NAMES = ("log_flops", "log_bytes_accessed", "log_output_bytes",
                          "log_param_bytes", "topological_rank", "layer_fraction", "has_layer")

    def __init__(self, graph, hardware, *, reward: str = "neg_step_time",
                 oom_penalty: float = 1.0, max_steps: int = 100, normalize: bool = True,
                 colocate: bool = True, reference_placement=None,
                 graph_set: Optional[Mapping[str, str]] = None, render_mode=None):
        if reward not in REWARDS:
            raise ValueError(f"PlacementEnv: reward: expected one of {', '.join(REWARDS)}, "
                             f"found {reward!r}")
        if (isinstance(oom_penalty, bool) or not isinstance(oom_penalty, (int, float))
                or not math.isfinite(oom_penalty) or oom_penalty < 0):
            raise ValueError(f"PlacementEnv: oom_penalty: expected a finite number >= 0, "
                             f"found {oom_penalty!r}")
        if (isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer))
                or max_steps < 1):
            raise ValueError(f"PlacementEnv: max_steps: expected an integer >= 1, "
                             f"found {max_steps!r}")
        if render_mode is not None:
            raise ValueError(f"PlacementEnv: render_mode: expected None (no render modes), "
                             f"found {render_mode!r}")
        self.render_mode = None
        self.graph = _as_graph(graph, graph_set)
        self.hardware = _as_hardware(hardware)
        self.simulator = _gopt.Simulator(self.graph, self.hardware)
        self.reward_name = reward
        self.oom_penalty = float(oom_penalty)
        self.max_steps = int(max_steps)
        self.normalize = bool(normalize)
        self.colocate = bool(colocate)

        self.num_ops = int(self.graph.num_ops)
        self.num_devices = int(self.hardware.num_devices)
        n, d = self.num_ops, self.num_devices
        self._node_features = node_features(self.graph, self.normalize)
        self._edge_index = np.ascontiguousarray(
            np.asarray(self.graph.edges, dtype=np.int64).reshape(-1, 2).T)
        self._colocation = np.asarray(self.graph.colocation, dtype=np.int64)
        self._colocation_leader = self._colocation_leaders(self._colocation)

        self.action_space = _MultiDiscrete(np.full(n, d, dtype=np.int64))
        features = self._node_features.shape[1]
        feature_high = np.ones((n, features), dtype=np.float32)
        if not self.normalize:
            feature_high[:, :4] = np.inf
        self.observation_space = _Dict({
            "node_features": _Box(np.zeros((n, features), np.float32), feature_high,
                                  dtype=np.float32),
            "edge_index": _Box(0, max(n - 1, 0), shape=self._edge_index.shape,
                               dtype=np.int64),
            "placement": _MultiDiscrete(np.full(n, d, dtype=np.int64)),
            # Busy time sums a device's streams, so it reaches streams x the step time.
            "device_busy_fraction": _Box(
                np.zeros(d, np.float32),
                np.asarray(self.hardware.compute_streams, dtype=np.float32), dtype=np.float32),
            "step_time_ratio": _Box(0.0, np.inf, shape=(1,), dtype=np.float32),
        })

        if reference_placement is None:
            reference_placement = np.zeros(n, dtype=np.int64)
        self.reference_placement = self._checked_placement(reference_placement,
                                                           "reference_placement")
        if self.colocate:
            self.reference_placement = self.reference_placement[self._colocation_leader]
        self._reference = self.simulator.simulate(placement=self.reference_placement)
        self.reference_step_time_s = float(self._reference.step_time_s)
        if not self.reference_step_time_s > 0:
            raise ValueError(f"PlacementEnv: expected the reference placement to take a "
                             f"positive step time, found {self.reference_step_time_s} s")
        self._steps = None  # None until the first reset

    # ----------------------------------------------------------------------------------
    # Gymnasium API

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        """Starts an episode at the reference placement; returns (observation, info).
        `seed` seeds `self.np_random` (the environment draws nothing from it itself); no
        options are read, so `options` must be None or empty."""
        super().reset(seed=seed)
        if options:
            raise ValueError(f"PlacementEnv.reset: expected no options, found {sorted(options)}")
        self._steps = 0
        self._placement = self.reference_placement.copy()
        fits = not self._reference.oom
        self._best_scored_s = self._scored_s(self._reference)
        self._best_step_time_s = self.reference_step_time_s if fits else math.inf
        self._best_placement = self._placement.copy() if fits else None
        return self._observation(self._reference), self._info(self._reference)

    def step(self, action):
        """Simulates `action` (a placement, one device per op); returns (observation,
        reward, terminated, truncated, info). Raises gopt.InputError for an action of the
        wrong shape or dtype or with a device out of range."""
        if self._steps is None:
            raise RuntimeError("PlacementEnv.step: expected reset() before the first step")
        if self._steps >= self.max_steps:
            raise RuntimeError(f"PlacementEnv.step: the episode was truncated after "
                               f"{self.max_steps} steps; expected reset() before stepping again")
        placement = self._checked_placement(action, "action")
        if self.colocate:
            placement = placement[self._colocation_leader]
        result = self.simulator.simulate(placement=placement)
        self._steps += 1
        self._placement = placement
        scored_s = self._scored_s(result)
        previous_best_s = self._best_scored_s
        self._best_scored_s = min(self._best_scored_s, scored_s)
        if not result.oom and result.step_time_s < self._best_step_time_s:
            self._best_step_time_s = float(result.step_time_s)
            self._best_placement = placement.copy()
        if self.reward_name == "neg_step_time":
            reward = -scored_s
        elif self.reward_name == "improvement":
            reward = (self.reference_step_time_s - scored_s) / self.reference_step_time_s
        else:  # best_improvement
            reward = (previous_best_s - self._best_scored_s) / self.reference_step_time_s
        truncated = self._steps >= self.max_steps
        return (self._observation(result), float(reward), False, bool(truncated),
                self._info(result))

    def render(self):
        return None

    def close(self):
        """Nothing to release: the simulator is freed with the environment."""

    # ----------------------------------------------------------------------------------

    @property
    def node_features(self) -> np.ndarray:
        """The observation's node features (a copy), for policies built before reset."""
        return self._node_features.copy()

    def simulate(self, placement, trace: bool = False):
        """Simulates a placement outside the episode (no step counted, nothing recorded),
        after the same checks and colocation as step(); returns the SimulationResult."""
        placement = self._checked_placement(placement, "placement")
        if self.colocate:
            placement = placement[self._colocation_leader]
        return self.simulator.simulate(placement=placement, trace=trace)

    def _checked_placement(self, action, what: str) -> np.ndarray:
        array = np.asarray(action)
        if array.shape != (self.num_ops,):
            raise _gopt.InputError(f"PlacementEnv: {what}: expected a placement of shape "
                                   f"({self.num_ops},), one device per op, found shape "
                                   f"{array.shape}")
        if not np.issubdtype(array.dtype, np.integer):
            raise _gopt.InputError(f"PlacementEnv: {what}: expected integer devices, found "
                                   f"dtype {array.dtype}")
        bad = np.flatnonzero((array < 0) | (array >= self.num_devices))
        if bad.size:
            op = int(bad[0])
            raise _gopt.InputError(f"PlacementEnv: {what}[{op}] (op "
                                   f"'{self.graph.op_names[op]}'): expected a device in "
                                   f"[0, {self.num_devices}), found {int(array[op])} "
                                   f"({bad.size} ops out of range)")
        return array.astype(np.int64)

    @staticmethod
    def _colocation_leaders(colocation: np.ndarray) -> np.ndarray:
        # leader[v]: the lowest-index op of v's colocation group (v itself when none).
        leader = np.arange(colocation.size, dtype=np.int64)
        first: dict = {}
        for v, group in enumerate(colocation.tolist()):
            if group >= 0:
                leader[v] = first.setdefault(group, v)
        return leader

    def _scored_s(self, result) -> float:
        penalty_s = self.oom_penalty * self.reference_step_time_s if result.oom else 0.0
        return float(result.step_time_s) + penalty_s

    def _observation(self, result) -> dict:
        step_time_s = float(result.step_time_s)
        busy_s = np.asarray(result.device_busy_s, dtype=np.float64)
        busy = busy_s / step_time_s if step_time_s > 0 else np.zeros_like(busy_s)
        return {
            "node_features": self._node_features.copy(),
            "edge_index": self._edge_index.copy(),
            "placement": self._placement.copy(),
            "device_busy_fraction": busy.astype(np.float32),
            "step_time_ratio": np.array([step_time_s / self.reference_step_time_s],
                                        dtype=np.float32),
        }

    def _info(self, result) -> dict:
        return {
            "step": self._steps,
            "step_time_s": float(result.step_time_s),
            "scored_step_time_s": self._scored_s(result),
            "oom": bool(result.oom),
            "oom_device": int(result.oom_device),
            "bytes_moved": int(result.bytes_moved),
            "device_busy_s": np.asarray(result.device_busy_s, dtype=np.float64).copy(),
            "device_peak_memory_bytes": np.asarray(result.device_peak_memory_bytes,
                                                   dtype=np.int64).copy(),
            "reference_step_time_s": self.reference_step_time_s,
            "best_step_time_s": self._best_step_time_s,
            "best_placement": None if self._best_placement is None else self._best_placement.copy(),
        }


# --------------------------------------------------------------------------------------
# The contract check.


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(f"check_env_api: {message}")


def _equal_observations(a, b) -> bool:
    if isinstance(a, Mapping):
        return (isinstance(b, Mapping) and a.keys() == b.keys()
                and all(_equal_observations(a[k], b[k]) for k in a))
    return np.array_equal(np.asarray(a), np.asarray(b))


def check_env_api(env, *, seed: int = 0, steps: int = 3) -> None:
    """Checks `env` against the Gymnasium Env contract; raises AssertionError naming the
    first violation. Checks: spaces with sample/contains; reset(*, seed, options) with
    keyword-only arguments returning (observation, info dict); step returning (observation,
    float reward, bool terminated, bool truncated, info dict); every observation in
    observation_space; and that two runs from reset(seed=seed) under actions drawn from an
    action_space seeded with `seed` give equal observations and rewards. Calls reset and
    step, so leaves `env` mid-episode."""
    for name in ("observation_space", "action_space"):
        space = getattr(env, name, None)
        _check(space is not None and hasattr(space, "sample") and hasattr(space, "contains"),
               f"expected env.{name} to be a space with sample() and contains(), found {space!r}")
    _check(isinstance(getattr(env, "metadata", None), dict)
           and "render_modes" in env.metadata,
           f"expected env.metadata to be a dict with 'render_modes', found "
           f"{getattr(env, 'metadata', None)!r}")
    parameters = inspect.signature(env.reset).parameters
    for name in ("seed", "options"):
        _check(name in parameters and parameters[name].kind is inspect.Parameter.KEYWORD_ONLY,
               f"expected reset() to take keyword-only '{name}', found parameters "
               f"{list(parameters)}")

    def run() -> list:
        out = env.reset(seed=seed)
        _check(isinstance(out, tuple) and len(out) == 2,
               f"expected reset() to return (observation, info), found {type(out).__name__}")
        obs, info = out
        _check(env.observation_space.contains(obs),
               "expected the observation reset() returned to be in observation_space")
        _check(isinstance(info, dict),
               f"expected reset()'s info to be a dict, found {type(info).__name__}")
        trajectory = [(obs, None)]
        env.action_space.seed(seed)
        for i in range(steps):
            out = env.step(env.action_space.sample())
            _check(isinstance(out, tuple) and len(out) == 5,
                   f"expected step() to return a 5-tuple, found {type(out).__name__} "
                   f"of length {len(out) if isinstance(out, tuple) else '-'}")
            obs, reward, terminated, truncated, info = out
            _check(env.observation_space.contains(obs),
                   f"expected the observation of step {i + 1} to be in observation_space")
            _check(isinstance(reward, (float, np.floating)) and not isinstance(reward, bool),
                   f"expected a float reward, found {type(reward).__name__}")
            _check(math.isfinite(float(reward)), f"expected a finite reward, found {reward}")
            for flag, value in (("terminated", terminated), ("truncated", truncated)):
                _check(isinstance(value, (bool, np.bool_)),
                       f"expected {flag} to be a bool, found {type(value).__name__}")
            _check(isinstance(info, dict),
                   f"expected step()'s info to be a dict, found {type(info).__name__}")
            trajectory.append((obs, float(reward)))
            if terminated or truncated:
                break
        return trajectory

    first, second = run(), run()
    _check(len(first) == len(second),
           f"expected equal seeds to give episodes of equal length, found {len(first)} "
           f"and {len(second)}")
    for i, ((obs_a, reward_a), (obs_b, reward_b)) in enumerate(zip(first, second)):
        _check(_equal_observations(obs_a, obs_b) and reward_a == reward_b,
               f"expected equal seeds to give equal observations and rewards, found a "
               f"difference at step {i}")
