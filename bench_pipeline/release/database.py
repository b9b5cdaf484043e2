"""The DuckDB files handed to analysts: self-describing, and open in DuckDB 1.x and 2.x.

A release's `bench.duckdb` holds one table per published table, and the analyst copy holds the
warehouse. In both, every published table and column carries its title or description from
the publication schema (`COMMENT ON`, read back with `duckdb_tables()` and
`duckdb_columns()`), so a reader who opens only the file still learns what each value is.
A release's file also holds the views of `VIEWS`, each documented the same way. Both are
written in `STORAGE_VERSION`, which DuckDB 1.x opens too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from bench_pipeline.core.warehouse import STORAGE_VERSION, transaction
from bench_pipeline.core.writer import write_frame
from bench_pipeline.release.analyst_copy import comment_rest, type_copy
from bench_pipeline.release.published import PUBLISHED
from bench_pipeline.release.schema import PublishedTable

# Published tables whose warehouse table has another name (the rest share theirs; `sources`
# is made from the source definitions and has no warehouse table).
WAREHOUSE_NAMES = {
    "arena_elo": "arena_ratings",
    "epoch_scores": "evaluation_rows",
    "index_lineage": "evaluation_normalised",
    "pipeline_failures": "run_failure_log",
}


@dataclass(frozen=True)
class View:
    """A documented view over a release's tables.

    Attributes:
        name: The view's name.
        description: What a row is.
        sql: The query, over the release's table names.
        columns: Descriptions of the columns it derives or renames; every other column takes
            its description from the first of `tables` that publishes a column of its name.
        tables: The published tables it reads, in the order their descriptions are looked up.
    """

    name: str
    description: str
    sql: str
    tables: tuple[str, ...]
    columns: Mapping[str, str]


VIEWS = (
    View(
        "leaderboard",
        "The Known Good Index beside each model's market data and LMArena text rating: one row "
        "per model, ranked models first.",
        """
        SELECT k.rank, k.model_id, k.model_name, k.known_good_index, k.index_components,
               m.blended_price_usd_per_1m, m.input_usd_per_1m, m.output_usd_per_1m,
               m.output_speed_tps, m.latency_ttft_s, m.openness, m.licence_class,
               a.rating AS arena_text_rating, a.rank AS arena_text_rank,
               a.votes AS arena_text_votes
        FROM known_good_index k
        LEFT JOIN market m USING (model_id)
        LEFT JOIN (
            SELECT model_id, rating, rank, votes FROM arena_elo WHERE leaderboard = 'text'
            QUALIFY row_number() OVER (PARTITION BY model_id ORDER BY rating DESC, model_key) = 1
        ) a USING (model_id)
        ORDER BY k.rank NULLS LAST, k.model_id
        """,
        ("known_good_index", "market", "arena_elo"),
        {
            "arena_text_rating": "The model's best LMArena rating on the text leaderboard "
            "(its best-rated listing there).",
            "arena_text_rank": "LMArena's own rank of that listing on the text leaderboard.",
            "arena_text_votes": "Votes behind that rating.",
        },
    ),
    View(
        "pm_leaderboard",
        "The PM suite leaderboard beside the Known Good Index and market data of the model "
        "each setup runs.",
        """
        SELECT p.rank, p.setup, p.setup_id, p.overall, p.margin95, p.status, p.runs,
               p.simulated, p.model_id, k.model_name, k.known_good_index,
               k.rank AS known_good_rank, m.blended_price_usd_per_1m
        FROM pm_setups p
        LEFT JOIN known_good_index k USING (model_id)
        LEFT JOIN market m USING (model_id)
        ORDER BY p.rank NULLS LAST, p.overall DESC NULLS LAST, p.setup_id
        """,
        ("pm_setups", "known_good_index", "market"),
        {"known_good_rank": "The model's rank by the Known Good Index."},
    ),
    View(
        "cheapest_hosts",
        "Each model's cheapest host by blended price, beside the model's own rate.",
        """
        SELECT h.model_id, m.model_name, h.provider_name, h.tag,
               h.blended_price_usd_per_1m AS host_blended_price_usd_per_1m,
               m.blended_price_usd_per_1m AS own_blended_price_usd_per_1m,
               h.output_speed_tps, h.latency_ttft_s, h.uptime_last_30m
        FROM provider_prices h
        LEFT JOIN market m USING (model_id)
        WHERE h.blended_price_usd_per_1m IS NOT NULL
        QUALIFY row_number() OVER (
            PARTITION BY h.model_id ORDER BY h.blended_price_usd_per_1m, h.provider_name, h.tag
        ) = 1
        ORDER BY h.model_id
        """,
        ("provider_prices", "market"),
        {
            "host_blended_price_usd_per_1m": "The cheapest host's (3 x input + output) / 4, "
            "USD per million tokens.",
            "own_blended_price_usd_per_1m": "The model's own (3 x input + output) / 4 "
            "(OpenRouter, else the lab's), USD per million tokens.",
        },
    ),
)


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def quoted_name(value: str) -> str:
    """A SQL identifier, quoted (any double quote in it doubled)."""
    return '"' + value.replace('"', '""') + '"'


def table_comment(table: PublishedTable) -> str:
    """What a table's comment says: its title, and where a reader finds the rest."""
    return f"{table.title}. Published table `{table.name}`; columns in schema.json."


