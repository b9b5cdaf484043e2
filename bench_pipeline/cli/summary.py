"""What `bench run` tells a person at the end: what failed and how to fix it, what changed,
where to look.

On failure it leads with what to fix: the step, its error, the file and field it names (when
the error names them), the command to rerun and the file holding Dagster's log of the run
(which `bench run` keeps off the terminal: `run_log_path`). Then every source's outcome in
this run (accepted, rejected with the reason, unchanged, or not reached), model runs and their
cost (at the site's rounding, `site.markup.usd`), submissions, the release (new, or unchanged
when no published value moved), the site and how to serve it, the analyst copy, and the time
the run took with its slowest steps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TextIO

import duckdb

from bench_pipeline.core import settings
from bench_pipeline.core.inbox import inbox_files, inbox_sha256
from bench_pipeline.runs.submitters import load_submitters
from bench_pipeline.site.markup import usd

SLOWEST_SHOWN = 3
_MODULE_PATH = re.compile(r"^(?:[a-z_][\w]*\.)+(?=[A-Z]\w*: )")


@dataclass(frozen=True)
class Failure:
    """The first failed step of a `bench run` and its error."""

    job: str
    run_id: str
    """The Dagster run, as the UI and `run_failure_log` name it."""
    step: str
    error: str
    file: str = ""
    """The file the error names as the one to fix (empty when it names none)."""
    field: str = ""
    """The field inside it (`(the whole file)` for a file that does not parse)."""
    record: str = ""
    """The record inside it, when the file holds several (`model[2] (glm-5)`)."""


def run_log_path(started: datetime) -> Path:
    """Where `bench run` writes Dagster's log of a run started at `started`."""
    return settings.bench_home() / "build" / "logs" / f"bench-run-{started:%Y%m%dT%H%M%SZ}.log"


def duration(seconds: float) -> str:
    """`0.4 s`, `12.3 s`, `2 min 05 s`."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def _naive(moment: datetime) -> datetime:
    return moment.replace(tzinfo=None)


def source_lines(
    conn: duckdb.DuckDBPyConnection, started: datetime, sources: Sequence[str] = ()
) -> list[str]:
    """Every source run recorded by this `bench run` (by when it was recorded: a run it
    closed as abandoned started before it, and is rejected all the same), the sources whose
    payload had not changed, and any of `sources` with no outcome at all (not reached)."""
    runs = conn.execute(
        "SELECT source, status, rows_valid, rows_quarantined, coalesce(reason, '') "
        "FROM source_runs WHERE finished_at >= ? ORDER BY source, finished_at",
        [_naive(started)],
    ).fetchall()
    unchanged = [
        source
        for (source,) in conn.execute(
            "SELECT DISTINCT source FROM source_checks WHERE checked_at >= ? ORDER BY 1",
            [_naive(started)],
        ).fetchall()
    ]
    outcome = {r[0] for r in runs} | set(unchanged)
    missed = [name for name in sources if name not in outcome]
    if not runs and not unchanged and not missed:
        return ["Sources: none ran"]
    accepted = [r for r in runs if r[1] == "accepted"]
    lines = [
        f"Sources: {len(accepted)} accepted, {len(runs) - len(accepted)} rejected, "
        f"{len(unchanged)} unchanged" + (f", {len(missed)} not reached" if missed else "")
    ]
    if unchanged:
        lines.append(
            f"  unchanged (same payload as their last accepted run): {', '.join(unchanged)}"
        )
    for source, status, valid, quarantined, reason in runs:
        detail = f"{valid} rows, {quarantined} quarantined" if status == "accepted" else reason
        lines.append(f"  {source:<22} {status:<9} {detail}")
    if missed:
        lines.append(f"  not reached (the run stopped before them): {', '.join(missed)}")
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
        f"{usd(cost or Decimal(0))}, {unpriced} without a known cost",
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


def failure_lines(failure: Failure, rerun: str, log: Path | None) -> list[str]:
    """What failed and what to do, first: the step and the error's first line, the file and
    field to fix (when the error names them), the rest of the error, the command to rerun
    and where Dagster's log of the run (with the stacks) is."""
    headline, *rest = failure.error.strip().splitlines() or ["failed"]
    headline = _MODULE_PATH.sub("", headline)  # `TaskBankError: …`, not its module path
    lines = [
        f"FAILED at step {failure.step}: {headline}",
        f"  (job {failure.job}, Dagster run {failure.run_id})",
    ]
    if failure.file:
        lines.append(f"  file:   {failure.file}")
        field = f"{failure.record}: {failure.field}" if failure.record else failure.field
        lines.append(f"  field:  {field}")
    lines += [f"  {line.strip()}" for line in rest if line.strip()]
    lines.append(f"  fix:    correct that, then run `{rerun}` again")
    if log is not None:
        lines.append(f"  log:    {log} (Dagster's log of this run, with the stacks)")
    lines.append("Steps after it were not run; `bench status` shows the failing checks.")
    return lines


def time_lines(started: datetime, ended: datetime, steps: Mapping[str, float]) -> list[str]:
    """The run's wall time and its slowest steps."""
    total = f"Time: {duration((ended - started).total_seconds())} in all"
    slowest = sorted(steps.items(), key=lambda item: -item[1])[:SLOWEST_SHOWN]
    if not slowest:
        return [total]
    shown = ", ".join(f"{step} {duration(seconds)}" for step, seconds in slowest)
    return [f"{total} ({len(steps)} steps); slowest: {shown}"]


def print_summary(
    started: datetime,
    failure: Failure | None,
    out: TextIO,
    *,
    began: datetime | None = None,
    ended: datetime | None = None,
    steps: Mapping[str, float] | None = None,
    sources: Sequence[str] = (),
    rerun: str = "bench run",
    log: Path | None = None,
) -> bool:
    """The end of `bench run`: on failure what to fix first (`failure_lines`), then what
    changed, where to look and how long it took; False when something failed. A warehouse
    that cannot be read (a full disk, a damaged file) is said in one line, and counts as a
    failure.

    Args:
        started: When the run began.
        failure: The first failed step, or None.
        out: Where to print.
        began: When the command began, for its total time (default `started`).
        ended: When it ended (default now).
        steps: Seconds of each finished step, by step key.
        sources: Every source the run should have an outcome for.
        rerun: The command that runs it again.
        log: The file holding Dagster's log of the run.
    """
    from datetime import UTC

    from bench_pipeline.core.warehouse import connect

    try:
        with connect(settings.warehouse_path()) as conn:
            lines = [
                *source_lines(conn, started, sources),
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
    lines += time_lines(began or started, ended or datetime.now(UTC), steps or {})
    if failure is not None:
        print("", file=out)
        for line in failure_lines(failure, rerun, log):
            print(line, file=out)
    print("", file=out)
    for line in lines:
        print(line, file=out)
    if failure is None:
        if log is not None:
            print(f"Log: {log}", file=out)
        print("\nOK", file=out)
        return True
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
