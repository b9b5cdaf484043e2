"""The `bench` command: run the pipeline, open the UI."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bench_pipeline.cli.boards import moment
from bench_pipeline.cli.instance import prepare_dagster_home
from bench_pipeline.cli.run_lock import running_run, who_runs
from bench_pipeline.cli.terminal import quiet_dagster, safe
from bench_pipeline.core import settings

if TYPE_CHECKING:
    from bench_pipeline.cli import run_group
    from bench_pipeline.cli.summary import Failure


def _progress(
    instance, run_id: str, total: int, out: TextIO, done: threading.Event, seen: dict[str, float]
) -> None:
    """Print each finished step with its time while the run goes on (polls the run's event
    log); `seen` carries the steps already printed by earlier runs of the same `bench run`,
    with their seconds."""
    try:
        _watch(instance, run_id, total, out, done, seen)
    except Exception:  # the instance unreadable (a full disk): the run's own
        done.wait()  # failure is reported at its end; the watcher only stops printing


def _watch(
    instance, run_id: str, total: int, out: TextIO, done: threading.Event, seen: dict[str, float]
) -> None:
    import dagster as dg

    from bench_pipeline.assets.runs import PROGRESS_PREFIX
    from bench_pipeline.cli.summary import duration

    finished = False
    shown_logs = 0
    begun: dict[str, float] = {}
    kinds = {
        dg.DagsterEventType.STEP_START,
        dg.DagsterEventType.STEP_SUCCESS,
        dg.DagsterEventType.STEP_FAILURE,
    }
    while not finished:
        finished = done.wait(1.0)  # one more look after the run ends, for its last steps
        logs = instance.all_logs(run_id)
        for entry in logs[shown_logs:]:
            if entry.user_message.startswith(PROGRESS_PREFIX):
                print(f"    {entry.user_message}", file=out)
        shown_logs = len(logs)
        for record in instance.get_records_for_run(run_id, of_type=kinds).records:
            entry = record.event_log_entry
            step = entry.step_key or ""
            if entry.dagster_event.event_type == dg.DagsterEventType.STEP_START:
                begun.setdefault(step, entry.timestamp)
            elif step and step not in seen:
                seen[step] = seconds = entry.timestamp - begun.get(step, entry.timestamp)
                failed = "FAILED " if entry.dagster_event.is_step_failure else ""
                print(f"  [{len(seen)}/{total}] {failed}{step} ({duration(seconds)})", file=out)
                out.flush()


# Dagster's documented run tags for a partition range (`execute_in_process` takes one key only,
# and the constants live in a private module).
PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"


def declared_run_tags(
    instance, out: TextIO | None = None, with_work: Callable[[list[str]], set[str]] | None = None
) -> list[dict[str, str]]:
    """Tags for one run per unbroken stretch of registered model-run partitions whose setup is
    declared in `setups/` (and, given `with_work`, that it says have runs to make).
    Partitions proposed for models new on OpenRouter are left to an operator (they may cost
    money); a run's range must not span them, since Dagster records every partition in a
    run's range as materialised."""
    from bench_pipeline.assets.runs import MODEL_RUN_PARTITIONS
    from bench_pipeline.cli.incremental import stretches
    from bench_pipeline.runs.plan import setups_by_partition
    from bench_pipeline.taskbank.setups import load_setups

    keys = instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name)
    declared = set(setups_by_partition(load_setups()))
    wanted = {k for k in keys if k in declared}
    if with_work is not None:
        wanted &= with_work(sorted(wanted))
    ranges = stretches(keys, wanted)
    if out is not None:
        covered = sum(1 for k in keys if k in declared)
        if len(keys) > covered:
            print(f"  ({len(keys) - covered} proposed model-run partitions left for an "
                  "operator to launch from the UI)", file=out)  # fmt: skip
    return [
        {PARTITION_RANGE_START_TAG: first, PARTITION_RANGE_END_TAG: last} for first, last in ranges
    ]


