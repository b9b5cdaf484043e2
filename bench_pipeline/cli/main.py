"""The `bench` command: run the pipeline, open the UI."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bench_pipeline.cli.instance import prepare_dagster_home
from bench_pipeline.cli.terminal import safe
from bench_pipeline.core import settings


def _progress(
    instance, run_id: str, total: int, out: TextIO, done: threading.Event, seen: set[str]
) -> None:
    """Print each finished step while the run goes on (polls the run's event log); `seen`
    carries the steps already printed by earlier runs of the same `bench run`."""
    import dagster as dg

    from bench_pipeline.assets.runs import PROGRESS_PREFIX

    finished = False
    shown_logs = 0
    while not finished:
        finished = done.wait(1.0)  # one more look after the run ends, for its last steps
        logs = instance.all_logs(run_id)
        for entry in logs[shown_logs:]:
            if entry.user_message.startswith(PROGRESS_PREFIX):
                print(f"    {entry.user_message}", file=out)
        shown_logs = len(logs)
        records = instance.get_records_for_run(
            run_id, of_type={dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE}
        ).records
        for record in records:
            step = record.event_log_entry.step_key or ""
            if step and step not in seen:
                seen.add(step)
                failed = record.event_log_entry.dagster_event.is_step_failure
                print(f"  [{len(seen)}/{total}] {'FAILED ' if failed else ''}{step}", file=out)
                out.flush()


def _summary(started: datetime, out: TextIO) -> None:
    from decimal import Decimal

    from bench_pipeline.core.warehouse import connect
    from bench_pipeline.runs.costing import format_usd

    with connect(settings.warehouse_path()) as conn:
        runs = conn.execute(
            "SELECT source, status, rows_valid, rows_quarantined, reason FROM source_runs "
            "WHERE started_at >= ? ORDER BY source",
            [started.replace(tzinfo=None)],
        ).fetchall()
        names = conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY 1"
        ).fetchall()
        tables = [
            (name, conn.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0])
            for (name,) in names
        ]
        model_runs = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE simulated), sum(cost_usd), "
            "count(*) FILTER (WHERE cost_usd IS NULL) FROM model_runs"
        ).fetchall()[0]
        failures = conn.execute("SELECT count(*) FROM run_failures").fetchall()[0][0]
        inbox = conn.execute(
            "SELECT status, count(*) FROM submission_files WHERE received_at >= ? GROUP BY 1",
            [started.replace(tzinfo=None)],
        ).fetchall()
    print("\nSource runs:", file=out)
    for source, status, valid, quarantined, reason in runs:
        detail = f"{valid} rows, {quarantined} quarantined" if status == "accepted" else reason
        print(f"  {source:<22} {status:<9} {detail}", file=out)
    runs, simulated, cost, unpriced = model_runs
    label = " (simulated: made-up answers, not real models)" if runs and simulated == runs else ""
    print(f"\nModel runs: {runs} stored{label}, {failures} failed", file=out)
    total = format_usd(cost or Decimal(0))
    print(f"  cost of stored runs: ${total}; runs without a known cost: {unpriced}", file=out)
    received = dict(inbox)
    print(
        f"Submissions this run: {received.get('accepted', 0)} accepted, "
        f"{received.get('rejected', 0)} rejected",
        file=out,
    )
    print("\nTables:", file=out)
    for name, rows in tables:
        print(f"  {name:<22} {rows} rows", file=out)
    print(f"\nWarehouse: {settings.warehouse_path()}", file=out)


# Dagster's documented run tags for a partition range (`execute_in_process` takes one key only,
# and the constants live in a private module).
PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"


def declared_run_tags(instance, out: TextIO | None = None) -> list[dict[str, str]]:
    """Tags for one run per unbroken stretch of registered model-run partitions whose setup is
    declared in `setups/`. Partitions proposed for models new on OpenRouter are left to an
    operator (they may cost money); a run's range must not span them, since Dagster records
    every partition in a run's range as materialised."""
    from bench_pipeline.assets.runs import MODEL_RUN_PARTITIONS
    from bench_pipeline.runs.plan import parse_partition_key, ranges_of
    from bench_pipeline.taskbank.setups import load_setups

    keys = instance.get_dynamic_partitions(MODEL_RUN_PARTITIONS.name)
    declared = {s.setup_id for s in load_setups().setups}
    ranges = ranges_of(keys, declared)
    if out is not None:
        covered = sum(1 for k in keys if parse_partition_key(k).setup_id in declared)
        if len(keys) > covered:
            print(f"  ({len(keys) - covered} proposed model-run partitions left for an "
                  "operator to launch from the UI)", file=out)  # fmt: skip
    return [
        {PARTITION_RANGE_START_TAG: first, PARTITION_RANGE_END_TAG: last} for first, last in ranges
    ]


def _log_failure(run_id: str, job: str, message: str) -> None:
    """Put a failed run in `run_failure_log` (the failure sensor never sees in-process runs)."""
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.sensors.failures import record_failure

    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        record_failure(conn, run_id, job, message, datetime.now(UTC))


def _failure_message(result) -> str:
    """Each failed step with the error that started it (Dagster wraps it in its own)."""
    parts = []
    for event in result.get_step_failure_events():
        error = event.event_specific_data.error if event.event_specific_data else None
        while error is not None and error.cause is not None:
            error = error.cause
        if error is not None:
            parts.append(f"{event.step_key}: {error.message.strip()}")
    return "; ".join(parts) or "failed"


def run(mode: str, out: TextIO = sys.stdout) -> int:
    """Materialise every asset (the pipeline's jobs in order); 0 only when every step
    succeeded (rejections are normal). Refuses at once (exit 3) while another `bench run`
    holds the same BENCH_HOME (see `bench_pipeline.cli.run_lock`)."""
    from bench_pipeline.cli.run_lock import RunLockedError, exclusive_run

    prepare_dagster_home()
    try:
        with exclusive_run(settings.bench_home()) as holder:  # only entering raises it
            return _run_locked(mode, out, holder)
    except RunLockedError as busy:
        print(f"bench run refused: {busy}", file=out)
        return 3


def _run_locked(mode: str, out: TextIO, holder: dict) -> int:
    import dagster as dg

    from bench_pipeline.cli.run_lock import fail_dead_runs, run_tags
    from bench_pipeline.definitions import PIPELINE_JOBS, RUN_JOB, build_definitions

    definitions = build_definitions(mode)
    instance = dg.DagsterInstance.get()
    for dead in fail_dead_runs(instance, _log_failure):
        print(f"  (run {dead}, left unfinished by a process that died, marked failed)", file=out)
    started = datetime.now(UTC)
    graph = definitions.resolve_asset_graph()
    steps = len(graph.get_all_asset_keys()) + len(list(graph.asset_check_keys))
    print(f"bench run: {steps} steps, sources {mode}, BENCH_HOME={settings.bench_home()}", file=out)
    seen: set[str] = set()
    run_ids: list[str] = []
    success = True
    for name, _selection, _description in PIPELINE_JOBS:
        runs = declared_run_tags(instance, out) if name == RUN_JOB else [{}]
        if not runs:
            print(f"  ({name}: no model-run partitions, nothing to run)", file=out)
        for tags in runs:
            run_id = str(uuid.uuid4())
            run_ids.append(run_id)
            done = threading.Event()
            watcher = threading.Thread(
                target=_progress, args=(instance, run_id, steps, out, done, seen)
            )
            watcher.start()
            try:
                result = definitions.resolve_job_def(name).execute_in_process(
                    instance=instance,
                    run_id=run_id,
                    tags=tags | run_tags(holder),
                    raise_on_error=False,
                    run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
                )
            finally:
                done.set()
                watcher.join()
            success = success and result.success
            if not success:
                _log_failure(run_id, name, _failure_message(result))
                break
        if not success:
            break
    _summary(started, out)
    print(f"\n{'OK' if success else 'FAILED'}: runs {', '.join(run_ids)}", file=out)
    return 0 if success else 1


def ui(host: str, port: int) -> int:
    prepare_dagster_home()
    os.chdir(settings.REPO_ROOT)
    command = ["dagster", "dev", "-w", "workspace.yaml", "-h", host, "-p", str(port)]
    os.execvp(command[0], command)
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
    with ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        print(f"serving {site} on http://127.0.0.1:{server.server_address[1]}/", file=out)
        out.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


def review(reviewer: str, include_simulated: bool, out: TextIO = sys.stdout) -> int:
    """A blind review session in the terminal (see `bench_pipeline.cli.review`)."""
    out = safe(out)
    from bench_pipeline.cli.review import review_session
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.taskbank import load_bank

    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        try:
            review_session(
                conn, load_bank(), reviewer, out=out, include_simulated=include_simulated
            )
        except (EOFError, KeyboardInterrupt):
            print("\nStopped; nothing unsubmitted was stored.", file=out)
    return 0


def failing_checks(instance, definitions) -> list[str]:
    """Every asset check whose latest evaluation failed, with its severity."""
    keys = list(definitions.resolve_asset_graph().asset_check_keys)
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    failing = []
    for key, record in sorted(latest.items(), key=lambda item: item[0].to_user_string()):
        evaluation = record.evaluation
        if evaluation is not None and not evaluation.passed:
            failing.append(f"{key.to_user_string()} ({evaluation.severity.value})")
    return failing


def status(out: TextIO = sys.stdout) -> int:
    """The last run of every source, model runs, grading, failures and failing checks."""
    prepare_dagster_home()
    import dagster as dg

    from bench_pipeline.cli.operations import print_status
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.definitions import build_definitions

    failing = failing_checks(dg.DagsterInstance.get(), build_definitions())
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        print_status(conn, failing, safe(out))  # names and reasons are untrusted text
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


def scores_as_of(board: str, as_of: str, out: TextIO = sys.stdout) -> int:
    """Print a board rebuilt from what existed at `as_of` (a date or an ISO time, UTC)."""
    import polars as pl

    out = safe(out)  # model names and groups come from submissions: untrusted text
    from bench_pipeline.cli.operations import board_as_of
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.taskbank import load_bank

    moment = datetime.fromisoformat(as_of)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        frames = board_as_of(conn, load_bank(), board, moment)
    with pl.Config(tbl_rows=40, tbl_cols=10, fmt_str_lengths=40):
        for name, frame in frames.items():
            print(f"{name} as of {moment.isoformat()}:", file=out)
            print(frame, file=out)
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
    scores_parser = commands.add_parser("scores", help="a board as of a past date")
    scores_parser.add_argument("board", choices=("pm", "usecase", "navigator"))
    scores_parser.add_argument("--as-of", required=True, help="YYYY-MM-DD or an ISO time (UTC)")
    registry_parser = commands.add_parser("registry", help="the model registry's review queue")
    registry_commands = registry_parser.add_subparsers(dest="registry_command", required=True)
    unmatched_parser = registry_commands.add_parser("unmatched", help="print the review queue")
    unmatched_parser.add_argument("--source", help="only this source's listings")
    unmatched_parser.add_argument("--limit", type=int, help="print at most this many")
    report_parser = registry_commands.add_parser("report", help="precision/recall on the gold")
    report_parser.add_argument("--gold", type=Path, help="the gold pairs (CSV)")
    args = parser.parse_args(argv)
    if args.command == "registry":
        from bench_pipeline.cli import registry

        if args.registry_command == "unmatched":
            return registry.unmatched(args.source, args.limit)
        return registry.report(args.gold or registry.DEFAULT_GOLD)
    if args.command == "status":
        return status()
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
        return scores_as_of(args.board, args.as_of)
    if args.command == "review":
        return review(args.reviewer, args.include_simulated)
    if args.command == "run":
        return run(args.sources)
    if args.command == "serve":
        return serve(args.port)
    return ui(args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