def comment_statements(
    catalog: str,
    table: PublishedTable,
    target: str | None = None,
    present: set[str] | None = None,
) -> Iterator[str]:
    """The `COMMENT ON` statements describing one published table and its columns.

    Args:
        catalog: The attached database holding it.
        table: The published table's declaration.
        target: Its table's name there (default: the published name).
        present: The columns it has there (default: every published column).
    """
    qualified = f"{quoted_name(catalog)}.{quoted_name(target or table.name)}"
    yield f"COMMENT ON TABLE {qualified} IS {_text(table_comment(table))}"
    for column in table.columns:
        if present is None or column.name in present:
            text = column.description + (f" Shown as “{column.title}”." if column.title else "")
            yield f"COMMENT ON COLUMN {qualified}.{quoted_name(column.name)} IS {_text(text)}"


def view_descriptions(
    view: View, columns: Sequence[str], tables: Sequence[PublishedTable] = PUBLISHED
) -> dict[str, str]:
    """Each of the view's output `columns` and its description (its own, or its table's).

    Raises:
        ValueError: A column has no description anywhere.
    """
    by_name = {t.name: t for t in tables}
    described = {}
    for column in columns:
        text = view.columns.get(column) or next(
            (c.description for name in view.tables for c in by_name[name].columns
             if c.name == column),
            None,
        )  # fmt: skip
        if text is None:
            raise ValueError(f"view {view.name}: column {column} has no description")
        described[column] = text
    return described


def create_views(conn: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    """Create and document each view of `VIEWS` whose tables are all in `catalog`.

    Returns:
        The views created.
    """
    present = {
        name
        for (name,) in conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ?", [catalog]
        ).fetchall()
    }
    created = []
    for view in VIEWS:
        if not set(view.tables) <= present:
            continue
        qualified = f"{quoted_name(catalog)}.main.{quoted_name(view.name)}"
        conn.execute(f"USE {quoted_name(catalog)}")  # the view's table names resolve in the release
        conn.execute(f"CREATE VIEW {qualified} AS {view.sql}")
        conn.execute(f"COMMENT ON VIEW {qualified} IS {_text(view.description)}")
        output = [
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = ? "
                "AND table_name = ? ORDER BY column_index",
                [catalog, view.name],
            ).fetchall()
        ]
        for column, text in view_descriptions(view, output).items():
            conn.execute(f"COMMENT ON COLUMN {qualified}.{quoted_name(column)} IS {_text(text)}")
        created.append(view.name)
    return created


def write_release_database(
    path: Path, tables: Sequence[PublishedTable], frames: Mapping[str, pl.DataFrame]
) -> None:
    """A release's `bench.duckdb`: every published table, commented, and the views.

    Args:
        path: The new file.
        tables: The published tables, in release order.
        frames: Each table's published rows, by name.
    """
    conn = duckdb.connect()
    try:
        conn.execute(f"ATTACH {_text(str(path))} AS release (STORAGE_VERSION '{STORAGE_VERSION}')")
        with transaction(conn):  # one commit, not one per table, comment and view
            for table in tables:
                write_frame(
                    conn, f"release.{quoted_name(table.name)}", frames[table.name], mode="create"
                )
                for statement in comment_statements("release", table):
                    conn.execute(statement)
            create_views(conn, "release")
        conn.execute("USE memory")
        conn.execute("CHECKPOINT release")
        conn.execute("DETACH release")
    finally:
        conn.close()


def describe_analyst_copy(conn: duckdb.DuckDBPyConnection, catalog: str) -> int:
    """Type the analyst copy's money and dates, comment every published table and its
    published columns from the publication schema, then every other table and column
    (`release.analyst_copy`).

    A published table is found under its own name or its `WAREHOUSE_NAMES` entry; only the
    columns the warehouse table has are described (the release adds rank columns).

    Args:
        conn: A connection with the copy attached.
        catalog: The copy's catalog name.

    Returns:
        The number of tables described.
    """
    type_copy(conn, catalog)
    rows = conn.execute(
        "SELECT table_name, list(column_name) FROM duckdb_columns() "
        "WHERE database_name = ? AND schema_name = 'main' GROUP BY table_name",
        [catalog],
    ).fetchall()
    columns = {name: set(names) for name, names in rows}
    described = 0
    for table in PUBLISHED:
        target = WAREHOUSE_NAMES.get(table.name, table.name)
        if target not in columns:
            continue
        for statement in comment_statements(catalog, table, target, columns[target]):
            conn.execute(statement)
        described += 1
    comment_rest(conn, catalog)
    return described
