"""Model runs on four workers, each with its own BENCH_HOME, through the PostgreSQL run store
(`bench_pipeline/runs/shared.py`, `runs/worker.py`), one publisher merging into DuckDB.

Real servers on loopback: a throwaway PostgreSQL cluster (`tests/servers.py`) and an
OpenAI-compatible model server that records every request it gets (`tests/loopback.py`).
Workers are `bench worker` processes. Redis is not started: the workers claim their runs
from PostgreSQL, and nothing else would use it.

(a) Four workers drain the queue of two setups' runs: every run stored exactly once in the
    store and, after the merge, in the warehouse; the model server got each request once;
    a repeated merge adds nothing; and the boards graded and scored from the merged
    warehouse are the boards of a single-machine run of the same runs.
(b) The same with one worker SIGKILLed mid-batch: still every run exactly once, and every
    request the server got twice was one the killed worker had in flight (sent, its answer
    not stored) at the kill: counted and printed.
(c) A worker whose store becomes unreachable mid-batch (a relay in front of PostgreSQL cut)
    stops with exit status 3 and the reason; started again once the store is back, it
    stores what it kept and finishes: every run once, calls made again only for requests in
    flight when it stopped.
(d) A result written twice (a retry after a lost acknowledgement) is stored once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest
from loopback import LoopbackServer, chat_completions
from servers import Postgres, Reaper, free_port, postgres_server, reaper  # noqa: F401
from stages import database_of, materialize_in

from bench_pipeline.assets.grading import grades, reviews
from bench_pipeline.assets.scores import navigator_board_asset, pm_board
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.batch import Queued, queue_runs, run_model_batch, store_task_bank
from bench_pipeline.runs.plan import work_items
from bench_pipeline.runs.rates import refresh_model_rates
from bench_pipeline.runs.shared import SharedStore, StoreAddress, merge_into_warehouse
from bench_pipeline.runs.store import RUN_COLUMNS
from bench_pipeline.scores.load import navigator_frames, pm_frames
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
PATH = "/v1/chat/completions"
KEY = "sk-run-store-test-0123456789"
WORKERS = 4
CONCURRENCY = 4
LEASE_SECONDS = 6.0
DELAY = 0.05
WORKER_SECONDS = 150
MODELS = ("loopback-a", "loopback-b")


def _setups(folder: Path, base_url: str) -> Path:
    folder.mkdir()
    records = "".join(
        f'\n[[model]]\nid = "{name}"\napi_id = "test/{name}"\ncompany = "Test Co {name[-1]}"\n'
        f'context_limit = 8192\npricing_date = 2026-01-01\nbase_url = "{base_url}"\n'
        'api_key_env = "LOOPBACK_MODEL_KEY"\n'
        for name in MODELS
    )
    (folder / "models.toml").write_text(records)
    (folder / "harnesses.toml").write_text('[[harness]]\nid = "api-bare"\nenvironment = "api"\n')
    (folder / "pricing.toml").write_text(
        "".join(
            f'[[rate]]\napi_id = "test/{name}"\neffective_date = 2026-01-01\n'
            'input = "1"\noutput = "2"\n\n'
            for name in MODELS
        )
    )
    return folder


def _body_hash(body: bytes) -> str:
    """The request hash of a request as sent (`ChatRequest.request_hash`: canonical JSON)."""
    canonical = json.dumps(
        json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _database(server: Postgres, name: str) -> dict[str, str]:
    """A fresh database on the cluster; the DAGSTER_PG_* variables naming it."""
    with contextlib.closing(server.connect(db="postgres")) as admin:
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {name}")
    return server.env() | {"DAGSTER_PG_DB": name}


def _pg(env: dict[str, str], sql: str, params: list | None = None) -> list[tuple]:
    store = SharedStore(StoreAddress.from_env(env))
    try:
        with store.cursor() as cursor:
            cursor.execute(sql, params or [])
            return cursor.fetchall() if cursor.description else []
    finally:
        store.close()


@pytest.fixture(scope="module")
def loopback() -> Iterator[LoopbackServer]:
    with LoopbackServer({PATH: chat_completions(delay=DELAY)}) as server:
        yield server


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory, loopback: LoopbackServer) -> Path:
    """A publisher's BENCH_HOME with the task bank, the setups and their rates stored."""
    root = tmp_path_factory.mktemp("run_store")
    setups = _setups(root / "setups", loopback.url + "/v1")
    home = root / "prepared"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCH_SETUPS", str(setups))
        patch.setenv("BENCH_HOME", str(home))
        with WarehouseResource(path=str(database_of(home))).connection() as conn:
            store_task_bank(conn, load_bank(), load_setups())
            refresh_model_rates(conn)
    return home


