"""The `bench` command: run the pipeline, open the UI."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TextIO

from bench_pipeline import settings
from bench_pipeline.instance import prepare_dagster_home


def _progress(instance, run_id: str, total: int, out: TextIO, done: threading.Event) -> None:
    """Print each finished step while the run goes on (polls the run's event log)."""
    import dagster as dg

    seen: set[str] = set()
    finished = False
    while not finished:
        finished = done.wait(1.0)  # one more look after the run ends, for its last steps
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
    from bench_pipeline.warehouse import connect

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
    print("\nSource runs:", file=out)
    for source, status, valid, quarantined, reason in runs:
        detail = f"{valid} rows, {quarantined} quarantined" if status == "accepted" else reason
        print(f"  {source:<22} {status:<9} {detail}", file=out)
    print("\nTables:", file=out)
    for name, rows in tables:
        print(f"  {name:<22} {rows} rows", file=out)
    print(f"\nWarehouse: {settings.warehouse_path()}", file=out)


def run(mode: str, out: TextIO = sys.stdout) -> int:
    """Materialise every asset; 0 only when every step succeeded (rejections are normal)."""
    prepare_dagster_home()
    import dagster as dg

    from bench_pipeline.definitions import EVERYTHING_JOB, build_definitions

    definitions = build_definitions(mode)
    job = definitions.resolve_job_def(EVERYTHING_JOB)
    instance = dg.DagsterInstance.get()
    run_id = str(uuid.uuid4())
    started = datetime.now(UTC)
    steps = len(definitions.resolve_asset_graph().get_all_asset_keys()) + len(
        list(definitions.resolve_asset_graph().asset_check_keys)
    )
    print(f"bench run: {steps} steps, sources {mode}, BENCH_HOME={settings.bench_home()}", file=out)
    done = threading.Event()
    watcher = threading.Thread(target=_progress, args=(instance, run_id, steps, out, done))
    watcher.start()
    try:
        result = job.execute_in_process(
            instance=instance,
            run_id=run_id,
            raise_on_error=False,
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
        )
    finally:
        done.set()
        watcher.join()
    _summary(started, out)
    print(f"\n{'OK' if result.success else 'FAILED'}: run {run_id}", file=out)
    return 0 if result.success else 1


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
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.sources)
    if args.command == "serve":
        return serve(args.port)
    return ui(args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
