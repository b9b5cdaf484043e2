"""`bench run` on the recorded snapshots enlarged k times (default 1×, 10×, 50×), fresh homes.

For each multiplier the snapshots are enlarged in their own formats
(`benchmarks.enlarge_snapshots`, fixed seed) into a temp `BENCH_SNAPSHOTS`, then `bench run`
runs in its own process on a temp `BENCH_HOME`. Printed per multiplier: wall time, peak
memory, CPU seconds (user and kernel) and minor page faults (from `wait4`: the child's and
those of the processes it waited for, its staging worker, Chromium and sandboxes included),
and per step (asset) the seconds Dagster recorded between its start and end. The baseline is
the smallest run of the same invocation; a warm-up run at the smallest multiplier goes first
and is not counted (a machine's first run pays for a cold page cache and first starts). The
data-dependent cost is the least-squares slope of wall seconds over the multipliers (seconds
per 1× of data; with two multipliers, the slope between them), and its goal is under 1.0 s
per 1×. The slope between each pair of neighbouring multipliers is printed beside it, so a
cost that grows faster than the data shows, and each step's slope between the smallest and
largest run, so the steps that grow stand out.

Whole runs on this shared machine swing by about a fifth from one to the next, more than the
data-dependent part at 10×, so each multiplier runs `--repeat` times (default 2, in rounds that
alternate the multipliers) and keeps its fastest run; every run's seconds are printed.

`--profile` runs the largest multiplier under cProfile and prints the top functions by
cumulative and own time (the run is slower under the profiler; its time is not the one used).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from benchmarks.enlarge_snapshots import enlarge

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "sources" / "snapshots"
GOAL_SECONDS_PER_X = 1.0
REPEAT = 2

STEP_TIMES = """
import json, sys
from collections import defaultdict
import dagster as dg
instance = dg.DagsterInstance.get()
steps = defaultdict(float)
for record in instance.get_run_records():
    for stat in instance.get_run_step_stats(record.dagster_run.run_id):
        if stat.start_time and stat.end_time:
            steps[stat.step_key.split("[")[0]] += stat.end_time - stat.start_time
json.dump(steps, sys.stdout)
"""


@dataclass
class Run:
    """One `bench run` at `multiplier` × the recorded data."""

    multiplier: int
    seconds: float
    peak_mb: float
    snapshot_mb: float
    steps: dict[str, float]
    usage: Usage | None = None


@dataclass(frozen=True)
class Usage:
    """What the `bench run` process spent, with every process it started and waited for
    (its staging worker, Chromium, sandboxes: `wait4` counts a reaped child's use in its
    parent's): CPU seconds in user code and in the kernel, and the pages touched first (minor
    faults). On this VM a first touch costs microseconds, so memory a run frees and later
    allocates afresh shows as kernel time that grows with the data."""

    user_seconds: float
    kernel_seconds: float
    minor_faults: int


def _bench(
    home: Path, snapshots: Path, profile: Path | None, multiplier: int = 1
) -> tuple[float, float, Usage]:
    """`bench run` in a child process; its wall seconds, peak RSS in MB and CPU use. The
    sources' caps are raised by `multiplier`, as the enlarged snapshots hold that much more."""
    env = os.environ | {"BENCH_HOME": str(home), "BENCH_SNAPSHOTS": str(snapshots)}
    env["BENCH_SOURCE_LIMITS_FACTOR"] = str(multiplier)
    env.pop("DAGSTER_HOME", None)
    prefix = [sys.executable, "-m", "cProfile", "-o", str(profile)] if profile else [sys.executable]
    command = [*prefix, "-m", "bench_pipeline.cli", "run"]
    log = (home / "bench-run.log").open("w")
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    log.close()
    if child.returncode != 0:
        tail = (home / "bench-run.log").read_text()[-3000:]
        raise RuntimeError(f"bench run failed ({child.returncode}):\n{tail}")
    spent = Usage(usage.ru_utime, usage.ru_stime, usage.ru_minflt)
    return seconds, usage.ru_maxrss / 1024, spent  # ru_maxrss: KiB on Linux