def _log_failure(run_id: str, job: str, message: str) -> None:
    """Put a failed run in `run_failure_log` (the failure sensor never sees in-process runs);
    a warehouse that cannot take it (a full disk) is left as it is: the summary says why."""
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.sensors.failures import record_failure

    try:
        with connect(settings.warehouse_path()) as conn:
            migrate(conn, settings.migrations_dir())
            record_failure(conn, run_id, job, message, datetime.now(UTC))
    except Exception:  # reported by the summary, not as a traceback
        pass


def _failure(job: str, run_id: str, result) -> Failure:
    """The first failed step with the error that started it (Dagster wraps it in its own),
    the file and field it names (`assets.metadata.where_to_fix`), and the reason any
    blocking check gave for failing."""
    from bench_pipeline.cli.summary import Failure

    events = result.get_step_failure_events()
    step, message = (events[0].step_key or "?", "failed") if events else ("?", "failed")
    data = events[0].event_specific_data if events else None
    error = data.error if data else None
    user = data.user_failure_data if data else None
    located = {k: str(v.value) for k, v in (user.metadata if user else {}).items()}
    while error is not None and error.cause is not None:
        error = error.cause
    if error is not None:
        message = error.message.strip()
    reasons = [
        f"{e.check_name}: {e.description}"
        for e in result.get_asset_check_evaluations()
        if not e.passed and e.description
    ]
    return Failure(
        job,
        run_id,
        step,
        "\n".join([message, *(f"check {reason}" for reason in reasons)]),
        file=located.get("file", ""),
        field=located.get("field", ""),
        record=located.get("record", ""),
    )


def run(mode: str, out: TextIO = sys.stdout) -> int:
    """Materialise every asset (the pipeline's jobs in order); 0 only when every step
    succeeded (rejections are normal). Refuses at once (exit 3) while another `bench run`
    holds the same BENCH_HOME (see `bench_pipeline.cli.run_lock`)."""
    from bench_pipeline.cli.instance import default_dagster_home, skip_bookkeeping_fsync
    from bench_pipeline.cli.run_lock import RunLockedError, exclusive_run
    from bench_pipeline.core.warehouse import held
    from bench_pipeline.ingest import prestage

    began = datetime.now(UTC)
    home = prepare_dagster_home()
    if home == default_dagster_home():  # our own instance, not an operator's
        skip_bookkeeping_fsync(home)
    try:
        with exclusive_run(settings.bench_home()) as holder:  # only entering raises it
            # the steps run one by one here, so payloads are staged ahead on the other core
            with prestage.ahead(), held(settings.warehouse_path()):
                return _run_locked(mode, out, holder, began)
    except RunLockedError as busy:
        print(f"bench run refused: {busy}", file=out)
        return 3
    except Exception as error:  # a full disk, a damaged warehouse or instance
        from bench_pipeline.cli.summary import print_stopped

        print_stopped(error, out)
        return 1


def _with_work(keys: list[str]) -> set[str]:
    from bench_pipeline.cli.incremental import partitions_with_work
    from bench_pipeline.core.warehouse import connect

    with connect(settings.warehouse_path()) as conn:
        return partitions_with_work(conn, keys)


def _plan(definitions, instance, candidates: set, changed: set):
    """The out-of-date assets among `candidates` (see `bench_pipeline.cli.incremental`)."""
    from bench_pipeline.cli.incremental import out_of_date
    from bench_pipeline.core.warehouse import connect

    with connect(settings.warehouse_path()) as conn:
        return out_of_date(definitions, instance, conn, candidates, changed)


def _executable(definitions, job: str) -> set:
    return set(definitions.resolve_job_def(job).asset_layer.executable_asset_keys)


