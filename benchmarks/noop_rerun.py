"""A `bench run` that changes nothing against a fresh one, on the recorded snapshots.

Both are whole `bench run` processes on one temporary BENCH_HOME (its own Dagster instance,
bytecode cached in the same temporary folder):
first the fresh run (the baseline), then `--repeat` reruns with nothing changed, timed the
same way. Prints the wall times, the rerun as a ratio of the fresh run (goal at most 0.15×),
the Dagster events each wrote and how much the instance's storage grew, and the warehouse
rows that must not grow on a no-op (`raw_files`, `source_runs`, `price_history`). A rerun
that fails, or that adds any of those rows, misses the goal whatever its time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

GOAL_RATIO = 0.15
WATCHED = ("raw_files", "source_runs", "price_history", "source_checks")


@dataclass
class Outcome:
    seconds: float
    returncode: int
    events: int
    runs: int
    storage_bytes: int
    rows: dict[str, int]


def _tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _events_since(dagster_home: Path, since: float) -> tuple[int, int]:
    """(events, runs) of the Dagster runs created after `since` (a Unix time)."""
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(dagster_home)
    with dg.DagsterInstance.get() as instance:
        runs = [r for r in instance.get_run_records() if r.create_timestamp.timestamp() >= since]
        events = sum(
            len(instance.get_records_for_run(r.dagster_run.run_id, limit=1_000_000).records)
            for r in runs
        )
    return events, len(runs)


def _rows(home: Path) -> dict[str, int]:
    import duckdb

    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in WATCHED}


def bench_run(bench: Path, home: Path, dagster_home: Path, log: Path) -> Outcome:
    """One whole `bench run` process on `home`, timed from start to exit."""
    env = os.environ | {"BENCH_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}
    # Bytecode cached as any install caches it, but under the benchmark's own folder: a
    # machine with PYTHONDONTWRITEBYTECODE set would otherwise compile every module in
    # every process, a cost of that machine and not of the pipeline.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(dagster_home.parent / "pycache")
    since = time.time()
    started = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run([str(bench), "run"], env=env, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    events, runs = _events_since(dagster_home, since)
    return Outcome(seconds, done.returncode, events, runs, _tree_bytes(dagster_home), _rows(home))


def main(argv: Sequence[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks --only noop", description=summary)
    parser.add_argument("--repeat", type=int, default=2, help="no-op reruns; the median is shown")
    parser.add_argument(
        "--bench",
        type=Path,
        default=Path(sys.executable).with_name("bench"),
        help="the `bench` command to time (default: this environment's)",
    )
    args = parser.parse_args(argv)
    from bench_pipeline.cli.instance import INSTANCE_CONFIG

    with tempfile.TemporaryDirectory(prefix="bench-noop-") as tmp:
        home = Path(tmp) / "home"
        dagster_home = Path(tmp) / "dagster"
        dagster_home.mkdir(parents=True)
        (dagster_home / "dagster.yaml").write_text(INSTANCE_CONFIG)
        fresh = bench_run(args.bench, home, dagster_home, Path(tmp) / "fresh.log")
        reruns = [
            bench_run(args.bench, home, dagster_home, Path(tmp) / f"rerun-{n}.log")
            for n in range(max(1, args.repeat))
        ]
        failed = [p.name for p in Path(tmp).glob("*.log") if "FAILED" in p.read_text()]
        tail = (Path(tmp) / "rerun-0.log").read_text().splitlines()[-3:]
    ratio = statistics.median(r.seconds for r in reruns) / fresh.seconds
    grown = {t: reruns[-1].rows[t] - fresh.rows[t] for t in WATCHED if t != "source_checks"}
    storage = [
        b.storage_bytes - a.storage_bytes for a, b in zip([fresh, *reruns], reruns, strict=False)
    ]
    print("no-op rerun against a fresh run (whole `bench run` processes, recorded snapshots)")
    print(f"  fresh run         {fresh.seconds:.1f} s, exit {fresh.returncode}")
    times = ", ".join(f"{r.seconds:.1f}" for r in reruns)
    print(f"  no-op reruns      {times} s, exit {[r.returncode for r in reruns]}")
    print(f"  rerun / fresh     {ratio:.3f}× (goal ≤ {GOAL_RATIO}×)")
    print(f"  Dagster events    fresh {fresh.events:,} in {fresh.runs} runs; "
          f"no-op {', '.join(f'{r.events:,} in {r.runs} runs' for r in reruns)}")  # fmt: skip
    print(f"  Dagster storage   fresh {fresh.storage_bytes / 1e6:.1f} MB; grown per no-op "
          f"{', '.join(f'{b / 1e6:.2f} MB' for b in storage)}")  # fmt: skip
    print(f"  rows added by the no-op reruns: {grown}; fetches recorded unchanged: "
          f"{reruns[-1].rows['source_checks']}")  # fmt: skip
    if failed:
        print(f"  failed runs: {failed}; last rerun ended: {tail}")
    ok = (
        not failed
        and fresh.returncode == 0
        and all(r.returncode == 0 for r in reruns)
        and ratio <= GOAL_RATIO
        and not any(grown.values())
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