def _step_times(home: Path) -> dict[str, float]:
    import json

    env = os.environ | {"DAGSTER_HOME": str(home / "build" / "dagster")}
    out = subprocess.run(
        [sys.executable, "-c", STEP_TIMES], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def measure(multiplier: int, root: Path, profile: Path | None = None, attempt: int = 0) -> Run:
    """One `bench run` at `multiplier` × the data in a fresh home (the snapshots are enlarged
    once per multiplier under `root`, and reused by later attempts)."""
    snapshots = root / f"snapshots-{multiplier}x"
    written = _enlarged.get(snapshots)
    if written is None:
        written = _enlarged[snapshots] = _enlarge_elsewhere(snapshots, multiplier)
    home = root / f"home-{multiplier}x-{attempt}{'-profiled' if profile else ''}"
    home.mkdir()
    seconds, peak, usage = _bench(home, snapshots, profile, multiplier)
    return Run(multiplier, seconds, peak, sum(written.values()) / 1e6, _step_times(home), usage)


_enlarged: dict[Path, dict[str, int]] = {}
"""Bytes written per source for each enlarged snapshot folder made in this invocation."""


def _enlarge_elsewhere(snapshots: Path, multiplier: int) -> dict[str, int]:
    """`enlarge` in a freshly spawned process. Enlarging 50× in this one would grow it past a
    gigabyte, and Linux counts the memory a process had when it forked into the peak of the
    `bench run` it then executes (`ru_maxrss`): every later small run would show that peak."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(enlarge, SNAPSHOTS, snapshots, multiplier).result()


def fastest(runs: Sequence[Run]) -> list[Run]:
    """Per multiplier, its fastest run (in multiplier order)."""
    best: dict[int, Run] = {}
    for run in runs:
        if run.multiplier not in best or run.seconds < best[run.multiplier].seconds:
            best[run.multiplier] = run
    return [best[k] for k in sorted(best)]


def _print_profile(path: Path) -> None:
    import pstats

    for order in ("cumulative", "tottime"):
        print(f"\nprofile of the largest run, top 30 by {order}:")
        pstats.Stats(str(path), stream=sys.stdout).sort_stats(order).print_stats(30)


def least_squares_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The slope of the least-squares line through the points (xs, ys)."""
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def report(runs: list[Run]) -> bool:
    """Print the table and the slope; True when the goal is met."""
    print("bench run at k× the recorded snapshots (fresh BENCH_HOME each)")
    print(
        f"{'k':>4} {'snapshot MB':>12} {'seconds':>9} {'s per 1×':>9} {'peak MB':>8} "
        f"{'MB per 1×':>10} {'user s':>7} {'kernel s':>9} {'minor faults':>13}"
    )
    for r in runs:
        spent = (
            f"{r.usage.user_seconds:>7.1f} {r.usage.kernel_seconds:>9.1f} "
            f"{r.usage.minor_faults:>13,}"
            if r.usage
            else ""
        )
        print(
            f"{r.multiplier:>4} {r.snapshot_mb:>12.1f} {r.seconds:>9.1f} "
            f"{r.seconds / r.multiplier:>9.2f} {r.peak_mb:>8.0f} "
            f"{r.peak_mb / r.multiplier:>10.1f} {spent}"
        )
    small, large = runs[0], runs[-1]
    span = large.multiplier - small.multiplier
    if span == 0:
        print("one multiplier only: no slope")
        return True
    slope = least_squares_slope([r.multiplier for r in runs], [r.seconds for r in runs])
    fixed = sum(r.seconds - slope * r.multiplier for r in runs) / len(runs)
    memory = (large.peak_mb - small.peak_mb) / span
    print(
        f"slope over {', '.join(f'{r.multiplier}×' for r in runs)} (least squares): "
        f"{slope:.2f} s per 1× of data (fixed part {fixed:.1f} s); memory {memory:.1f} MB "
        f"per 1× ({small.multiplier}×→{large.multiplier}×); {large.multiplier}× / "
        f"{small.multiplier}× wall {large.seconds / small.seconds:.2f}×"
    )
    if small.usage and large.usage:
        user = (large.usage.user_seconds - small.usage.user_seconds) / span
        kernel = (large.usage.kernel_seconds - small.usage.kernel_seconds) / span
        faults = (large.usage.minor_faults - small.usage.minor_faults) / span
        print(
            f"  the run's CPU per 1× ({small.multiplier}×→{large.multiplier}×): user "
            f"{user:.2f} s, kernel {kernel:.2f} s, {faults:,.0f} more minor faults"
        )
    for a, b in itertools.pairwise(runs):
        print(
            f"  {a.multiplier}×→{b.multiplier}×: "
            f"{(b.seconds - a.seconds) / (b.multiplier - a.multiplier):.2f} s per 1×"
        )
    names = sorted(set().union(*(r.steps for r in runs)))
    growth = {n: (large.steps.get(n, 0.0) - small.steps.get(n, 0.0)) / span for n in names}
    print(
        "per step (Dagster step seconds, summed over runs) at "
        f"{', '.join(f'{r.multiplier}×' for r in runs)}; growth per 1× from "
        f"{small.multiplier}× to {large.multiplier}×:"
    )
    for name in sorted(names, key=lambda n: -growth[n])[:25]:
        times = " ".join(f"{r.steps.get(name, 0.0):>7.2f}" for r in runs)
        print(f"  {name:<44} {times}   {growth[name]:>+6.2f} s per 1×")
    met = slope < GOAL_SECONDS_PER_X
    print(
        f"goal: data-dependent part < {GOAL_SECONDS_PER_X:g} s per 1×: "
        f"{'met' if met else 'NOT met'}"
    )
    return met


def main(argv: Sequence[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks --only scale", description=summary)
    parser.add_argument(
        "--multipliers",
        type=lambda text: sorted({int(k) for k in text.split(",")}),
        default=[1, 10, 50],
        help="comma-separated multipliers of the recorded data (default 1,10,50)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=REPEAT,
        help=f"rounds over the multipliers; each keeps its fastest run (default {REPEAT})",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the largest run")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = Path(tmp)
        # The first `bench run` of a machine pays once for what later ones find warm (files
        # in the page cache, bytecode, Chromium's first start): timed as the smallest run, it
        # lifts the fixed part and flattens the slope, so a run at that size goes first, untimed.
        warm = root / "warm-up"
        warm.mkdir()
        first = measure(args.multipliers[0], warm)
        print(f"warm-up: a {first.multiplier}× run first, not counted ({first.seconds:.1f} s)")
        # Rounds alternate the multipliers, so a slow spell of the shared machine (whole runs
        # here swing by a fifth) lands on every size alike; each size keeps its fastest run.
        every = [measure(k, root, attempt=a) for a in range(args.repeat) for k in args.multipliers]
        for k in args.multipliers:
            times = ", ".join(f"{r.seconds:.1f}" for r in every if r.multiplier == k)
            print(f"{k}× runs (s): {times}")
        met = report(fastest(every))
        if args.profile:
            profile = root / "largest.prof"
            measure(args.multipliers[-1], root, profile)
            _print_profile(profile)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
