"""`bench scores`: a board's leaderboard as a table a person reads in a terminal.

One row per setup (per group for UseCaseRank, one table per use case): rank, setup name,
score and its interval, rounded to one decimal; rows without a rank (held, incomplete) come
last with their status. The run-level tables behind the board are printed only on request.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl

LEADERBOARD = {"pm": "pm_setups", "usecase": "usecase_groups", "navigator": "navigator_models"}
"""The table of each board that is its leaderboard; the others are run- or pair-level."""


def moment(text: str) -> datetime:
    """An `--as-of` value: `YYYY-MM-DD` or an ISO time (UTC unless it says otherwise).

    Raises:
        argparse.ArgumentTypeError: Not a date or time (argparse prints it as a usage error).
    """
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date: give YYYY-MM-DD or an ISO time such as 2026-11-20T12:00"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}"


def _interval(low: Any, high: Any) -> str:
    return "–" if low is None or high is None else f"[{low:.1f}, {high:.1f}]"


def _ordered(frame: pl.DataFrame, score: str) -> list[dict[str, Any]]:
    return frame.sort(["rank", score], descending=[False, True], nulls_last=True).to_dicts()


def pm_rows(frame: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """PM suite: overall score with its 95% margin as an interval."""
    rows = []
    for r in _ordered(frame, "overall"):
        margin = r["margin95"]
        low, high = (
            (None, None) if margin is None else (r["overall"] - margin, r["overall"] + margin)
        )
        rank = str(r["rank"]) if r["rank"] is not None else "–"
        rows.append([rank, r["setup"] or r["setup_id"], _number(r["overall"]),
                     _interval(low, high), str(r["runs"]), r["status"]])  # fmt: skip
    return ["rank", "setup", "score", "95% interval", "runs", "status"], rows


def navigator_rows(frame: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Navigator Index v2: the index, with the range of ranks the paired tests allow (`tied`:
    the tests cannot separate the model from a neighbour, so its best and worst rank differ)."""
    rows = []
    ordered = frame.sort(["rank_best", "index"], descending=[False, True], nulls_last=True)
    for r in ordered.to_dicts():
        best, worst = r["rank_best"], r["rank_worst"]
        rank = "–" if best is None else str(best) if best == worst else f"{best}–{worst}"
        cost = r["cost_per_success_usd"]
        tied = "–" if r["tied"] is None else "yes" if r["tied"] else "no"
        rows.append([rank, r["model"], _number(r["index"]), tied, str(r["tasks"]),
                     "–" if cost is None else f"${float(cost):.4f}"])  # fmt: skip
    return ["rank", "setup", "index", "tied", "tasks", "cost per success"], rows


def usecase_rows(frame: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """UseCaseRank, one use case: the board's score with the 90% interval of its weighted
    score."""
    rows = []
    for r in _ordered(frame, "score"):
        rank = str(r["rank"]) if r["rank"] is not None else "–"
        group = f"{r['model']} ({r['settings']})" if r["settings"] else r["model"]
        rows.append([rank, group, _number(r["score"]), _interval(r["ci_low"], r["ci_high"]),
                     str(r["runs"])])  # fmt: skip
    return ["rank", "setup", "score", "90% interval", "runs"], rows


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain aligned columns: text left, figures right (a figure column starts with a digit,
    a dash, a bracket or a dollar)."""
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    numeric = [
        bool(rows) and all(row[i][:1] in "0123456789–[$" for row in rows if row[i])
        for i in range(len(headers))
    ]

    def line(cells: Sequence[str]) -> str:
        shown = [
            c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric, strict=True)
        ]
        return "  ".join(shown).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def leaderboard(board: str, frames: dict[str, pl.DataFrame], as_of: datetime) -> str:
    """The board's leaderboard as text, with a heading naming the date and any simulation."""
    frame = frames[LEADERBOARD[board]]
    title = {"pm": "PM suite", "usecase": "UseCaseRank", "navigator": "Navigator Index v2"}
    heading = f"{title[board]} as of {as_of:%Y-%m-%d %H:%M} UTC"
    if "simulated" in frame.columns and frame.height and frame["simulated"].all():
        heading += " (simulated: made-up answers, not real models)"
    if not frame.height:
        return f"{heading}\n  nothing scored yet"
    if board == "pm":
        return f"{heading}\n{table(*pm_rows(frame))}"
    if board == "navigator":
        return f"{heading}\n{table(*navigator_rows(frame))}"
    parts = [heading]
    for (use_case,), group in frame.group_by(["use_case"], maintain_order=True):
        parts.append(f"\n{use_case}\n{table(*usecase_rows(group))}")
    return "\n".join(parts)
