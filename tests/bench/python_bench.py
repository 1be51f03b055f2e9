"""The Python module's costs, on the figure gopt_bench measures in C++ (BM_Simulate/gnmt_8:
one simulated step of gnmt_8 under the human-expert placement on four P100s): that step
called from Python against the same simulation in a C++ loop of the same process
(Simulator._seconds_per_simulate), in interleaved rounds, and 64 decisions through
simulate_many on 1 and on 2 threads. Timings on a shared machine drift, so each figure is
a ratio within one run; `build/bin/gopt_bench --benchmark_filter='BM_Simulate/gnmt_8$'`
gives the C++ figure on its own.

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/python_bench.py
"""

import argparse
import statistics
import time

import numpy as np

import gopt


def median_seconds(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", default="gnmt_8")
    parser.add_argument("--hardware", default="p100x4_pcie")
    parser.add_argument("--repeats", type=int, default=30, help="timed runs per figure")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds of each")
    parser.add_argument("--batch", type=int, default=64, help="decisions per simulate_many")
    args = parser.parse_args()

    g = gopt.load_graph(args.graph)
    hw = gopt.load_hardware(args.hardware)
    sim = gopt.Simulator(g, hw)
    expert = gopt.propose("human_expert", g, hw)
    sim.simulate(expert)  # warm
    # Python calls against the same simulations in a C++ loop in this process, interleaved,
    # so that the machine's drift cancels in each ratio.
    ratios, python_s, cpp_s = [], [], []
    for _ in range(args.rounds):
        # Both the mean of `repeats` back-to-back calls.
        start = time.perf_counter()
        for _ in range(args.repeats):
            sim.simulate(expert)
        p = (time.perf_counter() - start) / args.repeats
        c = sim._seconds_per_simulate(expert, args.repeats)
        python_s.append(p)
        cpp_s.append(c)
        ratios.append(p / c)
    print(f"simulate/{args.graph}: {statistics.median(python_s) * 1e3:.3f} ms per Python call, "
          f"{statistics.median(cpp_s) * 1e3:.3f} ms in a C++ loop ({g.num_ops} ops; medians of "
          f"{args.rounds} rounds of {args.repeats} calls each); Python's overhead "
          f"{(statistics.median(ratios) - 1) * 100:+.1f}% (median of the rounds' ratios, from "
          f"{(min(ratios) - 1) * 100:+.1f}% to {(max(ratios) - 1) * 100:+.1f}%)")

    # The expert's placement with one op moved per decision: as many distinct decisions as
    # a PPO update samples.
    rng = np.random.default_rng(1)
    batch = np.repeat(expert.placement[None, :], args.batch, axis=0)
    rows = np.arange(args.batch)
    batch[rows, rng.integers(0, g.num_ops, args.batch)] = rng.integers(0, hw.num_devices,
                                                                      args.batch)
    sim.simulate_many(batch, threads=2)  # builds the second thread's simulator
    one_s, two_s, speedups = [], [], []
    for _ in range(args.rounds):
        one = median_seconds(lambda: sim.simulate_many(batch, threads=1), 3)
        two = median_seconds(lambda: sim.simulate_many(batch, threads=2), 3)
        one_s.append(one)
        two_s.append(two)
        speedups.append(one / two)
    print(f"simulate_many/{args.graph}/{args.batch}: {statistics.median(one_s) * 1e3:.1f} ms on "
          f"1 thread, {statistics.median(two_s) * 1e3:.1f} ms on 2; speed-up "
          f"{statistics.median(speedups):.2f}x (median of {args.rounds} interleaved rounds; "
          f"rounds from {min(speedups):.2f}x to {max(speedups):.2f}x)")


if __name__ == "__main__":
    main()
