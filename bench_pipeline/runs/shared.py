"""The store of record for model runs made on many machines: tables in PostgreSQL.

Off by default. It is on when the deployment names a PostgreSQL server with the variables
that point the Dagster instance at it (`DAGSTER_PG_HOST`, `_PORT`, `_USER`, `_PASSWORD`,
`_DB`, read by `deploy/postgres/dagster.yaml`); `BENCH_RUN_STORE=local` keeps the runs in
the local warehouse anyway. Without it nothing here is imported at run time and model runs
go to DuckDB exactly as on one machine.

Tables (created on first use, `ensure_schema`; the DDL lives here, not in the DuckDB
migrations):

- `bench_work`: one row per run to make (`run_id`, the stable hash of setup, case version,
  input and repeat), with what a worker needs to rebuild it (the setup as JSON, the case's
  suite, id and version, the input, the repeat: never a prompt's text) and its claim: who
  holds it and until when (`lease_until`). A worker claims a few rows at a time with
  `FOR UPDATE SKIP LOCKED`, so two workers never hold one row, and renews its leases while
  it works; a worker that dies stops renewing, and once the lease ends another takes the
  row. `state` is `open`, `stored` or `failed`.
- `bench_runs`: finished runs, one JSON row each (`json`, kept as written: the merge reads
  it back as text, which `jsonb` would have to print again) in the shape of the warehouse's
  `model_runs` (`runs.store.RUN_COLUMNS`), keyed by run id: a row written twice (a retry
  after a lost acknowledgement, a lease that ran out under a slow worker) is stored once
  (`ON CONFLICT DO NOTHING`). `stored_xid` is the transaction that stored it.
- `bench_run_failures`: the last failure of each run that failed for good.
- `bench_responses`: the shared response cache (request hash → response, never the request
  and so never a prompt), so an answer paid for on one machine is never paid for again on
  another.
- `bench_rates`: the dated rates of each API id, written by whoever queues the work, so a
  worker prices its runs without a warehouse of its own.

The publisher merges `bench_runs` into the warehouse (`merge_into_warehouse`) in one DuckDB
transaction, then records the snapshot it read in `bench_merges`; a merge repeated or cut
short before that record skips the run ids the warehouse already holds, so each row lands
once.

Every call that reaches the server raises `StoreUnreachable` (naming the server and the
error) when the server cannot be reached, so a worker can stop and say why.
"""

from __future__ import annotations

import functools
import io
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.json as pa_json

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows, registered
from bench_pipeline.providers.base import ChatRequest, ChatResponse
from bench_pipeline.runs.costing import LongContextTier, Rates
from bench_pipeline.runs.plan import WorkItem
from bench_pipeline.runs.store import RUN_COLUMNS
from bench_pipeline.taskbank import TaskBank
from bench_pipeline.taskbank.setups import Harness, ModelRecord, Setup

STORE_VARIABLE = "BENCH_RUN_STORE"
"""`local` keeps model runs in the local warehouse even when `DAGSTER_PG_HOST` is set."""
PG_VARIABLES = ("DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD",
                "DAGSTER_PG_DB")  # fmt: skip
DEFAULT_LEASE_SECONDS = 60.0
CONNECT_TIMEOUT = 5

