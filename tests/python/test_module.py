"""The gopt module against the gopt executable: the same graphs, errors, step times and
decisions for the same input and seed, batch simulation independent of the thread count,
and results read into pandas with the numbers `gopt table` prints."""

import csv
import io
import json
import os
import subprocess

import numpy as np
import pytest

import gopt
import gopt.env as gopt_env

SOURCE = os.environ.get("GOPT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
GOPT = os.environ.get("GOPT_BINARY", os.path.join(SOURCE, "build", "bin", "gopt"))
TINY = os.path.join(SOURCE, "datasets", "graphs", "mlp_tiny.json")


def gopt_cli(*args, check=True):
    """Runs the gopt executable; returns (exit status, stdout, stderr)."""
    p = subprocess.run([GOPT, *args], capture_output=True, text=True, check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"gopt {' '.join(args)} failed: {p.stderr}")
    return p.returncode, p.stdout, p.stderr


def cli_error(*args):
    """The message gopt prints for a failing command, without "gopt: error: "."""
    code, _, err = gopt_cli(*args, check=False)
    assert code == 1, err
    line = next(l for l in err.splitlines() if l.startswith("gopt: error: "))
    return line[len("gopt: error: "):]


@pytest.fixture(scope="module")
def rnnlm():
    return gopt.load_graph("rnnlm_2", set={"seq_len": "4", "hidden": "256", "vocab": "1000"})


@pytest.fixture(scope="module")
def p100x2():
    return gopt.load_hardware("p100x2_pcie")


def test_graphs_from_the_suite_a_file_and_onnx(rnnlm):
    assert rnnlm.name == "rnnlm_2"
    n, e = rnnlm.num_ops, rnnlm.num_edges
    assert n == len(rnnlm.op_names) == len(rnnlm.op_types) > 10
    for name, dtype in [("op_kinds", np.int32), ("flops", np.float64), ("bytes_read", np.int64),
                        ("bytes_written", np.int64), ("output_bytes", np.int64),
                        ("param_bytes", np.int64), ("layer", np.int32), ("colocation", np.int32),
                        ("topological_order", np.int32)]:
        a = getattr(rnnlm, name)
        assert a.dtype == dtype and a.shape == (n,), name
    assert rnnlm.edges.shape == (e, 2) and rnnlm.edges.dtype == np.int32
    assert rnnlm.edge_bytes.shape == (e,)
    assert sorted(rnnlm.topological_order) == list(range(n))
    rank = np.empty(n, dtype=int)
    rank[rnnlm.topological_order] = np.arange(n)
    assert (rank[rnnlm.edges[:, 0]] < rank[rnnlm.edges[:, 1]]).all()
    assert all(0 <= k < len(gopt.OP_KINDS) for k in rnnlm.op_kinds)
    # The same graph as `gopt graph info` describes.
    _, out, _ = gopt_cli("graph", "info", "rnnlm_2", "--set", "seq_len=4", "--set", "hidden=256",
                         "--set", "vocab=1000", "--json")
    info = json.loads(out)
    assert info["nodes"] == n and info["edges"] == e
    assert info["total_flops"] == pytest.approx(float(rnnlm.flops.sum()), rel=1e-12)
    assert info["param_bytes"] == int(rnnlm.param_bytes.sum())
    assert info["edge_bytes"] == int(rnnlm.edge_bytes.sum())

    tiny = gopt.load_graph(TINY)
    assert tiny.name == "mlp_tiny" and tiny.num_ops > 0

    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Tanh", ["h"], ["y"])],
        "two_ops", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gopt_py_{os.getpid()}.onnx")
    onnx.save(model, path)
    try:
        imported = gopt.load_graph(path)
        assert imported.num_ops >= 2
        assert {"Relu", "Tanh"} <= set(imported.op_types)
    finally:
        os.remove(path)


def test_bad_input_raises_input_error_with_the_executables_message(p100x2):
    with pytest.raises(gopt.InputError) as e:
        gopt.load_graph("rnnlm_3")
    assert str(e.value) == cli_error("graph", "info", "rnnlm_3")
    with pytest.raises(gopt.InputError) as e:
        gopt.load_graph("rnnlm_2", set={"hidden": "0"})
    assert "hidden" in str(e.value)
    with pytest.raises(gopt.InputError) as e:
        gopt.load_hardware("p100x3")
    assert "p100x3" in str(e.value) and "p100x2_pcie" in str(e.value)
    assert issubclass(gopt.InputError, ValueError)
    g = gopt.load_graph(TINY)
    sim = gopt.Simulator(g, p100x2)
    with pytest.raises(gopt.InputError, match="placement"):
        sim.simulate(placement=np.zeros(g.num_ops + 1, dtype=int))
    with pytest.raises(gopt.InputError, match="device"):
        sim.simulate(placement=np.full(g.num_ops, 7))
    with pytest.raises(gopt.InputError, match="integers"):
        sim.simulate(placement=np.zeros(g.num_ops, dtype=float))
    with pytest.raises(gopt.InputError) as e:
        gopt.propose("metsi", g, p100x2)
    assert "did you mean 'metis'" in str(e.value)
    # An option's error as a config's says it (the executable prefixes its own source).
    with pytest.raises(gopt.InputError) as e:
        gopt.propose("hdp", g, p100x2, options={"learning_rate": "-1"})
    assert str(e.value) == "agents.hdp.learning_rate: expected a number in [0, 10], found '-1'"
    assert cli_error("simulate", "--graph", TINY, "--hardware", "p100x2_pcie", "--agent", "hdp",
                     "--option", "learning_rate=-1").endswith(str(e.value))


def test_simulate_matches_the_gopt_executable(rnnlm, p100x2, tmp_path):
    args = ["simulate", "--graph", "rnnlm_2", "--set", "seq_len=4", "--set", "hidden=256",
            "--set", "vocab=1000", "--hardware", "p100x2_pcie", "--json"]
    sim = gopt.Simulator(rnnlm, p100x2)
    single = sim.simulate()
    _, out, _ = gopt_cli(*args, "--placement", "single")
    expected = json.loads(out)
    assert single.step_time_s == expected["step_time_s"]
    assert single.bytes_moved == expected["bytes_moved"] == 0
    assert list(single.device_busy_s) == [d["busy_s"] for d in expected["devices"]]
    assert list(single.device_peak_memory_bytes) == [d["peak_memory_bytes"]
                                                    for d in expected["devices"]]
    # The same decision from an agent, and a learner's after training with the same seed.
    for agent, more in [("human_expert", []), ("metis", []), ("hdp", ["--steps", "3"])]:
        d = gopt.propose(agent, rnnlm, p100x2, seed=5, steps=3)
        assert d.placement is not None and d.placement.shape == (rnnlm.num_ops,)
        r = sim.simulate(d)
        _, out, _ = gopt_cli(*args, "--agent", agent, "--seed", "5", *more)
        assert r.step_time_s == json.loads(out)["step_time_s"], agent
        assert r.step_time_s == sim.simulate(gopt.propose(agent, rnnlm, p100x2, seed=5,
                                                           steps=3)).step_time_s
    # A decision written as gopt's decision file reads the same.
    expert = gopt.propose("human_expert", rnnlm, p100x2)
    path = tmp_path / "expert.json"
    path.write_text(json.dumps({"format": "gopt-decision", "version": 1,
                                "placement": expert.placement.tolist()}))
    _, out, _ = gopt_cli(*args, "--placement", str(path))
    assert sim.simulate(expert).step_time_s == json.loads(out)["step_time_s"]
    assert gopt.simulate(rnnlm, p100x2, expert).step_time_s == sim.simulate(expert).step_time_s


def test_a_trace_and_the_cost_models_op_times(rnnlm, p100x2):
    sim = gopt.Simulator(rnnlm, p100x2)
    r = sim.simulate(gopt.propose("human_expert", rnnlm, p100x2), trace=True)
    trace = json.loads(r.trace)
    kernels = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert len(kernels) >= r.num_kernels > 0
    assert sim.simulate().trace is None
    assert sim.op_time_s(0, 0) >= 0
    with pytest.raises(gopt.InputError):
        sim.op_time_s(rnnlm.num_ops, 0)


def test_simulate_many_is_the_serial_result_whatever_the_threads(rnnlm, p100x2):
    rng = np.random.default_rng(3)
    placements = rng.integers(0, p100x2.num_devices, size=(24, rnnlm.num_ops))
    sim = gopt.Simulator(rnnlm, p100x2)
    serial = [sim.simulate(placement=p) for p in placements]
    for threads in (1, 2, 3):
        many = sim.simulate_many(placements, threads=threads)
        assert [r.step_time_s for r in many] == [r.step_time_s for r in serial], threads
        assert [r.oom for r in many] == [r.oom for r in serial]
        assert all((a.device_busy_s == b.device_busy_s).all() for a, b in zip(many, serial))
    lists = sim.simulate_many(list(placements[:5]), threads=2)
    assert [r.step_time_s for r in lists] == [r.step_time_s for r in serial[:5]]
    # The first bad decision's error, as a serial run raises it.
    bad = placements.copy()
    bad[7, 0] = 9
    bad[13, 0] = 11
    for threads in (1, 2):
        with pytest.raises(gopt.InputError, match=r"^decisions\[7\]: placement\[0\]: .* device 9,"):
            sim.simulate_many(bad, threads=threads)


def test_lower_bounds_hold_for_every_simulated_decision(rnnlm, p100x2):
    b = gopt.lower_bounds(rnnlm, p100x2)
    assert b["best_s"] >= max(b["critical_path_s"], b["work_s"]) > 0
    sim = gopt.Simulator(rnnlm, p100x2)
    rng = np.random.default_rng(1)
    for r in sim.simulate_many(rng.integers(0, 2, size=(32, rnnlm.num_ops))):
        assert r.step_time_s >= b["best_s"] * (1 - 1e-12)


def test_colocation_as_the_agents_apply_it_and_the_environment_too(p100x2):
    g = gopt.load_graph("gnmt_2", set={"src_len": "3", "tgt_len": "3"})
    groups = g.colocation
    assert (groups >= 0).any(), "gnmt_2 has colocation groups"
    rng = np.random.default_rng(2)
    placement = rng.integers(0, 2, g.num_ops)
    together = gopt.apply_colocation(g, placement)
    for group in set(groups[groups >= 0].tolist()):
        members = np.flatnonzero(groups == group)
        assert (together[members] == placement[members.min()]).all()
    assert (together[groups < 0] == placement[groups < 0]).all()
    env = gopt_env.PlacementEnv(g, p100x2)
    env.reset(seed=1)
    _, _, _, _, info = env.step(placement)
    assert info["step_time_s"] == gopt.Simulator(g, p100x2).simulate(placement=together).step_time_s
    assert list(p100x2.compute_streams) == [1, 1]


def test_every_agent_is_listed_with_its_options():
    names = gopt.agents()
    for name in ("single_device", "human_expert", "metis", "hdp", "go_one"):
        assert name in names
    options = {o["name"]: o for o in gopt.agent_options("hdp")}
    assert "learning_rate" in options
    assert options["learning_rate"]["type"] == "float"
    _, out, _ = gopt_cli("agents", "--json")
    listed = {a["name"]: a for a in json.loads(out)}
    assert sorted(listed) == sorted(names)
    for o in listed["hdp"]["options"]:
        assert {k: options[o["name"]][k] for k in o if k in options[o["name"]]} == \
            {k: o[k] for k in o if k in options[o["name"]]}
    assert gopt.agent_description("metis")


def test_a_config_runs_and_reads_back_with_the_numbers_gopt_table_prints(tmp_path):
    config = tmp_path / "py.yaml"
    config.write_text("name: py\nhardware: p100x2_pcie\nseeds: [1, 2]\nworkloads:\n"
                      f"  - {TINY}\n  - {{graph: rnnlm_2, set: {{seq_len: 4, hidden: 256}}}}\n"
                      "agents: [single_device, human_expert, {name: hdp, budget: {steps: 2}}]\n")
    out = tmp_path / "py.h5"
    assert gopt.run(config, out) == str(out)
    read = gopt.read_results(out)
    df = read.results
    assert len(df) == 2 * 3 * 2
    assert set(df["agent"]) == {"single_device", "human_expert", "hdp"}
    assert read.metadata["experiment"] == "py"
    assert len(read.curves) > 0 and set(read.curves["agent"]) == {"hdp"}
    # `gopt table --format csv`'s placement table: mean step time (ms) over the seeds.
    _, text, _ = gopt_cli("table", str(out), "--format", "csv", "--table", "placement")
    rows = list(csv.DictReader(io.StringIO(
        "\n".join(l for l in text.splitlines() if l and not l.startswith("#")))))
    assert rows, text
    means = df.groupby(["workload", "agent"])["best_step_time_s"].mean() * 1e3
    checked = 0
    for row in rows:
        for agent in ("single_device", "human_expert", "hdp"):
            column = next((c for c in row if c.startswith(agent + " (ms)")), None)
            if column is None or row["workload"] not in means.index.get_level_values(0):
                continue
            printed = row[column]
            assert float(printed) == pytest.approx(means[row["workload"], agent],
                                                   abs=0.5 * 10 ** -_decimals(printed))
            checked += 1
    assert checked == 6
    # The decision stored for a result is the one the module simulates to its step time.
    first = df.iloc[0]
    d = gopt.result_decision(out, first["workload"], first["agent"], int(first["seed"]))
    g = gopt.load_graph(first["graph"]) if first["graph"] == TINY else None
    if g is not None:
        sim = gopt.Simulator(g, gopt.load_hardware("p100x2_pcie"))
        assert sim.simulate(d).step_time_s == first["best_step_time_s"]
    # A failed run is an InputError with gopt's message, and the file already written stays.
    with pytest.raises(gopt.InputError, match="the results file exists"):
        gopt.run(config, out)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nhardware: p100x2_pcie\nworkloads: [rnnlm_2]\nagents: [metsi]\n")
    with pytest.raises(gopt.InputError, match="metsi"):
        gopt.run(bad, tmp_path / "bad.h5")
    with pytest.raises(gopt.InputError):
        gopt.read_results(bad)


def _decimals(text):
    return len(text.split(".")[1]) if "." in text else 0
