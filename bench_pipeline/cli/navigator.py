"""`bench splits`, `bench decide`: a person's decisions on Navigator judge splits."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from bench_pipeline.cli.terminal import safe
from bench_pipeline.core import settings

if TYPE_CHECKING:
    from bench_pipeline.taskbank import TaskBank


def splits(out: TextIO = sys.stdout, width: int | None = None) -> int:
    """Print every judge split no person has decided yet with what to decide from (the
    criterion's question, the answer, each judge's outcome and reason) and its
    `bench decide` line; lines wrap at words to `width` (default: the terminal's)."""
    from bench_pipeline.cli.terminal import wrapped
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.grading.split_decisions import open_splits
    from bench_pipeline.taskbank import load_bank

    out = safe(out)  # setup labels, criteria, answers and reasons: untrusted text
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        waiting = open_splits(conn)
    if not waiting:
        print("no judge split waits for a decision", file=out)
        return 0
    questions = _questions(load_bank())
    print(f"{len(waiting)} judge split(s) wait for a person:", file=out)
    for split in waiting:
        said = ", ".join(f"{judge} says {outcome}" for judge, outcome in split.judges.items())
        lines = [f"{split.run_id} {split.case_id}/{split.input_id} {split.criterion}: {said}"]
        question = questions.get((split.case_id, split.input_id, split.criterion))
        if question:
            lines.append(f"  question: {question}")
        lines.append("  answer:")
        lines += [f"    {line}" for line in (split.answer.strip() or "(empty)").splitlines()]
        for judge in split.judges:
            lines.append(f"  {judge}: {split.reasons.get(judge, '(gave no reason)')}")
        lines.append(f"  bench decide {split.run_id} {split.criterion} pass|partial|fail "
                     f"--input {split.input_id} --by NAME --reason TEXT")  # fmt: skip
        print(wrapped("\n".join(f"  {line}" for line in lines), width), file=out)
    return 0


def _questions(bank: TaskBank) -> dict[tuple[str, str, str], str]:
    """(case, input, criterion) → the criterion's question, for every judged Navigator input."""
    found = {}
    for case in bank.suite("navigator"):
        for item in case.inputs:
            for criterion in getattr(item.check, "rubric", None) or ():
                found[(case.id, item.id, criterion.id)] = criterion.question.strip()
    return found


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
