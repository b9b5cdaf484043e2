"""What `bench run` tells a person at the end: what changed, where to look, what failed.

Sources accepted and rejected (with the reason), model runs and their cost, submissions, the
release (new, or unchanged when no published value moved), the site and how to serve it, the
analyst copy, and on failure the step that failed with its error and what was skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TextIO

import duckdb

from bench_pipeline.core import settings
from bench_pipeline.core.inbox import inbox_files, inbox_sha256
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.runs.submitters import load_submitters


@dataclass(frozen=True)
class Failure:
    """The first failed step of a `bench run` and its error."""

    job: str
    run_id: str
    """The Dagster run, as the UI and `run_failure_log` name it."""
    step: str
    error: str


def _naive(moment: datetime) -> datetime:
    return moment.replace(tzinfo=None)


def source_lines(conn: duckdb.DuckDBPyConnection, started: datetime) -> list[str]:
    runs = conn.execute(
        "SELECT source, status, rows_valid, rows_quarantined, coalesce(reason, '') "
        "FROM source_runs WHERE started_at >= ? ORDER BY source",
        [_naive(started)],
    ).fetchall()
    unchanged = [
        source
        for (source,) in conn.execute(
            "SELECT DISTINCT source FROM source_checks WHERE checked_at >= ? ORDER BY 1",
            [_naive(started)],
        ).fetchall()
    ]
    if not runs and not unchanged:
        return ["Sources: none ran"]
    accepted = [r for r in runs if r[1] == "accepted"]
    lines = [
        f"Sources: {len(accepted)} accepted, {len(runs) - len(accepted)} rejected, "
        f"{len(unchanged)} unchanged"
    ]
    if unchanged:
        lines.append(
            f"  unchanged (same payload as their last accepted run): {', '.join(unchanged)}"
        )
    for source, status, valid, quarantined, reason in runs:
        detail = f"{valid} rows, {quarantined} quarantined" if status == "accepted" else reason
        lines.append(f"  {source:<22} {status:<9} {detail}")
    return lines


def work_lines(conn: duckdb.DuckDBPyConnection, started: datetime) -> list[str]:
    runs, simulated, cost, unpriced = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE simulated), sum(cost_usd), "
        "count(*) FILTER (WHERE cost_usd IS NULL) FROM model_runs"
    ).fetchall()[0]
    (failed,) = conn.execute("SELECT count(*) FROM run_failures").fetchall()[0]
    received = dict(
        conn.execute(
            "SELECT status, count(*) FROM submission_files WHERE received_at >= ? GROUP BY 1",
            [_naive(started)],
        ).fetchall()
    )
    label = " (simulated: made-up answers, not real models)" if runs and simulated == runs else ""
    return [
        f"Model runs: {runs} stored{label}, {failed} failed; cost "
        f"${format_usd(cost or Decimal(0))}, {unpriced} without a known cost",
        f"Submissions this run: {received.get('accepted', 0)} accepted, "
        f"{received.get('rejected', 0)} rejected",
        *waiting_lines(conn),
    ]


def waiting_lines(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """A line when inbox files wait for a usable submitters file (`runs.intake`)."""
    registry = load_submitters(settings.submitters_path())
    if registry.problem is None:
        return []
    recorded = {s for (s,) in conn.execute("SELECT sha256 FROM submission_files").fetchall()}
    files = inbox_files(settings.submissions_inbox())
    waiting = sum(1 for path in files if inbox_sha256(path) not in recorded)
    if not waiting:
        return []
    return [f"  {waiting} waiting, not yet judged: {registry.problem} (BENCH_SUBMITTERS)"]


def release_lines(
    conn: duckdb.DuckDBPyConnection, started: datetime, failure: Failure | None
) -> list[str]:
    """The release this run made or kept, the site and the analyst copy."""
    latest = conn.execute(
        "SELECT release_id, created_at, rows_total FROM releases ORDER BY created_at DESC LIMIT 1"
    ).fetchall()
    if not latest:
        release = "Release: none yet" + (" (the run stopped before it)" if failure else "")
    else:
        release_id, created, rows = latest[0]
        if created >= _naive(started):
            release = f"Release: {release_id} (new, {rows:,} rows)"
        elif failure is None:
            release = f"Release: {release_id} (unchanged: no published value changed)"
        else:
            release = f"Release: {release_id} (unchanged: the run stopped before the release)"
    site = settings.downloads_dir().parent
    lines = [f"{release}, in {settings.releases_dir()}"]
    if (site / "index.html").is_file():
        lines.append(f"Site: {site} (read it with `bench serve`, then http://127.0.0.1:8000/)")
    else:
        lines.append(f"Site: not built yet ({site})")
    copy = settings.analyst_copy_path()
    if copy.is_file():
        lines.append(f"Analyst copy: {copy} (open it read-only; never warehouse/bench.duckdb)")
    return lines


def print_summary(started: datetime, failure: Failure | None, out: TextIO) -> bool:
    """The end of `bench run`: what changed, where to look, and what failed; False when
    something failed. A warehouse that cannot be read (a full disk, a damaged file) is said
    in one line, and counts as a failure."""
    from bench_pipeline.core.warehouse import connect

    try:
        with connect(settings.warehouse_path()) as conn:
            lines = [
                *source_lines(conn, started),
                *work_lines(conn, started),
                *release_lines(conn, started, failure),
            ]
    except Exception as error:  # one line instead of a traceback
        lines = [
            f"The warehouse {settings.warehouse_path()} could not be read for this summary: "
            f"{stopped_because(error)}"
        ]
        if failure is None:
            failure = Failure("bench run", "-", "(the summary)", stopped_because(error))
    print("", file=out)
    for line in lines:
        print(line, file=out)
    if failure is None:
        print("\nOK", file=out)
        return True
    print(f"\nFAILED at step {failure.step}: {failure.error}", file=out)
    print(f"  (job {failure.job}, Dagster run {failure.run_id})", file=out)
    print("Steps after it were not run; `bench status` shows the failing checks.", file=out)
    return False


DISK_NEARLY_FULL = 16 * 1024 * 1024
"""Free bytes under which a failure is put down to a full disk (as well as its own error)."""


def stopped_because(error: BaseException) -> str:
    """A failure in one line: the innermost error of its chain (Dagster and SQLAlchemy wrap
    the one that matters), and, when the disk of BENCH_HOME is (nearly) full, that."""
    root = error
    while root.__cause__ is not None or (
        root.__context__ is not None and not root.__suppress_context__
    ):
        root = root.__cause__ or root.__context__  # type: ignore[assignment]
    message = (str(root).strip().splitlines() or [""])[0][:300]
    said = f"{type(root).__name__}: {message}" if message else type(root).__name__
    full = disk_full()
    return f"{full}; {said}" if full else said


def disk_full() -> str | None:
    """`no space left …` when the disk holding BENCH_HOME has (almost) no room, else None."""
    import shutil

    home = settings.bench_home()
    try:
        free = shutil.disk_usage(home).free
    except OSError:
        return None
    if free >= DISK_NEARLY_FULL:
        return None
    return f"no space left on the disk of BENCH_HOME={home} ({free:,} bytes free): free some"


def print_stopped(error: BaseException, out: TextIO) -> None:
    """The end of a `bench run` stopped outside any step (its instance or warehouse could not
    be opened or written): one paragraph, as `print_summary` ends, without a traceback."""
    print(f"\nFAILED: {stopped_because(error)}", file=out)
    print(
        "The run stopped there; nothing after it was run, and what was published before "
        "stays as it was. `bench status` says whether the warehouse can be read and what it holds.",
        file=out,
    )