SCHEMA = """
CREATE TABLE IF NOT EXISTS bench_work (
    run_id        text PRIMARY KEY,
    partition_key text NOT NULL,
    setup_key     text NOT NULL,
    api_id        text NOT NULL,
    item          jsonb NOT NULL,
    state         text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'stored', 'failed')),
    claimed_by    text,
    lease_until   timestamptz,
    attempts      integer NOT NULL DEFAULT 0,
    queued_at     timestamptz NOT NULL DEFAULT now(),
    seq           bigserial
);
CREATE INDEX IF NOT EXISTS bench_work_open ON bench_work (seq) WHERE state = 'open';
CREATE INDEX IF NOT EXISTS bench_work_holder ON bench_work (claimed_by) WHERE state = 'open';
CREATE TABLE IF NOT EXISTS bench_runs (
    run_id    text PRIMARY KEY,
    row       json NOT NULL,
    worker    text NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now(),
    stored_xid xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX IF NOT EXISTS bench_runs_xid ON bench_runs (stored_xid);
CREATE TABLE IF NOT EXISTS bench_run_failures (
    run_id        text PRIMARY KEY,
    partition_key text NOT NULL,
    error         text NOT NULL,
    worker        text NOT NULL,
    failed_at     timestamptz NOT NULL DEFAULT now(),
    stored_xid    xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE TABLE IF NOT EXISTS bench_merges (
    merge_id  bigserial PRIMARY KEY,
    snapshot  pg_snapshot NOT NULL,
    pulled    integer NOT NULL,
    merged_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS bench_responses (
    request_hash text PRIMARY KEY,
    response     jsonb NOT NULL,
    worker       text NOT NULL,
    stored_at    timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS bench_rates (
    api_id     text PRIMARY KEY,
    rates      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
"""
_SCHEMA_LOCK = 4_242_042
"""The advisory lock taken while creating the tables (two first users at once)."""


class StoreUnreachable(RuntimeError):
    """The PostgreSQL run store could not be reached (or dropped the connection)."""


class StoreConflict(RuntimeError):
    """A transaction of the run store was rolled back by a conflict (a deadlock between
    two workers): nothing was written, and trying again is safe."""


def retried(attempts: int = 5) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Run a store operation again when a conflict rolled it back (`StoreConflict`)."""

    def decorate(operation: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(operation)
        def run(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(attempts):
                try:
                    return operation(*args, **kwargs)
                except StoreConflict:
                    if attempt == attempts - 1:
                        raise
                    time.sleep(0.05 * (attempt + 1))
            raise AssertionError("unreachable")

        return run

    return decorate


@dataclass(frozen=True)
class StoreAddress:
    """Where the run store is: the Dagster instance's PostgreSQL database."""

    host: str
    port: int
    user: str
    password: str
    db: str

    def __str__(self) -> str:  # never the password
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.db}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StoreAddress | None:
        """The address named by `DAGSTER_PG_*`, or None when the deployment names none (or
        `BENCH_RUN_STORE=local`)."""
        env = os.environ if env is None else env
        if env.get(STORE_VARIABLE, "").strip().lower() == "local":
            return None
        host = env.get("DAGSTER_PG_HOST", "").strip()
        if not host:
            return None
        return cls(
            host=host,
            port=int(env.get("DAGSTER_PG_PORT") or 5432),
            user=env.get("DAGSTER_PG_USER", ""),
            password=env.get("DAGSTER_PG_PASSWORD", ""),
            db=env.get("DAGSTER_PG_DB", "") or "dagster",
        )


def configured_store() -> SharedStore | None:
    """The run store the environment names, or None (the offline default)."""
    address = StoreAddress.from_env()
    return None if address is None else SharedStore(address)


def default_worker_name() -> str:
    """`<host>:<pid>`: unique among live workers, readable in the claims table."""
    return f"{socket.gethostname()}:{os.getpid()}"


# --- Encoding ----------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def encode_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A `model_runs` row as JSON values (decimals as text, dates in ISO form)."""
    return {column: _json_value(row[column]) for column in RUN_COLUMNS}


def decode_row(stored: Mapping[str, Any]) -> list[Any]:
    """The warehouse values of an encoded row, in `RUN_COLUMNS` order."""
    values = []
    for column in RUN_COLUMNS:
        value = stored.get(column)
        if value is not None:
            if column == "run_date":
                value = date.fromisoformat(value)
            elif column == "recorded_at":
                value = datetime.fromisoformat(value)
            elif column == "cost_usd":
                value = Decimal(value)
        values.append(value)
    return values


def encode_item(item: WorkItem) -> dict[str, Any]:
    """What a worker needs to rebuild `item` from its own task bank: the setup whole (a
    proposed setup is in no file), the case version and input by name (never their text)."""
    return {
        "setup": {
            "model": item.setup.model.model_dump(mode="json"),
            "harness": item.setup.harness.model_dump(mode="json"),
        },
        "suite": item.case.suite,
        "case_id": item.case.id,
        "case_version": item.case.version,
        "input_id": item.prompt.input_id,
        "repeat": item.repeat,
    }


