"""The analyst copy typed and documented: money as DECIMAL, times with their zone, every table
and column commented.

The warehouse keeps some exact decimals as text (the score modules' costs), its timestamps
without a zone (all UTC) and some source dates as the text the publisher wrote. The copy a
reader opens has them typed: a text column named like money (`*_usd`, `*_usd_per_*`) becomes
`MONEY_SQL`, a `TIMESTAMP` becomes `TIMESTAMPTZ` read as UTC, and a text date column
(`*_date`, `*_at`, `as_of`, `*_cutoff`) becomes `DATE` or `TIMESTAMPTZ` when every value
parses as one (else it stays text, as its publisher wrote it, and its comment says so).

Every description has one home: a published column's is the publication schema's
(`published.py`); any other column's is the comment beside it in the migration that made it
(`warehouse/migrations/`), else `COMMON_COLUMNS`; a table's is its published title, else the
comment above its `CREATE TABLE`. A column described nowhere is named with the migration
that declares it, so a reader knows where to look.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import migration_files

MONEY_SQL = "DECIMAL(38,20)"
"""The copy's type for money kept as text (the release's `schema.MONEY`)."""
MONEY_NAME = re.compile(r"(^|_)usd($|_)")
DATE_NAME = re.compile(r"(_date$|^date$|_at$|^as_of$|_as_of$|_cutoff$|_on$)")
COMMON_COLUMNS = {
    "source_run_id": "The source run the row's values came from (source_runs.run_id).",
    "run_id": "The run the row belongs to.",
    "model_id": "Canonical model id in the registry (models.model_id).",
    "setup_id": "The setup (a model in a harness; setups.setup_id).",
    "source": "The outside source's name (sources/definitions/<source>.toml).",
    "simulated": "True when a simulated provider made the runs behind it.",
    "created_at": "When the row was made (UTC).",
    "loaded_at": "When the row was loaded (UTC).",
    "recorded_at": "When the row was recorded (UTC).",
    "methodology_version": "The methodology version whose rules made the row.",
}

_TABLE = re.compile(
    r"CREATE (?:OR REPLACE )?(?:TABLE|VIEW) (?:IF NOT EXISTS )?(\w+)\s*(?:\(|AS\b)", re.IGNORECASE
)
_ADDED = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (?:IF NOT EXISTS )?(\w+)[^;]*;\s*--\s*(.+)")
_COLUMN = re.compile(r"^\s*\"?(\w+)\"?\s+[A-Z][^-]*?(?:--\s*(.+))?$")


@dataclass
class Declared:
    """What the migrations say of the warehouse's tables."""

    tables: dict[str, str]
    """A table's comment (the `--` lines just above its CREATE TABLE)."""
    columns: dict[tuple[str, str], str]
    """A column's comment (the `--` text on its line)."""
    homes: dict[str, str]
    """The migration file that creates each table."""


def declared(directory: Path | None = None) -> Declared:
    """The comments the migrations carry, by table and by (table, column)."""
    found = Declared({}, {}, {})
    for _, path in migration_files(directory or settings.migrations_dir()):
        lines = path.read_text(encoding="utf-8").splitlines()
        table: str | None = None
        above: list[str] = []
        for line in lines:
            stripped = line.strip()
            opened = _TABLE.search(line)
            if opened:
                name = opened.group(1)
                found.homes.setdefault(name, path.name)
                if above:
                    found.tables.setdefault(name, " ".join(above))
                above = []
                table = None if "VIEW" in opened.group(0).upper() else name  # no column list
                continue
            if table and stripped.startswith(")"):
                table = None
                continue
            added = _ADDED.search(line)
            if added:
                found.columns.setdefault((added.group(1), added.group(2)), added.group(3).strip())
                continue
            if table:
                column = _COLUMN.match(line)
                if column and column.group(2) and column.group(1).upper() not in _KEYWORDS:
                    found.columns.setdefault((table, column.group(1)), column.group(2).strip())
                continue
            if stripped.startswith("--"):
                above.append(stripped.lstrip("-").strip())
            elif stripped:
                above = []
    return found


_KEYWORDS = {"PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT"}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _parses(conn: duckdb.DuckDBPyConnection, qualified: str, column: str, to: str) -> bool:
    """Whether every non-empty value of a text column reads as `to` (a `DATE` only when
    it is a day and nothing more, so a time is never cut off)."""
    name = _quoted(column)
    day = f" OR NOT regexp_full_match(trim({name}), '\\d{{4}}-\\d{{2}}-\\d{{2}}')"
    ((bad,),) = conn.execute(
        f"SELECT count(*) FROM {qualified} WHERE nullif(trim({name}), '') IS NOT NULL "
        f"AND (TRY_CAST({name} AS {to}) IS NULL{day if to == 'DATE' else ''})"
    ).fetchall()
    return bool(bad == 0)


