"""The shape of a published table, and `schema.json`, the machine-readable form of all of them.

A `PublishedTable` names its columns (name, type, description, a display title where the
column is an evaluation or a board), its key, its lineage columns and its rank rules. Every
reader of a release (the site, the diff, the UseCaseRank page's script) takes these from the
release's `schema.json` instead of declaring them again.

Types are those a reader sees in the JSON download: `string`, `integer`, `number` (a binary
float), `decimal` (an exact decimal, published as text), `boolean`, `date`, `timestamp`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.core.warehouse import fetch_frame
from bench_pipeline.scores.ranking import Eligible, RankRule

SCHEMA = "schema.json"
SCHEMA_VERSION = 1
TYPES = ("string", "integer", "number", "decimal", "boolean", "date", "timestamp")
# The frame types each published type may arrive as (exact decimals that the score modules
# keep as text arrive as strings; a column of nulls has no type of its own).
_DTYPES: dict[str, tuple[type[pl.DataType], ...]] = {
    "string": (pl.String,),
    "integer": (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32,
                pl.UInt64),
    "number": (pl.Float32, pl.Float64),
    "decimal": (pl.Decimal, pl.String),
    "boolean": (pl.Boolean,),
    "date": (pl.Date,),
    "timestamp": (pl.Datetime,),
}  # fmt: skip

MONEY = pl.Decimal(38, 20)
"""The type a decimal the score modules keep as text is published in (DuckDB's
`DECIMAL(38,20)`): 18 integer digits and 20 fractional, enough for every cost they state (the
item boards' run costs carry 20); a value needing more fractional digits is refused, never
rounded."""

__all__ = ["MONEY", "Column", "Eligible", "PublishedTable", "RankRule", "rules_from_document"]

Row = Mapping[str, Any]
Frames = Mapping[str, pl.DataFrame]
Together = Callable[[duckdb.DuckDBPyConnection], Frames]
"""Makes the frames of several published tables in one pass, by table name."""


@dataclass(frozen=True)
class Column:
    """One published column.

    Attributes:
        name: The column's name in every file of the release.
        type: One of `TYPES`.
        description: What the value is, in a reader's words.
        title: A display title, where a page shows the column under a name of its own.
    """

    name: str
    type: str
    description: str
    title: str | None = None

    def __post_init__(self) -> None:
        """Refuse an unknown type."""
        if self.type not in TYPES:
            raise ValueError(f"column {self.name}: type {self.type!r} is not one of {TYPES}")

    def document(self) -> dict[str, Any]:
        """The column as `schema.json` lists it."""
        return {"name": self.name, "type": self.type, "description": self.description} | (
            {"title": self.title} if self.title else {}
        )


@dataclass(frozen=True)
class PublishedTable:
    """One table of every release (see `published.py` for the list).

    Attributes:
        name: File and table name.
        title: What a page calls it.
        sql: The query over the warehouse (with a total ORDER BY, unless `sort` orders the
            rows), or None with `build`.
        key: The columns naming a row, for diffs.
        methodology: The `METHODOLOGY_VERSIONS` entry whose rules made it.
        columns: Every published column, in file order (rank columns the release adds
            included, where they will be).
        lineage: Columns saying where or when a value came from: published, shown beside a
            change, never compared and not part of the release id.
        ranks: The table's boards, each a rank column.
        parameters: Methodology figures a reader needs to recompute the board (e.g. the
            UseCaseRank weights), published in `schema.json`.
        build: Python that makes the frame, for a table not in the warehouse.
        together: Python that makes this table's frame and its siblings' in one pass (by
            name), for tables not in the warehouse that share their work (the receipts).
        sort: Columns the rows are sorted by once made (ascending, a missing value last, as
            DuckDB's ORDER BY; text by its bytes, as DuckDB's default collation), in place of
            the query's ORDER BY: polars sorts a large table on text columns for less than
            DuckDB (`item_board_pairs` at 50× the recorded data: 1.56M rows on three text
            columns: 1.3 s CPU fetched then sorted, against 1.9 s sorted by DuckDB).
    """

    name: str
    title: str
    sql: str | None
    key: tuple[str, ...]
    methodology: str
    columns: tuple[Column, ...]
    lineage: tuple[str, ...] = ()
    ranks: tuple[RankRule, ...] = ()
    parameters: Mapping[str, Any] = field(default_factory=dict)
    build: Callable[[duckdb.DuckDBPyConnection], pl.DataFrame] | None = None
    together: Together | None = None
    sort: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Refuse a declaration that contradicts itself."""
        if sum(way is not None for way in (self.sql, self.build, self.together)) != 1:
            raise ValueError(f"{self.name}: give exactly one of sql, build and together")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: a column is declared twice")
        named = [*self.key, *self.lineage, *self.sort]
        named += [n for r in self.ranks for n in (r.column, r.by, *r.within)]
        unknown = sorted(set(named) - set(names))
        if unknown:
            raise ValueError(f"{self.name}: key, lineage, sort or rank names undeclared {unknown}")

    @property
    def column_names(self) -> tuple[str, ...]:
        """The published columns, in file order."""
        return tuple(c.name for c in self.columns)

    @property
    def rank_columns(self) -> tuple[str, ...]:
        """The columns holding a rank."""
        return tuple(r.column for r in self.ranks)

    def _made(self, conn: duckdb.DuckDBPyConnection, made: dict[Together, Frames]) -> pl.DataFrame:
        if self.build is not None:
            return self.build(conn)
        if self.together is not None:
            if self.together not in made:
                made[self.together] = self.together(conn)
            return made[self.together][self.name]
        return fetch_frame(conn, self.sql or "")

    def frame(
        self, conn: duckdb.DuckDBPyConnection, made: dict[Together, Frames] | None = None
    ) -> pl.DataFrame:
        """The published rows: the query's (or `build`'s, or `together`'s), with the
        release's rank columns. `made` keeps what each `together` made, so tables built
        together in one pass are made once for all of them (pass the same dict to each).

        Raises:
            ValueError: When the columns are not the declared ones, or a rank the board's
                module computed disagrees with the rank rule.
        """
        frame = self._made(conn, {} if made is None else made)
        if self.sort:
            frame = frame.sort(self.sort, nulls_last=True, maintain_order=True)
        ranked = frame
        for rule in self.ranks:
            if rule.computed_by_release:
                frame = frame.with_columns(rule.rank_series(ranked))
            elif rule.column in frame.columns:  # checked by the function the board ranks with
                expected = pl.Series(rule.column, rule.ranks(ranked.to_dicts()), pl.Int64)
                self._check_rank(rule, frame[rule.column], expected)
        missing = [c for c in self.column_names if c not in frame.columns]
        extra = [c for c in frame.columns if c not in self.column_names]
        if missing or extra:
            raise ValueError(
                f"published table {self.name}: columns differ from its declaration in "
                f"release/published.py (missing {missing}, undeclared {extra})"
            )
        wrong = [
            f"{c.name} is {frame[c.name].dtype}, declared {c.type}"
            for c in self.columns
            if frame[c.name].dtype != pl.Null
            and not isinstance(frame[c.name].dtype, _DTYPES[c.type])
        ]
        if wrong:
            raise ValueError(f"published table {self.name}: {'; '.join(wrong)}")
        return self._typed(frame.select(self.column_names))

    def _typed(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The frame with every column in its published type: an exact decimal kept as text
        becomes `MONEY`, a timestamp without a zone becomes UTC (the warehouse keeps every
        timestamp in UTC), so the DuckDB file and the Parquet files are typed as declared.

        Raises:
            ValueError: When a decimal has more fractional digits than `MONEY` keeps.
        """
        casts = []
        for column in self.columns:
            dtype = frame[column.name].dtype
            if column.type == "decimal" and dtype == pl.String:
                digits = frame.select(
                    pl.col(column.name).str.split(".").list.get(1, null_on_oob=True)
                    .str.len_chars().max()
                ).item()  # fmt: skip
                if digits is not None and digits > (MONEY.scale or 0):
                    raise ValueError(
                        f"published table {self.name}: {column.name} has a value with "
                        f"{digits} decimal places, more than the {MONEY.scale} published"
                    )
                casts.append(pl.col(column.name).cast(MONEY))
            elif column.type == "timestamp" and isinstance(dtype, pl.Datetime):
                if dtype.time_zone is None:
                    casts.append(pl.col(column.name).dt.replace_time_zone("UTC"))
        return frame.with_columns(casts) if casts else frame

    def _check_rank(self, rule: RankRule, published: pl.Series, expected: pl.Series) -> None:
        differs = pl.DataFrame({"have": published.cast(pl.Int64), "want": expected}).select(
            pl.col("have").ne_missing(pl.col("want")).arg_true()
        )["have"]  # one vectorised comparison; only the first disagreement is reported
        if differs.len():
            index = int(differs[0])
            have, want = published[index], expected[index]
            raise ValueError(
                f"published table {self.name}, row {index + 1}: {rule.column} is {have} "
                f"but the rank rule ({rule.by}, competition ranking) gives {want}"
            )

    def document(self) -> dict[str, Any]:
        """The table as `schema.json` lists it."""
        return {
            "name": self.name,
            "title": self.title,
            "key": list(self.key),
            "lineage": list(self.lineage),
            "methodology": self.methodology,
            "ranks": [rule.document() for rule in self.ranks],
            "parameters": dict(self.parameters),
            "columns": [column.document() for column in self.columns],
        }


def rules_from_document(entry: Mapping[str, Any]) -> tuple[RankRule, ...]:
    """The rank rules a `schema.json` table entry states (the reader's side)."""
    rules = []
    for rule in entry.get("ranks") or []:
        condition = rule.get("eligible")
        eligible = (
            Eligible(condition["column"], condition["value"], condition["op"] == ">=")
            if condition
            else None
        )
        rules.append(RankRule(rule["column"], rule["by"], tuple(rule["within"]), eligible))
    return tuple(rules)
