"""Staging time of each source on the recorded snapshots and on them enlarged N times.

Staging here is what `engine.stage` does between reading the raw files and writing the
staging tables: the contract check, the source's parser and the contract problems joined to
the rows (collector paused, as there). Best of three, wall and CPU seconds; the growth per
1× of data is (N× − 1×) / (N − 1). Not part of `make bench` (no baseline to compare with):
run it as `python -m benchmarks.staging_by_source [--copies N]`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench_pipeline.core import settings
from bench_pipeline.core.allocation import collector_paused
from bench_pipeline.ingest import engine
from bench_pipeline.ingest.catalog import SourceDefinition, source_definitions
from bench_pipeline.ingest.payload import RawFile
from bench_pipeline.ingest.sources import PARSERS
from benchmarks.enlarge_snapshots import enlarge


def stage_seconds(definition: SourceDefinition, folder: Path) -> tuple[float, float]:
    """Best-of-three (wall, CPU) seconds to stage the source's files in `folder`."""
    walls, cpus = [], []
    for _ in range(3):
        files = [RawFile(p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()]
        wall, cpu = time.perf_counter(), time.process_time()
        with collector_paused():
            report = engine.check_contract(definition.contract, files)
            frames = PARSERS[definition.name](files)
        problems = engine._problem_frame(report, definition)
        for table, frame in frames.items():
            engine._with_problems(frame, problems.get(table))
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--copies", type=int, default=10, help="enlargement factor N")
    args = parser.parse_args(argv)
    recorded = settings.REPO_ROOT / "sources" / "snapshots"
    with tempfile.TemporaryDirectory(prefix="bench-staging-") as tmp:
        enlarged = Path(tmp) / "enlarged"
        enlarge(recorded, enlarged, args.copies)
        print(
            f"{'source':<22} {'1x wall':>8} {'1x cpu':>7} {'Nx wall':>8} {'Nx cpu':>7} "
            f"{'cpu per 1x':>10}  (N = {args.copies})"
        )
        for name, definition in sorted(source_definitions().items()):
            one = stage_seconds(definition, recorded / name)
            many = stage_seconds(definition, enlarged / name)
            growth = (many[1] - one[1]) / (args.copies - 1)
            print(
                f"{name:<22} {one[0]:>8.3f} {one[1]:>7.3f} {many[0]:>8.3f} {many[1]:>7.3f} "
                f"{growth:>10.3f}"
            )
        shutil.rmtree(enlarged)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