def type_copy(conn: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    """Retype the copy's money, timestamp and date columns in place (see the module
    docstring).

    Returns:
        `table.column: OLD -> NEW` for each column retyped.
    """
    columns = conn.execute(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = ? AND schema_name = 'main' "
        "AND table_name IN (SELECT table_name FROM duckdb_tables() WHERE database_name = ?) "
        "ORDER BY table_name, column_index",
        [catalog, catalog],
    ).fetchall()
    changed = []
    for table, column, data_type in columns:
        qualified = f"{_quoted(catalog)}.main.{_quoted(table)}"
        name = _quoted(column)
        target, using = None, name
        if data_type == "TIMESTAMP":
            target, using = "TIMESTAMPTZ", f"timezone('UTC', {name})"
        elif data_type == "VARCHAR" and MONEY_NAME.search(column):
            if _parses(conn, qualified, column, MONEY_SQL):
                target, using = MONEY_SQL, f"CAST(nullif(trim({name}), '') AS {MONEY_SQL})"
        elif data_type == "VARCHAR" and DATE_NAME.search(column):
            for to, how in (
                ("DATE", f"CAST(nullif(trim({name}), '') AS DATE)"),
                ("TIMESTAMPTZ", f"CAST(nullif(trim({name}), '') AS TIMESTAMPTZ)"),
            ):
                if _parses(conn, qualified, column, to):
                    target, using = to, how
                    break
        if target is None:
            continue
        try:
            conn.execute(f"ALTER TABLE {qualified} ALTER {name} TYPE {target} USING {using}")
        except duckdb.Error:  # an index or constraint holds it: the table is made anew
            # (without its constraints, which a read-only copy does not need)
            try:
                conn.execute(
                    f"CREATE OR REPLACE TABLE {qualified} AS "
                    f"SELECT * REPLACE ({using} AS {name}) FROM {qualified}"
                )
            except duckdb.Error:
                continue
        changed.append(f"{table}.{column}: {data_type} -> {target}")
    return changed + _type_views(conn, catalog)


def _type_views(conn: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    """Every view of the copy defined anew over its own query, so it takes the retyped
    columns of its tables (a view keeps the types it was made with), and a timestamp it still
    gives without a zone made `TIMESTAMPTZ` (UTC)."""
    views = conn.execute(
        "SELECT view_name, sql FROM duckdb_views() "
        "WHERE database_name = ? AND schema_name = 'main' AND NOT internal ORDER BY view_name",
        [catalog],
    ).fetchall()
    changed: list[str] = []
    if not views:
        return changed
    ((previous,),) = conn.execute("SELECT current_database()").fetchall()
    conn.execute(f"USE {_quoted(catalog)}")  # the views' names resolve in the copy
    try:
        for view, sql in views:
            qualified = f"{_quoted(catalog)}.main.{_quoted(view)}"
            query = re.split(r"\bAS\b", sql, maxsplit=1, flags=re.IGNORECASE)[1]
            query = query.strip().rstrip(";")
            conn.execute(f"CREATE OR REPLACE VIEW {qualified} AS {query}")
            naive = [
                name
                for (name,) in conn.execute(
                    "SELECT column_name FROM duckdb_columns() WHERE database_name = ? "
                    "AND table_name = ? AND data_type = 'TIMESTAMP' ORDER BY column_index",
                    [catalog, view],
                ).fetchall()
            ]
            if naive:
                zoned = ", ".join(f"timezone('UTC', {_quoted(c)}) AS {_quoted(c)}" for c in naive)
                conn.execute(
                    f"CREATE OR REPLACE VIEW {qualified} AS "
                    f"SELECT * REPLACE ({zoned}) FROM ({query})"
                )
                changed += [f"{view}.{c}: TIMESTAMP -> TIMESTAMPTZ" for c in naive]
    finally:
        conn.execute(f"USE {_quoted(previous)}")
    return changed


def comment_rest(
    conn: duckdb.DuckDBPyConnection, catalog: str, found: Declared | None = None
) -> int:
    """Comment every table and column of the copy that has no comment yet (the published
    ones are commented first, from the publication schema).

    Returns:
        The number of comments written.
    """
    found = found or declared()
    written = 0
    tables = conn.execute(
        "SELECT table_name, comment, 'TABLE' FROM duckdb_tables() "
        "WHERE database_name = ? AND schema_name = 'main' "
        "UNION ALL SELECT view_name, comment, 'VIEW' FROM duckdb_views() "
        "WHERE database_name = ? AND schema_name = 'main' AND NOT internal",
        [catalog, catalog],
    ).fetchall()
    for table, comment, kind in tables:
        qualified = f"{_quoted(catalog)}.main.{_quoted(table)}"
        home = found.homes.get(table)
        where = f"warehouse/migrations/{home}" if home else "the pipeline's code"
        if not comment:
            text = found.tables.get(table) or f"Warehouse {kind.lower()} `{table}`"
            conn.execute(f"COMMENT ON {kind} {qualified} IS {_text(f'{text} (made by {where}).')}")
            written += 1
        rows = conn.execute(
            "SELECT column_name, data_type, comment FROM duckdb_columns() "
            "WHERE database_name = ? AND schema_name = 'main' AND table_name = ?",
            [catalog, table],
        ).fetchall()
        for column, data_type, existing in rows:
            if existing:
                continue
            said = found.columns.get((table, column)) or COMMON_COLUMNS.get(column)
            text = said or f"`{column}` ({data_type}) of `{table}`; declared in {where}."
            if data_type == "VARCHAR" and DATE_NAME.search(column):
                text += " (Text as its publisher wrote it: not every value is a date.)"
            conn.execute(f"COMMENT ON COLUMN {qualified}.{_quoted(column)} IS {_text(text)}")
            written += 1
    return written
