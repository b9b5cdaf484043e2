"""The warehouse row writer against DuckDB's `executemany`, at 1,000 and 100,000 rows.

Rows are Python lists of 30 text values (12 random letters each, from a fixed seed), what
the hot write paths (`runs.store`, `grading.store`) hand to `insert_rows`.

* baseline: `conn.executemany("INSERT INTO t VALUES (?, …)", rows)`, the writer the project
  used before.
* measured: `bench_pipeline.core.writer.insert_rows(conn, "t", columns, rows)`: the rows
  typed after the table's columns into an Arrow table, then one `INSERT … BY NAME SELECT`.
* floor: the same insert of an Arrow table built beforehand (`write_frame`): what DuckDB
  itself spends inserting and committing the rows, which no Python-side writer can beat.

All three write into an empty table of a DuckDB file in a temporary folder, either on their
own (autocommit, as `insert_rows` runs outside a transaction) or inside one transaction (as
`store_runs` runs it), and the tables must hold the same rows (checked by checksum). Each
variant runs `--repeat` times, the best shown; the baseline at 100,000 rows runs once (it
takes about 20 s).

Goal: the writer at least 30× faster than the baseline at 1,000 rows in autocommit, the way
the project wrote rows before (about 0.5 s for 1,000 rows). Inside one transaction the
baseline costs about a third of that while DuckDB's own insert and commit (the floor) stay,
which caps the ratio there at about 35× on this machine; that line is printed with the floor's
ratio beside it, not counted as the goal.
"""

from __future__ import annotations

import argparse
import os
import random
import string
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from bench_pipeline.core.warehouse import connect, table_checksum, transaction
from bench_pipeline.core.writer import insert_rows, rows_to_arrow, write_frame

COLUMNS = tuple(f"c{i:02d}" for i in range(30))
CASES = ((1_000, False), (1_000, True), (100_000, True))
"""(rows, in one transaction): autocommit at 100,000 rows would take the baseline minutes."""
GOAL_CASE = (1_000, False)
SEED = 20_261_201
REPEAT = 3
GOAL = 30.0


def synthetic_rows(count: int, seed: int = SEED) -> list[list[str]]:
    """`count` rows of 30 random 12-letter strings."""
    rng = random.Random(seed)
    letters = string.ascii_letters
    return [["".join(rng.choices(letters, k=12)) for _ in COLUMNS] for _ in range(count)]


def _fresh_table(conn: duckdb.DuckDBPyConnection, table: str) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} ({', '.join(f'{c} VARCHAR' for c in COLUMNS)})")


def _timed(
    conn: duckdb.DuckDBPyConnection,
    table: str,
    write: Callable[[duckdb.DuckDBPyConnection], object],
    repeat: int,
    in_transaction: bool,
) -> float:
    best = float("inf")
    for _ in range(repeat):
        _fresh_table(conn, table)
        started = time.perf_counter()
        if in_transaction:
            with transaction(conn):
                write(conn)
        else:
            write(conn)
        best = min(best, time.perf_counter() - started)
    return best


def measure(
    rows: list[list[str]], folder: Path, repeat: int, in_transaction: bool
) -> tuple[float, float, float]:
    """Seconds of (executemany, insert_rows, floor) for `rows`, after checking that all three
    stored the same rows."""
    marks = ", ".join("?" * len(COLUMNS))
    with connect(folder / "bench.duckdb") as conn:
        baseline = _timed(
            conn,
            "baseline",
            lambda c: c.executemany(f"INSERT INTO baseline VALUES ({marks})", rows),
            repeat if len(rows) <= 10_000 else 1,
            in_transaction,
        )
        writer = _timed(
            conn,
            "measured",
            lambda c: insert_rows(c, "measured", COLUMNS, rows),
            repeat,
            in_transaction,
        )
        _fresh_table(conn, "floor")
        built = rows_to_arrow(conn, "floor", COLUMNS, rows)
        floor = _timed(
            conn, "floor", lambda c: write_frame(c, "floor", built), repeat, in_transaction
        )
        stored = table_checksum(conn, "measured")
        for table in ("baseline", "floor"):
            if table_checksum(conn, table) != stored or stored[0] != len(rows):
                raise RuntimeError(f"{table} stored other rows than the writer at {len(rows):,}")
    return baseline, writer, floor


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print each ratio and whether the goal is met."""
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks --only writer", description=summary)
    parser.add_argument(
        "--repeat", type=int, default=REPEAT, help="runs of each variant, best shown"
    )
    args = parser.parse_args(argv)
    print(f"row writer, 30 text columns (load average {os.getloadavg()[0]:.2f})")
    print(
        f"  {'rows':>7}  {'commit':<16}  {'executemany':>11}  {'insert_rows':>11}  {'ratio':>6}"
        f"  {'floor':>8}  {'floor ratio':>11}"
    )
    met = True
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as tmp:
        for size, in_transaction in CASES:
            times = measure(synthetic_rows(size), Path(tmp), args.repeat, in_transaction)
            baseline, writer, floor = times
            ratio = baseline / writer
            if (size, in_transaction) == GOAL_CASE:
                met = ratio >= GOAL
            mode = "one transaction" if in_transaction else "autocommit"
            print(
                f"  {size:>7,}  {mode:<16}  {baseline:>10.3f}s  {writer:>10.4f}s  {ratio:>5.1f}×"
                f"  {floor:>7.4f}s  {baseline / floor:>10.1f}×"
            )
    rows, in_transaction = GOAL_CASE
    where = "one transaction" if in_transaction else "autocommit"
    print(f"  goal ≥ {GOAL:.0f}× at {rows:,} rows ({where}): {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