@pytest.fixture
def publisher_env(prepared: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCH_SETUPS", str(prepared.parent / "setups"))
    monkeypatch.setenv("LOOPBACK_MODEL_KEY", KEY)
    monkeypatch.delenv("BENCH_SNAPSHOTS", raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    for name in ("DAGSTER_PG_HOST", "BENCH_RUN_STORE"):
        monkeypatch.delenv(name, raising=False)
    return prepared.parent / "setups"


def _home(prepared: Path, name: str) -> Path:
    home = prepared.parent / name
    shutil.copytree(prepared, home)
    return home


@dataclass
class QueuedHome:
    """A publisher home whose runs are queued in a fresh database of the store."""

    env: dict[str, str]
    publisher: Path
    store: SharedStore
    warehouse: WarehouseResource
    queued: Queued


def _queued(
    server: Postgres, prepared: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> QueuedHome:
    """Database `runs_<name>`, publisher home `publisher-<name>` (BENCH_HOME), and every
    run of the test's setups queued in the store."""
    env = _database(server, f"runs_{name}")
    publisher = _home(prepared, f"publisher-{name}")
    monkeypatch.setenv("BENCH_HOME", str(publisher))
    store = SharedStore(StoreAddress.from_env(env))
    warehouse = WarehouseResource(path=str(database_of(publisher)))
    queued = queue_runs(_partitions(), warehouse.connection, load_bank(), load_setups(), store)
    return QueuedHome(env, publisher, store, warehouse, queued)


def _partitions() -> list[str]:
    return [f"{name}@api-bare" for name in MODELS]


def _planned() -> dict[str, str]:
    """run id → request hash of every run of the test's setups."""
    items = work_items(_partitions(), load_bank(), load_setups())
    return {item.run_id: item.request().request_hash() for item in items}


def _start_workers(
    env: dict[str, str],
    root: Path,
    watchdog: Reaper,
    setups: Path,
    count: int = WORKERS,
    fresh: bool = True,
) -> dict[str, subprocess.Popen]:
    """`count` `bench worker` processes, each with a BENCH_HOME of its own under `root`."""
    base = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "BENCH_SNAPSHOTS")}
    workers = {}
    for number in range(count):
        name = f"w{number}"
        home = root / f"worker-{name}"
        home.mkdir(exist_ok=not fresh)
        argv = [sys.executable, "-m", "bench_pipeline.cli", "worker", "--name", name]
        argv += ["--until-empty", "--concurrency", str(CONCURRENCY), "--batch", "8"]
        argv += ["--lease-seconds", str(LEASE_SECONDS), "--poll-seconds", "0.3"]
        worker_env = (
            base
            | env
            | {
                "BENCH_HOME": str(home),
                "BENCH_SETUPS": str(setups),
                "BENCH_MODEL_MODE": "live",
                "LOOPBACK_MODEL_KEY": KEY,
            }
        )
        with (root / f"{name}.log").open("wb") as log:
            workers[name] = watchdog.spawn(
                argv, env=worker_env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT
            )
    return workers


def _wait(workers: dict[str, subprocess.Popen], root: Path) -> dict[str, int]:
    deadline = time.monotonic() + WORKER_SECONDS
    codes = {}
    for name, process in workers.items():
        try:
            codes[name] = process.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            logs = "\n".join(p.read_text()[-2000:] for p in sorted(root.glob("w*.log")))
            pytest.fail(f"workers still going after {WORKER_SECONDS} s\n{logs}", pytrace=False)
    return codes


def _boards(home: Path, env: dict[str, str] | None) -> dict[str, pl.DataFrame]:
    """Grade and score `home` as the publisher does (merging the run store first when `env`
    names one), then the PM and Navigator boards as of one fixed moment."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        materialize_in(home, [grades, reviews, pm_board, navigator_board_asset])
    as_of = datetime(2100, 1, 1, tzinfo=UTC)
    with duckdb.connect(str(database_of(home)), read_only=True) as conn:
        frames = pm_frames(conn, load_bank(), as_of) | navigator_frames(conn, load_bank(), as_of)
    return {name: frame for name, frame in frames.items() if frame.height}


def _stable(frame: pl.DataFrame) -> pl.DataFrame:
    """A board without the columns that time a run or name a grading cycle."""
    moving = [c for c in frame.columns if c.endswith(("_at", "_seconds", "cycle_id"))]
    kept = frame.drop(moving)
    return kept.sort(kept.columns)


def _warehouse_runs(home: Path) -> tuple[int, int, int]:
    with duckdb.connect(str(database_of(home)), read_only=True) as conn:
        return conn.execute(
            "SELECT count(*), count(DISTINCT run_id), (SELECT count(*) FROM run_failures) "
            "FROM model_runs"
        ).fetchall()[0]


def test_four_workers_store_every_run_once_and_publish_the_same_boards(
    prepared: Path,
    publisher_env: Path,
    postgres_server: Postgres,  # noqa: F811
    reaper: Reaper,  # noqa: F811
    loopback: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned = _planned()
    setup = _queued(postgres_server, prepared, "four", monkeypatch)
    env, publisher, store, warehouse = setup.env, setup.publisher, setup.store, setup.warehouse
    queued = setup.queued
    assert (queued.planned, queued.queued) == (len(planned), len(planned))
    before = len(loopback.requests(PATH))

    root = publisher.parent / "workers-four"
    root.mkdir()
    codes = _wait(_start_workers(env, root, reaper, publisher_env), root)
    logs = {p.name: p.read_text() for p in sorted(root.glob("w*.log"))}
    assert codes == dict.fromkeys(codes, 0), logs

    sent = [_body_hash(r.body) for r in loopback.requests(PATH)[before:]]
    print(f"\nfour workers: {len(sent)} model calls for {len(planned)} runs")
    assert sorted(sent) == sorted(planned.values())  # each request once: 0 duplicate calls
    by_worker = dict(_pg(env, "SELECT worker, count(*) FROM bench_runs GROUP BY worker"))
    assert sum(by_worker.values()) == len(planned)
    assert len(by_worker) >= 2, by_worker  # the work spread
    stored = {run_id for (run_id,) in _pg(env, "SELECT run_id FROM bench_runs")}
    assert stored == set(planned)

    # The publisher merges: every run once; again: nothing new.
    first = merge_into_warehouse(store, warehouse.connection)
    assert (first.pulled, first.merged, first.failures) == (len(planned), len(planned), 0)
    # as if cut short between the warehouse's commit and the record of its snapshot
    _pg(env, "DELETE FROM bench_merges")
    again = merge_into_warehouse(store, warehouse.connection)
    assert (again.pulled, again.merged) == (len(planned), 0)
    assert merge_into_warehouse(store, warehouse.connection).pulled == 0
    store.close()
    assert _warehouse_runs(publisher) == (len(planned), len(planned), 0)

    # One machine, no run store, the same inputs and a model server answering the same.
    single = _home(prepared, "single-four")
    monkeypatch.setenv("BENCH_HOME", str(single))
    local = WarehouseResource(path=str(database_of(single)))
    calls = ModelCallsResource(mode="live", cache_dir=str(single / "cache" / "responses"))
    report = run_model_batch(
        _partitions(), local.connection, calls.providers(), bank=load_bank(),
        setups=load_setups(), locks=local.locks_dir(),
    )  # fmt: skip
    assert (report.recorded, report.failures) == (len(planned), {})
    with (
        duckdb.connect(str(database_of(single)), read_only=True) as one,
        duckdb.connect(str(database_of(publisher)), read_only=True) as many,
    ):
        columns = "run_id, partition_key, setup_id, output, cost_usd, prompt_tokens, simulated"
        query = f"SELECT {columns} FROM model_runs ORDER BY run_id"
        assert one.execute(query).fetchall() == many.execute(query).fetchall()

    boards_one = _boards(single, None)
    monkeypatch.setenv("BENCH_HOME", str(publisher))
    _pg(env, "DELETE FROM bench_merges")  # for grading/grades to read them all again
    boards_many = _boards(publisher, env)
    with duckdb.connect(str(database_of(publisher)), read_only=True) as conn:
        merges = conn.execute("SELECT pulled, merged FROM run_store_merges").fetchall()
    assert merges == [(len(planned), len(planned)), (len(planned), 0), (len(planned), 0)]
    assert boards_one, "no board was built"
    assert boards_one.keys() == boards_many.keys()
    for name in boards_one:
        assert _stable(boards_one[name]).equals(_stable(boards_many[name])), name
    print(f"boards identical: {sorted(boards_one)}")


def test_a_worker_killed_mid_batch_costs_only_its_calls_in_flight(
    prepared: Path,
    publisher_env: Path,
    postgres_server: Postgres,  # noqa: F811
    reaper: Reaper,  # noqa: F811
    loopback: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned = _planned()
    setup = _queued(postgres_server, prepared, "killed", monkeypatch)
    env, publisher, store, warehouse = setup.env, setup.publisher, setup.store, setup.warehouse
    before = len(loopback.requests(PATH))

    root = publisher.parent / "workers-killed"
    root.mkdir()
    workers = _start_workers(env, root, reaper, publisher_env)
    victim = "w0"
    deadline = time.monotonic() + 90
    while True:  # mid-batch: it has stored some runs and holds others
        held = _pg(
            env,
            "SELECT (SELECT count(*) FROM bench_runs WHERE worker = %s), "
            "(SELECT count(*) FROM bench_work WHERE claimed_by = %s AND state = 'open')",
            [victim, victim],
        )[0]
        if held[0] >= 4 and held[1] > 0:
            break
        assert workers[victim].poll() is None, (root / f"{victim}.log").read_text()
        assert time.monotonic() < deadline, "the victim never got going"
        time.sleep(0.02)
    os.kill(workers[victim].pid, signal.SIGKILL)
    workers[victim].wait(timeout=30)
    # Let requests it sent before dying reach the server's handlers (nobody can take its
    # runs before their lease ends, LEASE_SECONDS away), then what it held, which of those
    # answers were not stored, and which of them the server had been sent: in flight.
    time.sleep(0.5)
    holding = _pg(
        env,
        "SELECT w.run_id FROM bench_work w WHERE w.claimed_by = %s AND w.state = 'open'",
        [victim],
    )
    answered = {h for (h,) in _pg(env, "SELECT request_hash FROM bench_responses")}
    sent_before_kill = {_body_hash(r.body) for r in loopback.requests(PATH)[before:]}
    in_flight = {
        planned[run_id]
        for (run_id,) in holding
        if planned[run_id] in sent_before_kill and planned[run_id] not in answered
    }

    others = {name: p for name, p in workers.items() if name != victim}
    codes = _wait(others, root)
    assert codes == dict.fromkeys(others, 0), (root / "w1.log").read_text()[-3000:]

    sent = [_body_hash(r.body) for r in loopback.requests(PATH)[before:]]
    twice = {h for h in set(sent) if sent.count(h) > 1}
    duplicates = len(sent) - len(set(sent))
    print(
        f"\nkilled worker: {len(holding)} runs held at the kill, {len(in_flight)} calls in "
        f"flight; {duplicates} duplicate calls in all, {len(twice - in_flight)} beyond those"
    )
    assert set(sent) == set(planned.values())
    assert twice <= in_flight  # 0 duplicate paid calls beyond the killed one's in flight
    assert duplicates == len(twice) <= CONCURRENCY

    stored = _pg(env, "SELECT count(*), count(DISTINCT run_id) FROM bench_runs")[0]
    assert stored == (len(planned), len(planned))
    assert _pg(env, "SELECT count(*) FROM bench_work WHERE state <> 'stored'") == [(0,)]
    merged = merge_into_warehouse(store, warehouse.connection)
    store.close()
    assert merged.merged == len(planned)
    assert _warehouse_runs(publisher) == (len(planned), len(planned), 0)


class Relay:
    """A TCP relay on loopback in front of the PostgreSQL server that can be cut (every
    connection dropped, new ones refused) and restored on the same port: a store that
    becomes unreachable mid-batch, without stopping the cluster other tests share."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self._pairs: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()
        self.restore()

    def restore(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        listener.settimeout(0.1)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for end in pairs:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()


def test_a_worker_that_loses_the_store_stops_says_why_and_loses_nothing(
    prepared: Path,
    publisher_env: Path,
    postgres_server: Postgres,  # noqa: F811
    reaper: Reaper,  # noqa: F811
    loopback: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned = _planned()
    setup = _queued(postgres_server, prepared, "unreachable", monkeypatch)
    env, publisher, store, warehouse = setup.env, setup.publisher, setup.store, setup.warehouse
    before = len(loopback.requests(PATH))
    relay = Relay(postgres_server.host, postgres_server.port)
    through = env | {"DAGSTER_PG_PORT": str(relay.port)}

    root = publisher.parent / "workers-unreachable"
    root.mkdir()
    worker = _start_workers(through, root, reaper, publisher_env, count=1)["w0"]
    deadline = time.monotonic() + 90
    while _pg(env, "SELECT count(*) FROM bench_runs")[0][0] < 8:
        assert worker.poll() is None, (root / "w0.log").read_text()
        assert time.monotonic() < deadline, "the worker never got going"
        time.sleep(0.02)
    relay.cut()
    code = worker.wait(timeout=60)
    said = (root / "w0.log").read_text()
    assert code == 3, said
    assert f"worker w0 stopped taking work: run store {StoreAddress.from_env(through)}" in said
    assert "unreachable" in said
    stored_at_stop = _pg(env, "SELECT count(*) FROM bench_runs")[0][0]
    assert stored_at_stop < len(planned)
    spool = root / "worker-w0" / "spool" / "runs.jsonl"
    spooled = len(spool.read_text().splitlines()) if spool.exists() else 0

    relay.restore()  # the server is back: the same worker starts again
    (root / "w0.log").rename(root / "w0-first.log")
    again = _start_workers(through, root, reaper, publisher_env, count=1, fresh=False)["w0"]
    assert again.wait(timeout=WORKER_SECONDS) == 0, (root / "w0.log").read_text()
    relay.cut()
    assert not spool.exists()

    sent = [_body_hash(r.body) for r in loopback.requests(PATH)[before:]]
    duplicates = len(sent) - len(set(sent))
    print(
        f"\nstore lost mid-batch: {stored_at_stop} runs stored before, {spooled} kept in the "
        f"spool, {duplicates} calls made again (in flight when the worker stopped)"
    )
    assert set(sent) == set(planned.values())
    assert duplicates <= CONCURRENCY
    assert _pg(env, "SELECT count(*), count(DISTINCT run_id) FROM bench_runs") == [
        (len(planned), len(planned))
    ]
    assert merge_into_warehouse(store, warehouse.connection).merged == len(planned)
    store.close()
    assert _warehouse_runs(publisher) == (len(planned), len(planned), 0)


def test_a_result_written_twice_is_stored_once(
    prepared: Path,
    publisher_env: Path,
    postgres_server: Postgres,  # noqa: F811
) -> None:
    env = _database(postgres_server, "runs_twice")
    store = SharedStore(StoreAddress.from_env(env))
    row = {column: None for column in RUN_COLUMNS} | {
        "run_id": "r0123456789abcdef",
        "partition_key": "s1:pm:case@1",
        "output": "first",
        "cost_usd": Decimal("0.000025"),
        "run_date": date(2026, 1, 2),
        "recorded_at": datetime(2026, 1, 2, 3, 4, 5),
    }
    assert store.store_runs("a", [row]) == 1
    # a retry after a lost acknowledgement, and a second worker after a lease ran out
    assert store.store_runs("a", [row]) == 0
    assert store.store_runs("b", [row | {"output": "second"}]) == 0
    assert _pg(env, "SELECT worker, row->>'output', row->>'cost_usd' FROM bench_runs") == [
        ("a", "first", "0.000025")
    ]
    store.close()
