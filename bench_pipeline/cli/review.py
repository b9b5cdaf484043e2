"""`bench review`: a blind review session in the terminal.

Outputs are untrusted: they are shown through `cli.terminal.safe` (no escape sequence reaches
the terminal) and free-text answers end at an explicit marker line, so a pasted multi-line
answer stays in its own field (`cli.terminal.TerminalPrompter`).

The reviewer sees the task (brief and context) and the output, never the model, setup or
harness, nor any automated grade. Only after the review is confirmed and stored does the
screen reveal whose output it was and what the automated graders said, so those cannot anchor
the score. A stored review is final: there is no edit command, and the store refuses a second
review of the same run by the same person.

No run whose receipt is public is offered: a second look's receipt is held from every release
until its review is stored (`release.receipts`), and one found after its receipt was
published is counted, not offered.

The warehouse is opened only to read the queue and to store and reveal each review, never
while the reviewer reads and thinks, so `bench run`, `bench status`, sensors and schedules
work during a session. A review of a simulated run is practice (`grading.review_store`).
"""

from __future__ import annotations

import shlex
from typing import TextIO

import duckdb

from bench_pipeline.cli.terminal import Prompter, TerminalPrompter, safe, wrapped
from bench_pipeline.grading.review_model import Review
from bench_pipeline.grading.review_store import (
    QueueItem,
    ReviewRefused,
    awaiting_second_look,
    review_queue,
    submit_review,
)
from bench_pipeline.release.receipts import public_receipt_runs
from bench_pipeline.runs.batch import Connect
from bench_pipeline.taskbank import TaskBank

RULE = "─" * 72


def _ask_score(ask: Prompter, out: TextIO) -> int:
    while True:
        answer = ask.line("Score 1-5 (1 unusable, 5 would ship as is): ").strip()
        if answer in {"1", "2", "3", "4", "5"}:
            return int(answer)
        print("  Please type a whole number from 1 to 5.", file=out)


def _ask_text(ask: Prompter, out: TextIO, question: str) -> str:
    while True:
        answer = ask.text(question).strip()
        if answer:
            return answer
        print("  An answer is needed (write `nothing` if there is nothing to say).", file=out)


def _ask_critical(ask: Prompter, out: TextIO, item: QueueItem) -> str | None:
    ids = [f.id for f in item.case.critical_failures]
    if not ids:
        return None
    for number, failure in enumerate(item.case.critical_failures, start=1):
        print(f"  {number}. {failure.id}: {failure.description}", file=out)
    while True:
        answer = ask.line("Critical failure committed? (number, or Enter for none): ").strip()
        if not answer:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(ids):
            return ids[int(answer) - 1]
        print(f"  Type a number from 1 to {len(ids)}, or press Enter.", file=out)


def show_blind(
    item: QueueItem, position: int, total: int, out: TextIO, width: int | None = None
) -> None:
    """The task and the output, with no identity and no grade; long lines wrap at words to
    `width` (default: the terminal's)."""
    case = item.case
    lines = [f"\n{RULE}\nOutput {position} of {total} · task {case.task} ({case.category})"]
    if item.why != "pm review":
        lines.append(f"Asked for a second look: {item.why}")
    if item.practice:
        lines.append("Practice: a simulated output; your review is kept apart, never published.")
    lines.append(f"{RULE}\nTHE TASK\n\n{case.brief.strip()}\n")
    if case.context.strip():
        lines.append(f"CONTEXT\n\n{case.context.strip()}\n")
    lines.append(f"{RULE}\nTHE OUTPUT\n\n{item.output.strip()}\n{RULE}")
    print(wrapped("\n".join(lines), width), file=out)