def waves(graph, keys: set, site) -> list[set]:
    """A job's assets in the order `bench run` plans and runs them. First what lies above no
    source's live tables in the job: a rejected source run rematerialises `live` with the
    data version it had, so planning what lies below only after it keeps the registry, the
    indices and the release from being rebuilt for data that did not change. Then the rest
    but the site, then the site, rebuilt only when the release it shows changed."""
    from bench_pipeline.assets.sources import GROUP

    sources = {k for k in keys if (graph.get(k).group_name or "").startswith(f"{GROUP}_")}
    below: set = set()
    frontier = [child for k in sources for child in graph.get(k).child_keys]
    while frontier:  # everything downstream, through other jobs' assets too
        key = frontier.pop()
        if key not in below and key not in sources:
            below.add(key)
            frontier.extend(graph.get(key).child_keys)
    first = keys - below - {site}
    return [wave for wave in (first, (below & keys) - {site}, keys & {site}) if wave]


def _reasons(plan, shown: int = 3) -> str:
    """`N to recompute: key (reason), ...` for the progress display."""
    items = sorted(plan.reasons.items(), key=lambda item: item[0].to_user_string())
    listed = ", ".join(f"{k.to_user_string()} ({why})" for k, why in items[:shown])
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return f"{len(items)} to recompute: {listed}{more}"


def _run_locked(mode: str, out: TextIO, holder: dict, began: datetime | None = None) -> int:
    import dagster as dg

    from bench_pipeline import definitions as loaded
    from bench_pipeline.cli import run_group
    from bench_pipeline.cli.run_lock import fail_dead_runs, run_tags
    from bench_pipeline.cli.summary import print_summary, run_log_path
    from bench_pipeline.definitions import build_definitions
    from bench_pipeline.ingest.catalog import source_definitions

    # the module built them on import; build again only for another source mode
    same = mode == loaded.DEFS_SOURCE_MODE
    definitions = loaded.defs if same else build_definitions(mode)
    instance = dg.DagsterInstance.get()
    for dead in fail_dead_runs(instance, _log_failure):
        print(f"  (run {dead}, left unfinished by a process that died, marked failed)", file=out)
    started = datetime.now(UTC)
    graph = definitions.resolve_asset_graph()
    steps = len(graph.get_all_asset_keys()) + len(list(graph.asset_check_keys))
    print(f"bench run: {steps} steps, sources {mode}, BENCH_HOME={settings.bench_home()}", file=out)
    seen: dict[str, float] = {}
    log = _LogFile(run_log_path(started))
    command = "bench run" if mode == "recorded" else f"bench run --sources {mode}"
    parent = run_group.CommandRun(instance, command, run_tags(holder))
    tags = run_tags(holder) | parent.group_tags()
    try:
        with parent.members():
            success, failure = _execute_jobs(definitions, instance, tags, out, steps, seen, log)
    except BaseException as error:  # the parent ends as the command does, then on it goes
        _finish(parent, False, seen, started, f"{type(error).__name__}: {error}")
        raise
    log.close()
    _finish(parent, success, seen, started, f"{failure.step}: {failure.error}" if failure else "")
    summarised = print_summary(
        started,
        failure,
        out,
        began=began,
        steps=seen,
        sources=list(source_definitions()),
        rerun=command,
        log=log.path if log.written else None,
    )
    return 0 if success and summarised else 1


def _finish(
    parent: run_group.CommandRun, success: bool, seen: dict, started: datetime, why: str
) -> None:
    """End the parent run with the steps' times; an instance that cannot take it (a full
    disk) leaves it to the next `bench run`, which marks it failed (its process is gone)."""
    try:
        parent.finish(success, seen, (datetime.now(UTC) - started).total_seconds(), why)
    except Exception:  # the summary reports what matters
        pass


