"""What every published board, market table, Arena table and the site must hold before (or,
for the site, as) it is published: each a plain function returning its problems, one line per
offending row naming the table, the row and the field (empty: it holds).

- ranks follow scores by the project's one rank rule (`scores.ranking`), or, where a board
  publishes a rank range, the score's competition rank lies inside that range;
- intervals contain their estimates;
- counts agree with the runs they count;
- values lie in their ranges (prices, speeds, ratings, p-values, shares);
- every link and download of the site resolves to a file of the site.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import duckdb

from bench_pipeline.scores.pm import SETUP_RANK
from bench_pipeline.scores.ranking import RankRule, competition_ranks
from bench_pipeline.scores.usecase import GROUP_RANK

Row = Mapping[str, Any]
SHOWN = 20
"""Problems listed per check at most (the count says how many in all)."""


def _name(row: Row, key: Sequence[str]) -> str:
    return ", ".join(f"{k}={row.get(k)!r}" for k in key)


def rank_problems(table: str, rows: Sequence[Row], rule: RankRule, key: Sequence[str]) -> list[str]:
    """Rows whose published rank is not the one `rule` gives their score."""
    expected = rule.ranks(rows)
    return [
        f"{table} ({_name(row, key)}): {rule.column} {row.get(rule.column)} but its {rule.by} "
        f"{row.get(rule.by)} ranks {want}"
        for row, want in zip(rows, expected, strict=True)
        if row.get(rule.column) != want
    ]


def rank_range_problems(
    table: str, rows: Sequence[Row], by: str, key: Sequence[str], within: Sequence[str] = ()
) -> list[str]:
    """Rows whose rank range (`rank_best`..`rank_worst`) is reversed or leaves out the
    competition rank of their `by` among the rows of their `within` group."""
    groups: dict[tuple, dict[int, Any]] = {}
    for index, row in enumerate(rows):
        if row.get(by) is not None and row.get("rank_best") is not None:  # ranked rows
            groups.setdefault(tuple(row.get(c) for c in within), {})[index] = row[by]
    problems = []
    for values in groups.values():
        for index, rank in competition_ranks(values).items():
            row = rows[index]
            best, worst = row.get("rank_best"), row.get("rank_worst")
            if best is None or worst is None:
                continue
            if not best <= rank <= worst:
                problems.append(
                    f"{table} ({_name(row, key)}): {by} {row[by]} ranks {rank}, outside its "
                    f"rank range {best}..{worst}"
                )
    return problems


def interval_problems(
    table: str, rows: Iterable[Row], estimate: str, low: str, high: str, key: Sequence[str]
) -> list[str]:
    """Rows whose interval [`low`, `high`] does not contain `estimate` (rows missing any of
    the three are not checked)."""
    return [
        f"{table} ({_name(row, key)}): {estimate} {row[estimate]} outside its interval "
        f"{low}..{high} = {row[low]}..{row[high]}"
        for row in rows
        if None not in (row.get(estimate), row.get(low), row.get(high))
        and not row[low] <= row[estimate] <= row[high]
    ]


def range_problems(
    table: str, rows: Iterable[Row], column: str, low: float, high: float, key: Sequence[str]
) -> list[str]:
    """Rows whose `column` is outside [`low`, `high`] (a missing value is not checked)."""
    return [
        f"{table} ({_name(row, key)}): {column} {row[column]} outside {low}..{high}"
        for row in rows
        if row.get(column) is not None and not low <= row[column] <= high
    ]


def count_problems(
    table: str, rows: Iterable[Row], column: str, counted: Callable[[Row], int], what: str,
    key: Sequence[str],
) -> list[str]:  # fmt: skip
    """Rows whose `column` differs from `counted(row)` (what it should count: `what`)."""
    problems = []
    for row in rows:
        want = counted(row)
        if row.get(column) != want:
            problems.append(
                f"{table} ({_name(row, key)}): {column} {row.get(column)} but {want} {what}"
            )
    return problems


def _rows(conn: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cursor = conn.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def _counts(conn: duckdb.DuckDBPyConnection, sql: str) -> dict[tuple, int]:
    return {tuple(found[:-1]): found[-1] for found in conn.execute(sql).fetchall()}


# ------------------------------------------------------------------------ per published asset


def pm_suite_problems(conn: duckdb.DuckDBPyConnection) -> list[str]:
    key = ("setup_id",)
    rows = _rows(conn, "SELECT * FROM pm_setups ORDER BY setup_id")
    runs = _counts(conn, "SELECT setup_id, count(*) FROM pm_runs GROUP BY setup_id")
    return [
        *rank_problems("pm_setups", rows, SETUP_RANK, key),
        *range_problems("pm_setups", rows, "overall", 0, 100, key),
        *range_problems("pm_setups", rows, "margin95", 0, 100, key),
        *count_problems("pm_setups", rows, "runs", lambda r: runs.get((r["setup_id"],), 0),
                        "runs in pm_runs", key),
    ]  # fmt: skip


def usecase_problems(conn: duckdb.DuckDBPyConnection) -> list[str]:
    table, key = "usecase_groups", ("use_case", "group")
    rows = _rows(conn, 'SELECT * FROM usecase_groups ORDER BY use_case, "group"')
    runs = _counts(conn, 'SELECT use_case, "group", count(*) FROM usecase_runs GROUP BY ALL')
    return [
        *rank_problems(table, rows, GROUP_RANK, key),
        *interval_problems(table, rows, "weighted_score", "ci_low", "ci_high", key),
        *count_problems(table, rows, "runs", lambda r: runs.get((r["use_case"], r["group"]), 0),
                        "runs in usecase_runs", key),
        *count_problems(table, rows, "runs", lambda r: r["passes"] + r["partials"] + r["fails"],
                        "passes + partials + fails", key),
    ]  # fmt: skip


def navigator_problems(conn: duckdb.DuckDBPyConnection) -> list[str]:
    table, key = "navigator_models", ("model",)
    rows = _rows(conn, "SELECT * FROM navigator_models ORDER BY model")
    return [
        *rank_range_problems(table, rows, "index", key, within=("simulated",)),
        *range_problems(table, rows, "index", 0, 100, key),
    ]


def item_board_problems(conn: duckdb.DuckDBPyConnection) -> list[str]:
    table, key = "item_boards", ("board", "entry_key")
    rows = _rows(conn, "SELECT * FROM item_boards ORDER BY board, entry_key")
    # `resolved` is a count on pass/fail boards only (continuous scores have none)
    with_items = [r for r in rows if r.get("items") and r.get("resolved") is not None]
    return [
        *rank_range_problems(table, rows, "score", key, within=("board",)),
        *interval_problems(table, rows, "score", "ci_low", "ci_high", key),
        *(f"{table} ({_name(r, key)}): resolved {r['resolved']} of only {r['items']} items"
          for r in with_items if r["resolved"] > r["items"]),
        *range_problems(table, rows, "score", 0, 100, key),
    ]  # fmt: skip


def pm_check_problems(conn: duckdb.DuckDBPyConnection) -> list[str]:
    contamination = _rows(conn, "SELECT * FROM pm_contamination ORDER BY setup_id")
    admission = _rows(conn, "SELECT * FROM pm_task_admission ORDER BY task")
    return [
        *range_problems("pm_contamination", contamination, "p_value", 0, 1, ("setup_id",)),
        *range_problems("pm_task_admission", admission, "p_value", 0, 1, ("task",)),
        *range_problems("pm_task_admission", admission, "share_consistent", 0, 1, ("task",)),
    ]


MAX_PRICE_USD_PER_1M = 10_000
"""Far above any listed rate (the dearest listed model costs a few hundred dollars)."""


def market_problems(conn: duckdb.DuckDBPyConnection) -> list[str]:
    table, key = "market", ("model_id",)
    rows = _rows(conn, "SELECT * FROM market ORDER BY model_id")
    prices = ("input_usd_per_1m", "output_usd_per_1m", "blended_price_usd_per_1m")
    return [
        *(p for c in prices for p in range_problems(table, rows, c, 0, MAX_PRICE_USD_PER_1M, key)),
        *range_problems(table, rows, "output_speed_tps", 0, 100_000, key),
        *range_problems(table, rows, "latency_ttft_s", 0, 3_600, key),
        *range_problems(table, rows, "openness", 0, 100, key),
        *range_problems(table, rows, "providers_tracked", 0, 10_000, key),
    ]


def arena_problems(conn: duckdb.DuckDBPyConnection) -> list[str]:
    table, key = "arena_ratings", ("leaderboard", "category", "model_key")
    rows = _rows(conn, "SELECT * FROM arena_ratings ORDER BY leaderboard, category, model_key")
    ranked = [
        r for r in rows if None not in (r.get("rank"), r.get("rank_best"), r.get("rank_worst"))
    ]
    return [
        *interval_problems(table, rows, "rating", "rating_low", "rating_high", key),
        *interval_problems(table, ranked, "rank", "rank_best", "rank_worst", key),
        *range_problems(table, rows, "rating", 0, 5_000, key),  # as the live table admits
        *range_problems(table, rows, "votes", 0, 1e12, key),
    ]


# ------------------------------------------------------------------------------ the site


LINK = re.compile(r"""\b(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
"""A link or download in a page (the site's templates quote every attribute)."""


def site_link_problems(site: Path) -> list[str]:
    """Every relative link or download (`href`, `src`) of every page of `site` that names no
    file inside it: "page: link (why)". Links to other sites and in-page anchors are not
    followed."""
    root = site.resolve()
    problems = []
    kinds: dict[str, str] = {}  # path → "file", "dir" or "" (nothing), looked up once each

    def kind(path: str) -> str:
        if path not in kinds:
            kinds[path] = "file" if os.path.isfile(path) else "dir" if os.path.isdir(path) else ""
        return kinds[path]

    for page in sorted(root.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        where = page.relative_to(root).as_posix()
        for found in LINK.finditer(text):
            link = html.unescape(found.group(1) if found.group(1) is not None else found.group(2))
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue  # another site, mail, data, or an anchor of this page
            target = os.path.normpath(os.path.join(page.parent, unquote(parts.path)))
            if kind(target) == "dir":
                target = os.path.join(target, "index.html")
            if os.path.commonpath([root, target]) != str(root):
                problems.append(f"{where}: {link} (outside the site)")
            elif kind(target) != "file":
                problems.append(f"{where}: {link} (no such file)")
    return problems