def reveal(conn: duckdb.DuckDBPyConnection, run_id: str, out: TextIO) -> None:
    """Whose output it was and the automated grades (shown only after submitting)."""
    setup = conn.execute(
        "SELECT s.label, s.api_id, s.harness FROM model_runs r JOIN setups s USING (setup_id) "
        "WHERE r.run_id = ? LIMIT 1",
        [run_id],
    ).fetchall()
    print("Revealed now that your review is stored:", file=out)
    if setup:
        label, api_id, harness = setup[0]
        print(f"  setup: {label} (model {api_id}, harness {harness})", file=out)
    grades = conn.execute(
        "SELECT question, outcome, score, grader FROM grades WHERE run_id = ? AND NOT held "
        "ORDER BY grader, question",
        [run_id],
    ).fetchall()
    if not grades:
        print("  automated grades: none yet", file=out)
    for question, outcome, score, grader in grades:
        shown = f"{score:g}/5" if score is not None else outcome
        print(f"  {grader}: {question} = {shown}", file=out)


def review_session(
    connect: Connect,
    bank: TaskBank,
    reviewer: str,
    *,
    out: TextIO,
    ask: Prompter | None = None,
    include_simulated: bool = False,
    width: int | None = None,
) -> int:
    """Work through the queue until it is empty or the reviewer stops; return reviews stored.

    Everything is printed through `terminal.safe` (outputs cannot drive the terminal), long
    lines wrapped at words to `width` (default: the terminal's), and asked through `ask`
    (default: a `TerminalPrompter` on stdin). `connect` opens a short-lived warehouse
    connection: one for the queue, one per review stored. When nothing waits but simulated
    outputs would (the offline demo), it says how to practise on them.
    """
    out = safe(out)
    ask = ask or TerminalPrompter(out=out)
    with connect() as conn:
        public = public_receipt_runs(conn)
        queue = review_queue(
            conn, bank, reviewer, include_simulated=include_simulated, public_receipts=public
        )
        unblind = len(public.intersection(awaiting_second_look(conn)))
        practice = 0
        if not queue and not include_simulated:
            practice = len(
                review_queue(conn, bank, reviewer, include_simulated=True, public_receipts=public)
            )
    if unblind:
        print(
            f"{unblind} second looks are not offered: their runs' receipts were published before "
            "the second look was found, so a review could not be blind.",
            file=out,
        )
    if not queue:
        print(f"Nothing waits for a review by {reviewer}.", file=out)
        if practice:
            hint = (
                f"{practice} simulated outputs (made-up answers, such as the offline demo's) "
                "can be reviewed as practice, kept apart and never published: "
                f"bench review --reviewer {shlex.quote(reviewer)} --include-simulated"
            )
            print(wrapped(hint, width), file=out)
        return 0
    print(f"{len(queue)} outputs wait for a blind review by {reviewer}.", file=out)
    stored = 0
    for position, item in enumerate(queue, start=1):
        show_blind(item, position, len(queue), out, width)
        score = _ask_score(ask, out)
        understood = _ask_text(ask, out, "What did it understand? ")
        missed = _ask_text(ask, out, "What did it miss? ")
        decisive = _ask_text(ask, out, "The decisive reason for your score: ")
        critical = _ask_critical(ask, out, item)
        confirm = ask.line("Submit? A submitted review can never be changed [y/N]: ")
        if confirm.strip().lower() not in {"y", "yes"}:
            print("Not submitted; this output stays in the queue.", file=out)
        else:
            review = Review(
                run_id=item.run_id,
                reviewer=reviewer,
                score=score,
                understood=understood,
                missed=missed,
                decisive_reason=decisive,
                critical_failure=critical,
            )
            with connect() as conn:
                try:
                    review_id = submit_review(conn, review, bank)
                except ReviewRefused as refused:
                    print(f"Refused: {refused}", file=out)
                else:
                    stored += 1
                    kind = "practice review" if item.practice else "review"
                    print(f"Stored {kind} {review_id}.", file=out)
                    reveal(conn, item.run_id, out)
        next_one = position < len(queue) and ask.line("Next output? [Y/n]: ")
        if next_one and next_one.strip().lower() in {"n", "no"}:
            break
    print(f"Done: {stored} reviews stored.", file=out)
    return stored