def _execute_jobs(
    definitions, instance, group: dict[str, str], out: TextIO, steps: int, seen: dict, log
) -> tuple[bool, Failure | None]:
    """The pipeline's jobs in order, each wave one Dagster run tagged with `group` (the run
    lock's and the run group's tags); whether all succeeded, and the first failure."""
    from bench_pipeline.assets.runs import MODEL_RUNS_KEY
    from bench_pipeline.assets.site import SITE_KEY
    from bench_pipeline.definitions import FETCH_JOB, PIPELINE_JOBS, RUN_JOB

    graph = definitions.resolve_asset_graph()
    failure: Failure | None = None

    def execute(name: str, tags: dict[str, str], keys: set | None = None) -> bool:
        nonlocal failure
        run_id = str(uuid.uuid4())
        job = definitions.resolve_job_def(name)
        if keys is not None:
            job = job.get_subset(asset_selection=keys)
        done = threading.Event()
        watcher = threading.Thread(
            target=_progress, args=(instance, run_id, steps, out, done, seen)
        )
        watcher.start()
        try:
            with contextlib.redirect_stderr(log):  # Dagster's log: to the file, not the terminal
                result = job.execute_in_process(
                    instance=instance,
                    run_id=run_id,
                    tags=tags | group,
                    raise_on_error=False,
                    run_config={"loggers": {"console": {"config": {"log_level": "INFO"}}}},
                )
        except Exception as error:  # Dagster's own storage failed (a full disk)
            from bench_pipeline.cli.summary import Failure, stopped_because

            failure = Failure(name, run_id, _last_step(seen), stopped_because(error))
            _log_failure(run_id, name, f"{failure.step}: {failure.error}")
            return False
        finally:
            done.set()
            watcher.join()
        if not result.success:
            failure = _failure(name, run_id, result)
            _log_failure(run_id, name, f"{failure.step}: {failure.error}")
        return result.success

    success = execute(FETCH_JOB, {})
    launched = False
    for name, _selection, _description in PIPELINE_JOBS:
        if not success:
            break
        if name == RUN_JOB:
            runs = declared_run_tags(instance, out, with_work=_with_work)
            if not runs:
                print(f"  ({name}: no model-run partition has runs to make)", file=out)
            for tags in runs:
                launched = True
                success = success and execute(name, tags)
            continue
        keys = _executable(definitions, name) - _executable(definitions, FETCH_JOB)
        planned: set = set()
        for wave in waves(graph, keys, SITE_KEY):
            plan = _plan(definitions, instance, wave, {MODEL_RUNS_KEY} if launched else set())
            if not plan.keys:
                continue
            print(f"  ({name}: {_reasons(plan)})", file=out)
            planned |= plan.keys
            success = success and execute(name, {}, plan.keys)
            if not success:
                break
        unchanged = keys - planned
        if unchanged and success:  # one line for all the job's assets that had nothing to do
            other = "other " if planned else ""
            many = f"{len(unchanged)} {other}assets"
            shown = next(iter(unchanged)).to_user_string() if len(unchanged) == 1 else many
            print(f"  ({name}: {shown}, nothing changed)", file=out)
    return success, failure