class ItemError(ValueError):
    """A queued run this worker cannot rebuild (its task bank lacks the case version)."""


def decode_item(run_id: str, stored: Mapping[str, Any], bank: TaskBank) -> WorkItem:
    """Rebuild a queued run from its JSON and the worker's task bank.

    Raises:
        ItemError: The bank lacks the case, that version of it or the input, or the rebuilt
            item has another run id (the message names the run and the field).
    """
    setup = Setup(
        ModelRecord.model_validate(stored["setup"]["model"]),
        Harness.model_validate(stored["setup"]["harness"]),
    )
    suite, case_id, version = stored["suite"], stored["case_id"], stored["case_version"]
    try:
        case = bank.get(suite, case_id)
    except (KeyError, ValueError):
        raise ItemError(
            f"run {run_id}: case: {suite}:{case_id} is not in this worker's task bank"
        ) from None
    if case.version != version:
        raise ItemError(
            f"run {run_id}: case_version: this worker's task bank has {suite}:{case_id} at "
            f"version {case.version}, the queue asks for {version}"
        )
    prompt = next((p for p in case.prompts() if p.input_id == stored["input_id"]), None)
    if prompt is None:
        raise ItemError(f"run {run_id}: input_id: {stored['input_id']!r} is not an input here")
    item = WorkItem(setup, case, prompt, int(stored["repeat"]))
    if item.run_id != run_id:
        raise ItemError(f"run {run_id}: rebuilt as {item.run_id}: setup or case differs")
    return item


def _decimal(value: Any) -> Decimal | None:
    return None if value is None else Decimal(value)


def encode_rates(rates: Sequence[Rates]) -> list[dict[str, Any]]:
    """Dated rates as JSON (every decimal as text)."""
    return [
        {key: _json_value(value) for key, value in asdict(rate).items() if key != "long_context"}
        | {
            "long_context": None
            if rate.long_context is None
            else {k: _json_value(v) for k, v in asdict(rate.long_context).items()}
        }
        for rate in rates
    ]


def decode_rates(stored: Sequence[Mapping[str, Any]]) -> list[Rates]:
    rates = []
    for row in stored:
        tier = row.get("long_context")
        rates.append(
            Rates(
                effective_date=date.fromisoformat(row["effective_date"]),
                input=_decimal(row.get("input")),
                output=_decimal(row.get("output")),
                cached_input=_decimal(row.get("cached_input")),
                cache_write=_decimal(row.get("cache_write")),
                long_context=None
                if tier is None
                else LongContextTier(
                    threshold_tokens=int(tier["threshold_tokens"]),
                    input=_decimal(tier.get("input")),
                    output=_decimal(tier.get("output")),
                    cached_input=_decimal(tier.get("cached_input")),
                    cache_write=_decimal(tier.get("cache_write")),
                ),
                local=bool(row.get("local")),
            )
        )
    return rates


# --- The store -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A queued run a worker holds until `lease_until` (renewed while it works)."""

    run_id: str
    partition_key: str
    item: dict[str, Any]


