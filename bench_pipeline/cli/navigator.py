"""`bench splits`, `bench decide`: a person's decisions on Navigator judge splits."""

from __future__ import annotations

import sys
from typing import TextIO

from bench_pipeline.cli.terminal import safe
from bench_pipeline.core import settings


def splits(out: TextIO = sys.stdout) -> int:
    """Print every judge split no person has decided yet, with the `bench decide` line."""
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.grading.split_decisions import open_splits

    out = safe(out)  # setup labels and criteria come from files people edit
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        waiting = open_splits(conn)
    if not waiting:
        print("no judge split waits for a decision", file=out)
        return 0
    print(f"{len(waiting)} judge split(s) wait for a person:", file=out)
    for split in waiting:
        said = ", ".join(f"{judge} says {outcome}" for judge, outcome in split.judges.items())
        print(f"  {split.run_id} {split.case_id}/{split.input_id} {split.criterion}: {said}",
              file=out)  # fmt: skip
        print(f"    bench decide {split.run_id} {split.criterion} pass|partial|fail "
              f"--input {split.input_id} --by NAME --reason TEXT", file=out)  # fmt: skip
    return 0


def decide(
    run_id: str,
    criterion: str,
    outcome: str,
    by: str,
    reason: str,
    input_id: str | None,
    out: TextIO = sys.stdout,
) -> int:
    """Record one decision; exit 2 with the reason when it is refused."""
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.grading.split_decisions import decide_split

    out = safe(out)
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        try:
            decide_split(conn, run_id, criterion, outcome, by, reason, input_id=input_id)
        except ValueError as problem:
            print(f"not recorded: {problem}", file=out)
            return 2
    print(f"recorded {outcome} for {criterion} of {run_id}; the next `bench run` counts it",
          file=out)  # fmt: skip
    return 0
