"""gopt from Python: graphs, hardware profiles, the simulator, lower bounds, agents, runs
and results files, and a Gymnasium-style environment (gopt.env) for agents written in
PyTorch. docs/python.md is the reference.

    import gopt
    g = gopt.load_graph("rnnlm_2")
    hw = gopt.load_hardware("p100x2_pcie")
    sim = gopt.Simulator(g, hw)
    expert = gopt.propose("human_expert", g, hw)
    print(sim.simulate(expert).step_time_s)

Every function raises gopt.InputError (a ValueError) with gopt's own message for bad input:
an unknown workload, profile or agent, a malformed file, a decision of the wrong length.
"""

from ._gopt import (  # noqa: F401  (the package's public names)
    OP_KINDS,
    Decision,
    Error,
    Graph,
    Hardware,
    InputError,
    SimulationResult,
    Simulator,
    __version__,
    agent_description,
    apply_colocation,
    agent_options,
    agents,
    git_revision,
    list_hardware,
    list_workloads,
    load_graph,
    load_hardware,
    lower_bounds,
    propose,
    result_decision,
)
from . import _gopt

__all__ = [
    "OP_KINDS", "Decision", "Error", "Graph", "Hardware", "InputError", "SimulationResult",
    "Simulator", "agent_description", "apply_colocation", "agent_options", "agents", "list_hardware",
    "list_workloads", "load_graph", "load_hardware", "lower_bounds", "propose",
    "read_results", "result_decision", "run", "simulate",
]


def simulate(graph, hardware, decision=None, *, placement=None, priority=None, fusion=None,
             trace=False):
    """One step of `decision` (a gopt.Decision) or of the arrays given, on a Simulator built
    for this call. For many calls on one graph, build a gopt.Simulator once and reuse it."""
    sim = Simulator(graph, hardware)
    if decision is not None:
        return sim.simulate(decision, trace=trace)
    return sim.simulate(placement=placement, priority=priority, fusion=fusion, trace=trace)


def run(config, out=None, *, overwrite=False, resume=False, set=None, jobs=None):
    """Runs an experiment config as `gopt run` does, in this process, and returns the path
    of its results file. `set` is a list of "path.to.key=value" overrides (--set), `jobs`
    the number of jobs run at once (--jobs). Progress goes to the process's stderr.
    Raises gopt.InputError with gopt's message when the run fails on its input, and
    gopt.Error for any other failure."""
    args = ["run", str(config)]
    if out is not None:
        args += ["--out", str(out)]
    if overwrite:
        args.append("--overwrite")
    if resume:
        args.append("--resume")
    for assignment in set or []:
        args += ["--set", assignment]
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    code, stdout, stderr = _gopt.run_cli(args)
    if code != 0:
        message = _error_text(stderr) or f"gopt run exited with status {code}"
        raise (InputError if code in (1, 2) else Error)(message)
    path = out if out is not None else _output_of(stdout, stderr)
    return str(path) if path is not None else None


def read_results(path):
    """A results file read by gopt's own reader (the one `gopt table` uses) as pandas
    DataFrames: `results` (one row per result: workload, agent, seed, best_step_time_s,
    oom, lower_bound_s, ...), `curves` (one row per learning-curve point) and `metadata`
    (a dict: experiment, config, git revision, CPU code paths)."""
    import pandas as pd

    results, curves, metadata = _gopt.read_results_columns(str(path))
    return _Results(pd.DataFrame(dict(results)), pd.DataFrame(dict(curves)), dict(metadata))


class _Results:
    """What read_results returns: .results, .curves (DataFrames) and .metadata (dict)."""

    def __init__(self, results, curves, metadata):
        self.results = results
        self.curves = curves
        self.metadata = metadata

    def __repr__(self):
        return (f"<gopt results '{self.metadata.get('experiment', '')}': "
                f"{len(self.results)} results, {len(self.curves)} curve points>")


def _error_text(stderr):
    """A failed run's message: its standard error from the first "gopt: error: " (or
    "gopt: internal error: ") on, without that prefix."""
    for prefix in ("gopt: error: ", "gopt: internal error: "):
        at = stderr.find(prefix)
        if at >= 0:
            return stderr[at + len(prefix):].strip()
    return stderr.strip()


def _output_of(stdout, stderr):
    """The results file a run wrote, as `gopt run` names it ("tables: gopt table FILE")."""
    import shlex

    for line in stdout.splitlines():
        if line.startswith("tables: gopt table "):
            return shlex.split(line[len("tables: gopt table "):])[0]
    return None