class SharedStore:
    """The PostgreSQL run store. One connection, opened on first use and again after a
    failure; not for use by two threads at once (a worker's heartbeat has its own store)."""

    def __init__(self, address: StoreAddress) -> None:
        self.address = address
        self._conn: Any = None
        self._schema_ready = False

    def copy(self) -> SharedStore:
        """Another store on the same server, with its own connection (for another thread)."""
        return SharedStore(self.address)

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
            self._conn = None

    def _connect(self) -> Any:
        import psycopg2

        try:
            conn = psycopg2.connect(
                host=self.address.host,
                port=self.address.port,
                user=self.address.user,
                password=self.address.password,
                dbname=self.address.db,
                connect_timeout=CONNECT_TIMEOUT,
                application_name="bench-run-store",
                # a server that vanishes mid-statement is noticed in seconds, not hours
                keepalives=1,
                keepalives_idle=5,
                keepalives_interval=2,
                keepalives_count=3,
            )
        except psycopg2.Error as error:
            raise StoreUnreachable(
                f"run store {self.address} unreachable: {_first_line(error)}"
            ) from error
        return conn

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        """A cursor in a transaction that commits when the block ends (rolls back on error).

        Raises:
            StoreUnreachable: The server cannot be reached or dropped the connection.
        """
        import psycopg2
        import psycopg2.extensions

        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        if not self._schema_ready:
            self._schema_ready = True
            self.ensure_schema()
        conn = self._conn
        try:
            with conn, conn.cursor() as cursor:
                yield cursor
        except psycopg2.extensions.TransactionRollbackError as error:
            # a conflict between transactions (nothing was written), not a lost server
            raise StoreConflict(f"run store {self.address}: {_first_line(error)}") from error
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as error:
            self.close()
            raise StoreUnreachable(
                f"run store {self.address} unreachable: {_first_line(error)}"
            ) from error

    @retried()
    def ensure_schema(self) -> None:
        """Create the tables when missing (under an advisory lock: first users at once).
        Looked for first, without a lock: `CREATE INDEX IF NOT EXISTS` locks its table even
        when the index exists, which would wait for every worker's writes."""
        with self.cursor() as cursor:
            cursor.execute("SELECT to_regclass('bench_rates') IS NOT NULL")
            if cursor.fetchone()[0]:
                return
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
            cursor.execute(SCHEMA)

    # --- queueing ---

    @retried()
    def queue(self, items: Iterable[WorkItem]) -> int:
        """Add runs to make. A run queued before keeps its state, except a failed one, which
        is open again (a rerun retries failures). Returns the rows added or reopened."""
        from psycopg2.extras import Json, execute_values

        rows = [
            (
                item.run_id,
                item.partition_key,
                f"{item.setup.model.id}@{item.setup.harness.id}",
                item.setup.model.api_id,
                Json(encode_item(item)),
            )
            for item in items
        ]
        if not rows:
            return 0
        with self.cursor() as cursor:
            execute_values(
                cursor,
                "INSERT INTO bench_work (run_id, partition_key, setup_key, api_id, item) "
                "VALUES %s ON CONFLICT (run_id) DO UPDATE SET state = 'open', "
                "lease_until = NULL, claimed_by = NULL WHERE bench_work.state = 'failed' "
                "AND NOT EXISTS (SELECT 1 FROM bench_runs r WHERE r.run_id = bench_work.run_id)",
                rows,
                page_size=1000,
            )
            return cursor.rowcount

    @retried()
    def publish_rates(self, rates: Mapping[str, Sequence[Rates]]) -> None:
        """Write the dated rates of these API ids (replacing what was there)."""
        from psycopg2.extras import Json, execute_values

        if not rates:
            return
        with self.cursor() as cursor:
            execute_values(
                cursor,
                "INSERT INTO bench_rates (api_id, rates) VALUES %s ON CONFLICT (api_id) "
                "DO UPDATE SET rates = EXCLUDED.rates, updated_at = now()",
                [(api_id, Json(encode_rates(rows))) for api_id, rows in rates.items()],
            )

    def rates(self, api_ids: Iterable[str]) -> dict[str, list[Rates]]:
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT api_id, rates FROM bench_rates WHERE api_id = ANY(%s)", [sorted(api_ids)]
            )
            return {api_id: decode_rates(rows) for api_id, rows in cursor.fetchall()}

    # --- claims ---

    @retried()
    def claim(
        self,
        worker: str,
        limit: int,
        lease_seconds: float,
        only: Sequence[str] | None = None,
    ) -> list[Claim]:
        """Take up to `limit` open runs nobody holds (or whose holder's lease ended).

        Args:
            worker: The claimant's name.
            limit: Runs at most.
            lease_seconds: How long the claim holds without a renewal.
            only: Only these run ids, when given.
        """
        scope = "" if only is None else "AND run_id = ANY(%(only)s)"
        with self.cursor() as cursor:
            cursor.execute(
                f"""
                UPDATE bench_work SET claimed_by = %(worker)s, attempts = attempts + 1,
                    lease_until = clock_timestamp() + make_interval(secs => %(lease)s)
                WHERE run_id IN (
                    SELECT run_id FROM bench_work
                    WHERE state = 'open' {scope}
                      AND (lease_until IS NULL OR lease_until < clock_timestamp())
                    ORDER BY seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
                RETURNING run_id, partition_key, item, seq
                """,
                {
                    "worker": worker,
                    "lease": lease_seconds,
                    "limit": limit,
                    "only": list(only or []),
                },
            )
            rows = sorted(cursor.fetchall(), key=lambda row: row[3])
        return [Claim(run_id, key, item) for run_id, key, item, _ in rows]

    @retried()
    def renew(self, worker: str, lease_seconds: float) -> int:
        """Extend every open claim `worker` holds; returns how many."""
        with self.cursor() as cursor:
            # rows a flush is closing right now are skipped, never waited for
            cursor.execute(
                "UPDATE bench_work SET lease_until = clock_timestamp() + "
                "make_interval(secs => %s) WHERE run_id IN (SELECT run_id FROM bench_work "
                "WHERE claimed_by = %s AND state = 'open' FOR UPDATE SKIP LOCKED)",
                [lease_seconds, worker],
            )
            return cursor.rowcount

    def release(self, worker: str) -> int:
        """Give back every open claim of `worker` at once (a worker stopped by hand), for
        anyone to take without waiting for the lease. Returns how many."""
        with self.cursor() as cursor:
            cursor.execute(
                "UPDATE bench_work SET lease_until = NULL, claimed_by = NULL "
                "WHERE claimed_by = %s AND state = 'open'",
                [worker],
            )
            return cursor.rowcount

    def outstanding(self, only: Sequence[str] | None = None) -> int:
        """Runs still open (held or not)."""
        scope = "" if only is None else " AND run_id = ANY(%s)"
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT count(*) FROM bench_work WHERE state = 'open'{scope}",
                [] if only is None else [list(only)],
            )
            return int(cursor.fetchone()[0])

    # --- results ---

    @retried()
    def store_runs(self, worker: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Store finished runs and close their queue rows, in one transaction. A run stored
        before keeps its first row. Returns the rows that were new."""
        from psycopg2.extras import Json, execute_values

        if not rows:
            return 0
        ids = sorted(row["run_id"] for row in rows)
        with self.cursor() as cursor:
            inserted = execute_values(
                cursor,
                "INSERT INTO bench_runs (run_id, row, worker) VALUES %s "
                "ON CONFLICT (run_id) DO NOTHING RETURNING run_id",
                [(row["run_id"], Json(encode_row(row)), worker) for row in rows],
                fetch=True,
            )
            cursor.execute(
                "UPDATE bench_work SET state = 'stored', lease_until = NULL WHERE run_id = ANY(%s)",
                [ids],
            )
            cursor.execute("DELETE FROM bench_run_failures WHERE run_id = ANY(%s)", [ids])
        return len(inserted)

    @retried()
    def store_failures(self, worker: str, failures: Mapping[str, str]) -> None:
        """Record runs that failed for good (the last failure of each) and close them."""
        from psycopg2.extras import execute_values

        if not failures:
            return
        rows = [
            (run_id, error.split(": ", 1)[0], error, worker) for run_id, error in failures.items()
        ]
        with self.cursor() as cursor:
            execute_values(
                cursor,
                "INSERT INTO bench_run_failures (run_id, partition_key, error, worker) "
                "VALUES %s ON CONFLICT (run_id) DO UPDATE SET error = EXCLUDED.error, "
                "worker = EXCLUDED.worker, failed_at = now(), stored_xid = pg_current_xact_id()",
                rows,
            )
            cursor.execute(
                "UPDATE bench_work SET state = 'failed', lease_until = NULL "
                "WHERE run_id = ANY(%s) AND state = 'open'",
                [list(failures)],
            )

    def stored_ids(self, run_ids: Sequence[str]) -> set[str]:
        with self.cursor() as cursor:
            cursor.execute("SELECT run_id FROM bench_runs WHERE run_id = ANY(%s)", [list(run_ids)])
            return {run_id for (run_id,) in cursor.fetchall()}

    def failures(self, run_ids: Sequence[str]) -> dict[str, str]:
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT run_id, error FROM bench_run_failures WHERE run_id = ANY(%s)",
                [list(run_ids)],
            )
            return dict(cursor.fetchall())

    # --- the response cache ---

    def response(self, request_hash: str) -> ChatResponse | None:
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT response FROM bench_responses WHERE request_hash = %s", [request_hash]
            )
            row = cursor.fetchone()
        return None if row is None else ChatResponse.model_validate(row[0])

    def responses(self, request_hashes: Sequence[str]) -> dict[str, ChatResponse]:
        """The stored answers among `request_hashes`."""
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT request_hash, response FROM bench_responses WHERE request_hash = ANY(%s)",
                [list(request_hashes)],
            )
            return {h: ChatResponse.model_validate(r) for h, r in cursor.fetchall()}

    def put_response(self, worker: str, response: ChatResponse) -> None:
        from psycopg2.extras import Json

        stored = response.model_dump(mode="json") | {"from_cache": False}
        with self.cursor() as cursor:
            cursor.execute(
                "INSERT INTO bench_responses (request_hash, response, worker) VALUES (%s, %s, %s) "
                "ON CONFLICT (request_hash) DO NOTHING",
                [response.request_hash, Json(stored), worker],
            )


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class SharedResponses:
    """The response cache of a worker: its own journal (`providers.cache.ResponseCache`)
    first, then the shared table; an answer is written to both. When the shared table cannot
    be reached, a lookup raises (the run must not be paid for again blind) and a write keeps
    the answer in the journal only; `down` then says why, for the worker to stop."""

    def __init__(self, local: Any, store: SharedStore, worker: str) -> None:
        self.local = local
        self.store = store
        self.worker = worker
        self.down: str | None = None
        self._fetched: dict[str, ChatResponse | None] = {}

    def prefetch(self, request_hashes: Sequence[str]) -> None:
        """Look up a claim's requests in one query, so that each `get` of them is answered
        from memory: the worker holds their runs, so no other worker answers them meanwhile.

        Raises:
            StoreUnreachable: The store cannot be reached (`down` says so too).
        """
        try:
            found = self.store.responses(request_hashes)
        except StoreUnreachable as error:
            self.down = str(error)
            raise
        self._fetched.update({h: found.get(h) for h in request_hashes})

    def get(self, request_hash: str) -> ChatResponse | None:
        found = self.local.get(request_hash) if self.local is not None else None
        if found is not None:
            return found
        if request_hash in self._fetched:
            return self._fetched.pop(request_hash)
        if self.down is not None:
            raise StoreUnreachable(self.down)
        try:
            return self.store.response(request_hash)
        except StoreUnreachable as error:
            self.down = str(error)
            raise

    def put(self, request: ChatRequest, response: ChatResponse) -> None:
        if self.local is not None:
            self.local.put(request, response)
        if self.down is not None:
            return
        try:
            self.store.put_response(self.worker, response)
        except StoreUnreachable as error:
            self.down = str(error)


# --- The publisher's merge ---------------------------------------------------------------------


@dataclass(frozen=True)
class MergeReport:
    """What one merge took from the run store."""

    pulled: int = 0
    """Rows read that the store had not seen merged."""
    merged: int = 0
    """New to the warehouse (the rest it held already: a merge repeated)."""
    failures: int = 0
    seconds: float = 0.0


Connect = Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]]


def merge_into_warehouse(store: SharedStore, connect: Connect) -> MergeReport:
    """Pull every run and failure not merged yet into the warehouse, in one transaction,
    then mark them merged in the store.

    The store is read in a REPEATABLE READ transaction kept open until the warehouse has
    committed; that same transaction then records its snapshot in `bench_merges`, and the
    next merge reads only rows stored by transactions that snapshot could not see (those
    workers committed meanwhile). No stored row is rewritten to mark it. A run id
    the warehouse holds already is skipped, so a merge repeated, or cut short between the
    warehouse's commit and the marking, leaves each run once. A failure is taken only for a
    run with no stored row; failures of the runs read are cleared, as
    `runs.store.store_runs` does. The rows cross as one block of JSON lines, parsed by Arrow
    and cast to the table's types by DuckDB.
    """
    started = time.perf_counter()
    with store.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute(
            f"SELECT count(*), string_agg(row::text, E'\\n') FROM bench_runs {_UNMERGED}"
        )
        pulled, lines = cursor.fetchone()
        cursor.execute(
            f"SELECT run_id, partition_key, error, failed_at FROM bench_run_failures {_UNMERGED}"
        )
        failed = cursor.fetchall()
        if not pulled and not failed:
            return MergeReport(seconds=time.perf_counter() - started)
        with connect() as conn, transaction(conn):
            new = 0
            if pulled:
                table = _json_rows(conn, lines)
                with registered(conn, table) as view:
                    ((new,),) = conn.execute(
                        f"INSERT INTO model_runs BY NAME SELECT v.* FROM {view} AS v "
                        "ANTI JOIN model_runs AS m ON m.run_id = v.run_id"
                    ).fetchall()
                    conn.execute(
                        f"DELETE FROM run_failures WHERE run_id IN (SELECT run_id FROM {view})"
                    )
            failed_ids = [row[0] for row in failed]
            stored = {
                run_id
                for (run_id,) in conn.execute(
                    "SELECT run_id FROM model_runs WHERE run_id IN (SELECT unnest(?))",
                    [failed_ids],
                ).fetchall()
            }
            kept = [
                [run_id, key, error, at.astimezone(UTC).replace(tzinfo=None)]
                for run_id, key, error, at in failed
                if run_id not in stored
            ]
            if kept:
                conn.execute(
                    "DELETE FROM run_failures WHERE run_id IN (SELECT unnest(?))",
                    [[row[0] for row in kept]],
                )
                insert_rows(
                    conn, "run_failures", ("run_id", "partition_key", "error", "failed_at"), kept
                )
            seconds = time.perf_counter() - started
            conn.execute(
                "INSERT INTO run_store_merges (merged_at, store, pulled, merged, failures, "
                "seconds) VALUES (now()::TIMESTAMP, ?, ?, ?, ?, ?)",
                [str(store.address), pulled, new, len(kept), seconds],
            )
        cursor.execute(
            "INSERT INTO bench_merges (snapshot, pulled) VALUES (pg_current_snapshot(), %s)",
            [pulled],
        )
    return MergeReport(pulled, new, len(kept), time.perf_counter() - started)


_UNMERGED = """
    WHERE stored_xid >= coalesce(
        (SELECT pg_snapshot_xmin(snapshot) FROM bench_merges ORDER BY merge_id DESC LIMIT 1),
        '0'::xid8)
    AND NOT coalesce(
        (SELECT pg_visible_in_snapshot(stored_xid, snapshot) FROM bench_merges
         ORDER BY merge_id DESC LIMIT 1),
        false)
"""
"""Rows stored by transactions the last merge could not see: every row a transaction
committed before a merge's snapshot was read by that merge (or an earlier one)."""

_ARROW_TYPES = {
    "VARCHAR": pa.string(), "BOOLEAN": pa.bool_(), "INTEGER": pa.int64(), "BIGINT": pa.int64(),
    "SMALLINT": pa.int64(), "DOUBLE": pa.float64(), "FLOAT": pa.float64(),
}  # fmt: skip
"""How a `model_runs` column is read from JSON; any other type (DECIMAL, DATE, TIMESTAMP)
is read as its text and cast by DuckDB on insert."""


def _json_rows(conn: duckdb.DuckDBPyConnection, lines: str) -> pa.Table:
    """Encoded `model_runs` rows (JSON lines) as an Arrow table of `RUN_COLUMNS`."""
    types = dict(
        conn.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'model_runs' "
            "AND database_name = current_database() AND schema_name = 'main'"
        ).fetchall()
    )
    schema = pa.schema([(c, _ARROW_TYPES.get(types[c], pa.string())) for c in RUN_COLUMNS])
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    return pa_json.read_json(io.BytesIO(lines.encode()), parse_options=options)