class _LogFile(io.TextIOBase):
    """Where `bench run` sends what Dagster would print on the terminal (its log, with every
    error's stack): a file opened on the first write. A file that cannot be written (a full
    disk) loses the log, never the run: the summary then names no log."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = False
        self._file: TextIO | None = None
        self._broken = False

    def write(self, text: str) -> int:
        if self._broken or not text:
            return len(text)
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")
            self._file.write(text)
            self._file.flush()
            self.written = True
        except OSError:
            self._broken = True
        return len(text)

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None
        super().close()


def _last_step(seen: dict[str, float]) -> str:
    """What a run that stopped outside any step reports as its step."""
    return "(between steps; the last finished is listed above)" if seen else "(before any step)"


def ui(host: str, port: int) -> int:
    """Replace this process with `dagster dev` on the workspace, run by this interpreter (so
    it works whether or not the virtualenv's `bin` is on PATH)."""
    prepare_dagster_home()
    os.chdir(settings.REPO_ROOT)
    # `dagster dev` warns that it is superseded by the `dg` tool on every start: a note for
    # the pipeline's developers, not its operator (who gets no Dagster warnings, see
    # `quiet_dagster`). Only that warning is silenced, by its message.
    superseded = "ignore:Function `dev_command` is superseded"
    os.environ["BENCH_QUIET_DAGSTER"] = "1"  # and the code server's (`bench_pipeline.assets`)
    command = [sys.executable, "-W", superseded, "-m", "dagster", "dev", "-w", "workspace.yaml"]
    os.execv(sys.executable, [*command, "-h", host, "-p", str(port)])
    return 0  # not reached


def serve(port: int, out: TextIO = sys.stdout) -> int:
    """Serve the built site (`build/site/`) on 127.0.0.1 until interrupted."""
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    site = settings.downloads_dir().parent
    if not (site / "index.html").is_file():
        print(f"no site at {site}: run `bench run` first", file=out)
        return 1
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    _stop_on_term()
    with ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        print(f"serving {site} on http://127.0.0.1:{server.server_address[1]}/", file=out)
        out.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


def _stop_on_term() -> None:
    """Make SIGTERM stop the server like Ctrl-C, whatever this process inherited: a parent
    that ignores or blocks TERM passes that on through fork and exec (seen under the test
    suite, where `bench serve` outlived a TERM by a minute)."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    signal.signal(signal.SIGTERM, interrupt)


def review(reviewer: str, include_simulated: bool, out: TextIO = sys.stdout) -> int:
    """A blind review session in the terminal (see `bench_pipeline.cli.review`)."""
    out = safe(out)
    from bench_pipeline.cli.review import review_session
    from bench_pipeline.cli.status import nothing_yet
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.taskbank import load_bank

    if empty := nothing_yet():
        print(empty, file=out)
        return 1
    path = settings.warehouse_path()
    with connect(path) as conn:
        migrate(conn, settings.migrations_dir())
    try:
        review_session(
            lambda: connect(path),
            load_bank(),
            reviewer,
            out=out,
            include_simulated=include_simulated,
        )
    except (EOFError, KeyboardInterrupt):
        print("\nStopped; nothing unsubmitted was stored.", file=out)
    return 0


def status(out: TextIO = sys.stdout) -> int:
    """The report of `bench_pipeline.cli.status`; on an empty home, says so and creates
    nothing."""
    from bench_pipeline.cli.status import existing_dagster_home, nothing_yet

    out = safe(out)  # names and reasons are untrusted text
    empty = nothing_yet()
    if empty:
        print(empty, file=out)
        return 0
    import dagster as dg
    import duckdb

    from bench_pipeline.assets.sources import cadence_interval, warn_window
    from bench_pipeline.cli.status import failing_checks, print_status
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.definitions import build_definitions
    from bench_pipeline.ingest.catalog import source_definitions

    failing = None
    dagster_home = existing_dagster_home()
    if dagster_home is not None:
        os.environ["DAGSTER_HOME"] = str(dagster_home)
        keys = list(build_definitions().resolve_asset_graph().asset_check_keys)
        with dg.DagsterInstance.get() as instance:
            failing = failing_checks(instance, keys)
    definitions = source_definitions()
    cadence = {
        name: (cadence_interval(d.cadence_cron), warn_window(d)) for name, d in definitions.items()
    }
    running = running_run(settings.bench_home())
    if running is None:
        from bench_pipeline.cli.status import unreadable_warehouse
        from bench_pipeline.core.warehouse import WarehouseBusyError

        report = io.StringIO()
        try:
            with connect(settings.warehouse_path()) as conn:
                migrate(conn, settings.migrations_dir())
                print_status(conn, failing, report, definitions=definitions, cadence=cadence)
        except WarehouseBusyError:
            raise  # held by a run in the UI: `main` says so
        except Exception as error:  # a damaged file (truncated, overwritten): one line
            print(unreadable_warehouse(settings.warehouse_path(), error), file=out)
            return 3
        out.write(report.getvalue())
        return 0
    # the run holds the warehouse until it ends: report its last completed state at once
    copy = settings.analyst_copy_path()
    print(f"A `bench run` is running ({who_runs(running)}); it holds the warehouse until it ends.",
          file=out)  # fmt: skip
    if not copy.is_file():
        print("No run has completed in this home yet: nothing else to report.", file=out)
        return 0
    try:
        with connect(copy, read_only=True) as conn:
            report = io.StringIO()
            print_status(conn, failing, report, definitions=definitions, cadence=cadence)
    except duckdb.Error as error:  # a copy of an older schema, or a damaged one
        print(f"The analyst copy {copy} could not be read ({error}).", file=out)
        return 3
    print(f"As of the last completed run (the analyst copy {copy}):\n", file=out)
    out.write(report.getvalue())
    return 0


def clear(run_id: str, flag: str, by: str, reason: str, out: TextIO = sys.stdout) -> int:
    from bench_pipeline.cli.operations import clear_flag
    from bench_pipeline.core.warehouse import connect, migrate

    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        try:
            clear_flag(conn, run_id, flag, by, reason)
        except ValueError as problem:
            print(f"not cleared: {problem}", file=out)
            return 2
    print(f"cleared {flag} on {run_id}; the next `bench run` scores it again", file=out)
    return 0


def accept(run_id: str, by: str, reason: str, out: TextIO = sys.stdout) -> int:
    """Record that a person accepts a source run the sanity check rejected."""
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.ingest.acceptance import accept_run

    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        try:
            source = accept_run(conn, run_id, by, reason)
        except ValueError as problem:
            print(f"not accepted: {problem}", file=out)
            return 2
    print(f"accepted {run_id}; the next run of {source} is compared with it", file=out)
    return 0


def scores_as_of(board: str, as_of: datetime | None, runs: bool, out: TextIO = sys.stdout) -> int:
    """Print a board's leaderboard rebuilt from what existed at `as_of` (default now); with
    `runs`, also the run-level tables behind it."""
    import polars as pl

    out = safe(out)  # model names and groups come from submissions: untrusted text
    from bench_pipeline.cli.boards import LEADERBOARD, leaderboard
    from bench_pipeline.cli.operations import board_as_of
    from bench_pipeline.cli.status import nothing_yet
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.taskbank import load_bank

    if empty := nothing_yet():
        print(empty, file=out)
        return 1
    moment = as_of or datetime.now(UTC)
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        frames = board_as_of(conn, load_bank(), board, moment)
    print(leaderboard(board, frames, moment), file=out)
    if runs:
        with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=40, float_precision=2):
            for name, frame in frames.items():
                if name != LEADERBOARD[board]:
                    print(f"\n{name}:", file=out)
                    print(frame, file=out)
    else:
        others = ", ".join(name for name in frames if name != LEADERBOARD[board])
        print(f"\n(--runs adds the run-level tables: {others})", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="materialise every asset")
    run_parser.add_argument(
        "--sources",
        choices=("recorded", "live"),
        default=os.environ.get("BENCH_SOURCE_MODE", "recorded"),
        help="recorded snapshots (default, offline) or live HTTP",
    )
    ui_parser = commands.add_parser("ui", help="start the Dagster UI (dagster dev)")
    ui_parser.add_argument("--host", default="127.0.0.1")
    ui_parser.add_argument("--port", type=int, default=3000)
    serve_parser = commands.add_parser("serve", help="serve the built static site locally")
    serve_parser.add_argument("--port", type=int, default=8000)
    review_parser = commands.add_parser("review", help="review run outputs blind")
    review_parser.add_argument("--reviewer", required=True, help="your name, as recorded")
    review_parser.add_argument(
        "--include-simulated",
        action="store_true",
        help="also offer simulated outputs (the offline demo), for practice",
    )
    commands.add_parser("status", help="sources, runs, grading and failing checks")
    worker_parser = commands.add_parser(
        "worker", help="make queued model runs from the PostgreSQL run store (many machines)"
    )
    worker_parser.add_argument("--name", help="this worker's name (default: host:pid)")
    worker_parser.add_argument("--concurrency", type=int, default=8, help="calls in flight")
    worker_parser.add_argument("--batch", type=int, help="runs claimed at a time (4x calls)")
    worker_parser.add_argument(
        "--lease-seconds", type=float, default=60.0, help="how long a dead worker's runs wait"
    )
    worker_parser.add_argument(
        "--until-empty", action="store_true", help="stop when no queued run is open"
    )
    worker_parser.add_argument("--poll-seconds", type=float, default=2.0)
    queue_parser = commands.add_parser(
        "queue", help="queue model runs in the PostgreSQL run store for the workers"
    )
    queue_parser.add_argument("partitions", nargs="*", help="setups (default: every current)")
    clear_parser = commands.add_parser("clear", help="clear a hard flag of a submitted run")
    clear_parser.add_argument("run_id")
    clear_parser.add_argument("flag")
    clear_parser.add_argument("--by", required=True, help="who clears it")
    clear_parser.add_argument("--reason", required=True)
    accept_parser = commands.add_parser(
        "accept", help="accept a rejected source run as the next run's baseline (recorded)"
    )
    accept_parser.add_argument("run_id")
    accept_parser.add_argument("--by", required=True, help="who accepts it")
    accept_parser.add_argument("--reason", required=True)
    compare_parser = commands.add_parser(
        "compare", help="a Navigator classic v1 comparison on your own API key"
    )
    compare_parser.add_argument("--task", required=True, help="a v1 library task id")
    compare_parser.add_argument("--volume", type=int, required=True, help="calls a month")
    compare_parser.add_argument("--budget", required=True, help="monthly budget, USD")
    compare_parser.add_argument("--model", action="append", required=True, help="an API id")
    compare_parser.add_argument("--key-file", type=Path, help="read your key from this file")
    compare_parser.add_argument("--base-url", default="https://openrouter.ai/api/v1")
    commands.add_parser("splits", help="Navigator judge splits waiting for a person")
    decide_parser = commands.add_parser("decide", help="decide a Navigator judge split")
    decide_parser.add_argument("run_id")
    decide_parser.add_argument("criterion")
    decide_parser.add_argument("outcome", choices=("pass", "partial", "fail"))
    decide_parser.add_argument("--input", dest="input_id", help="the input, if several split")
    decide_parser.add_argument("--by", required=True, help="who decides")
    decide_parser.add_argument("--reason", required=True)
    scores_parser = commands.add_parser("scores", help="a board's leaderboard, now or as of a date")
    scores_parser.add_argument("board", choices=("pm", "usecase", "navigator"))
    scores_parser.add_argument(
        "--as-of", type=moment, help="YYYY-MM-DD or an ISO time (UTC); default now"
    )
    scores_parser.add_argument(
        "--runs", action="store_true", help="also print the run-level tables behind the board"
    )
    registry_parser = commands.add_parser("registry", help="the model registry's review queue")
    registry_commands = registry_parser.add_subparsers(dest="registry_command", required=True)
    unmatched_parser = registry_commands.add_parser("unmatched", help="print the review queue")
    unmatched_parser.add_argument("--source", help="only this source's listings")
    unmatched_parser.add_argument("--limit", type=int, help="print at most this many")
    report_parser = registry_commands.add_parser("report", help="precision/recall on the gold")
    report_parser.add_argument("--gold", type=Path, help="the gold pairs (CSV)")
    sign_parser = commands.add_parser(
        "sign", help="sign a submission file as a registered submitter (in place)"
    )
    sign_parser.add_argument("file", type=Path)
    sign_parser.add_argument("--submitter", required=True, help="your name, as registered")
    sign_parser.add_argument(
        "--submitters", type=Path, help="the submitters file (default $BENCH_SUBMITTERS)"
    )
    card_parser = commands.add_parser(
        "card", help="the reporting card of a systems × items matrix file (CSV or Parquet)"
    )
    card_parser.add_argument("file", type=Path, help="long (system,item,score) or wide form")
    grouping = card_parser.add_mutually_exclusive_group()
    grouping.add_argument("--groups", type=Path, help="a file of item,group rows")
    grouping.add_argument("--group-by", help="a regex on the item id: its first group")
    card_parser.add_argument("--json", action="store_true", help="print the card as JSON")
    card_parser.add_argument("--draws", type=int, help="bootstrap draws (≥ 1000; default 1000)")
    card_parser.add_argument("--seed", type=int, help="bootstrap seed (default: the project's)")
    args = parser.parse_args(argv)
    if args.command == "card":  # an analyst's tool: no warehouse, no Dagster
        from bench_pipeline.cli import card

        if args.draws is not None and args.draws < card.DRAWS:
            parser.error(f"--draws must be at least {card.DRAWS}")
        return card.run(
            args.file,
            args.groups,
            args.group_by,
            args.json,
            args.draws or card.DRAWS,
            card.SEED if args.seed is None else args.seed,
        )
    if args.command in ("run", "status"):  # the commands that load the Dagster definitions
        quiet_dagster()
    from bench_pipeline.core.warehouse import WarehouseBusyError

    out = sys.stdout  # as `bench run` says it refuses
    if args.command in WAITS_FOR_THE_WAREHOUSE:
        running = running_run(settings.bench_home())
        if running is not None:
            print(refused_during_run(args.command, running), file=out)
            return 3
    try:
        return _dispatch(args)
    except WarehouseBusyError as busy:  # a run in the Dagster UI, or a script, holds it
        print(f"bench {args.command} refused: {busy}; try again when that run ends", file=out)
        return 3


WAITS_FOR_THE_WAREHOUSE = ("registry", "clear", "accept", "compare", "splits", "decide",
                           "scores", "review")  # fmt: skip
"""The commands that open the warehouse, which a running `bench run` holds until it ends
(`bench status` reports the last completed run meanwhile)."""


def refused_during_run(command: str, running: dict) -> str:
    return (
        f"bench {command} refused: a `bench run` ({who_runs(running)}) holds the warehouse "
        "until it ends; run this again then "
        "(`bench status` reports the last completed run meanwhile)"
    )


def sign(file: Path, submitter: str, submitters: Path | None, out: TextIO | None = None) -> int:
    """Sign a submission file in place as `submitter` (`runs.submitters.sign_file`)."""
    from bench_pipeline.runs.submitters import load_submitters, sign_file

    out = safe(out or sys.stdout)  # the reason may quote the file's text
    try:
        signature = sign_file(
            file, submitter, load_submitters(submitters or settings.submitters_path())
        )
    except ValueError as problem:
        print(f"bench sign refused: {problem}", file=out)
        return 1
    print(f"{file}: signed as {submitter!r} (signature {signature})", file=out)
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "registry":
        from bench_pipeline.cli import registry

        if args.registry_command == "unmatched":
            return registry.unmatched(args.source, args.limit)
        return registry.report(args.gold or registry.DEFAULT_GOLD)
    if args.command == "status":
        return status()
    if args.command in ("worker", "queue"):
        from bench_pipeline.cli import worker

        if args.command == "queue":
            return worker.queue(args.partitions)
        return worker.worker(
            args.name, args.concurrency, args.batch, args.lease_seconds, args.until_empty,
            args.poll_seconds,
        )  # fmt: skip
    if args.command == "sign":
        return sign(args.file, args.submitter, args.submitters)
    if args.command == "clear":
        return clear(args.run_id, args.flag, args.by, args.reason)
    if args.command == "accept":
        return accept(args.run_id, args.by, args.reason)
    if args.command == "compare":
        from bench_pipeline.cli.compare import compare

        return compare(
            args.task, args.volume, args.budget, args.model, args.key_file, args.base_url
        )
    if args.command in ("splits", "decide"):
        from bench_pipeline.cli import navigator

        if args.command == "splits":
            return navigator.splits()
        return navigator.decide(
            args.run_id, args.criterion, args.outcome, args.by, args.reason, args.input_id
        )
    if args.command == "scores":
        return scores_as_of(args.board, args.as_of, args.runs)
    if args.command == "review":
        return review(args.reviewer, args.include_simulated)
    if args.command == "run":
        return run(args.sources)
    if args.command == "serve":
        return serve(args.port)
    return ui(args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
