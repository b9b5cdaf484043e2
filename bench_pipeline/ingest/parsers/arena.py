"""LMArena leaderboards.

Two published shapes: the arena catalogue's `leaderboard-<arena>.json` ({category: {model:
{rating, rating_q025, rating_q975}}}, no vote counts) and the public text table as CSV
(rank, rank spread, rounded score, ± interval, votes, organisation, licence). The catalogue's
`scatterplot-data.json` adds licence and price metadata per model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from bench_pipeline.ingest.parsers.dates import Stated, text_date
from bench_pipeline.ingest.payload import (
    PayloadError,
    RawFile,
    StagedColumn,
    StagedColumns,
    field_texts,
    load_json,
    obj,
    read_csv,
    staged_frame,
)
from bench_pipeline.ingest.tables import ARENA_MODELS, ARENA_RATINGS

LEADERBOARD_FILE = re.compile(r"^leaderboard-(?P<board>[a-z0-9-]+)\.json$")
DATED = re.compile(r"(\d{4})_(\d{2})_(\d{2})")
SPREAD = re.compile(r"^\s*(\d+)\s*\D+?\s*(\d+)\s*$")
INTERVAL = re.compile(r"^\s*±\s*(\d+(?:\.\d+)?)\s*(\(Preliminary\))?\s*$")
CSV_COLUMNS = ("Rank", "Rank Spread", "Model", "Score", "95% CI (±)", "Votes")


def _catalogue_columns(raw: RawFile, board: str) -> dict[str, StagedColumn]:
    """A leaderboard file's ratings, a column at a time (in document order)."""
    document = load_json(raw)
    if not isinstance(document, dict):
        raise PayloadError(f"{raw.name}: expected {{category: {{model: rating}}}}")
    categories: list[str] = []
    keys: list[str] = []
    entries: list[Any] = []
    for category, models in document.items():
        if not isinstance(models, dict):
            raise PayloadError(f"{raw.name}: category {category!r} is not an object")
        categories += [category] * len(models)
        keys += models.keys()
        entries += models.values()
    count = len(keys)
    read = field_texts(entries, ("rating", "rating_q025", "rating_q975"))
    return {
        "leaderboard": [board] * count,
        "category": categories,
        "model_key": keys,
        "rating": read["rating"],
        "rating_low": read["rating_q025"],
        "rating_high": read["rating_q975"],
        "source_file": [raw.name] * count,
    }


def _bounds(score: str | None, interval: str | None) -> tuple[Any, Any, Any]:
    """Score ± half-width → (low, high, preliminary); unreadable text passes through as is."""
    match = INTERVAL.match(interval or "")
    if not match or score is None:
        return interval, interval, None
    try:
        value, half = float(score), float(match.group(1))
    except ValueError:
        return score, score, None
    return value - half, value + half, match.group(2) is not None


def _public_table_rows(raw: RawFile) -> list[tuple[str, int, dict]]:
    dated = DATED.search(raw.name)
    published = "-".join(dated.groups()) if dated else None
    rows = []
    for number, record in enumerate(read_csv(raw, CSV_COLUMNS), start=1):
        spread = SPREAD.match(record.get("Rank Spread") or "")
        low, high, preliminary = _bounds(record.get("Score"), record.get("95% CI (±)"))
        votes = record.get("Votes")
        rows.append(
            (
                raw.name,
                number,
                {
                    "leaderboard": "text_public",
                    "category": "full",
                    "model_key": record.get("Model"),
                    "rating": record.get("Score"),
                    "rating_low": low,
                    "rating_high": high,
                    "votes": votes.replace(",", "") if votes else None,
                    "rank": record.get("Rank"),
                    "rank_best": spread.group(1) if spread else record.get("Rank Spread"),
                    "rank_worst": spread.group(2) if spread else record.get("Rank Spread"),
                    "preliminary": preliminary,
                    "organization": record.get("Organization"),
                    "licence": record.get("License"),
                    "published_on": published,
                    "source_file": raw.name,
                },
            )
        )
    return rows


def _model_rows(raw: RawFile) -> list[tuple[str, int, dict]]:
    document = load_json(raw)
    if not isinstance(document, list):
        raise PayloadError(f"{raw.name}: expected a list of models")
    return [
        (
            raw.name,
            number,
            {
                "model_key": entry.get("model_api_name"),
                "name": entry.get("name"),
                "organization": entry.get("organization"),
                "licence": entry.get("license"),
                "input_usd_per_m": entry.get("input_token_price"),
                "output_usd_per_m": entry.get("output_token_price"),
                "hidden": entry.get("hidden", False),
            },
        )
        for number, entry in enumerate((e if isinstance(e, dict) else {} for e in document), 1)
    ]


def parse(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    ratings, models = StagedColumns(ARENA_RATINGS.columns), []
    for raw in files:
        board = LEADERBOARD_FILE.match(raw.name)
        if board:
            columns = _catalogue_columns(raw, board.group("board").replace("-", "_"))
            ratings.add_columns(raw.name, columns, range(1, len(columns["model_key"]) + 1))
        elif raw.name.endswith(".csv"):
            ratings.add_rows(_public_table_rows(raw))
        elif raw.name == "scatterplot-data.json":
            models += _model_rows(raw)
    return {
        ARENA_RATINGS.name: ratings.frame(),
        ARENA_MODELS.name: staged_frame(list(ARENA_MODELS.columns), models),
    }


def _catalogue_rows(raw: RawFile, board: str) -> list[tuple[str, int, dict]]:
    document = load_json(raw)
    if not isinstance(document, dict):
        raise PayloadError(f"{raw.name}: expected {{category: {{model: rating}}}}")
    rows, number = [], 0
    for category, models in document.items():
        if not isinstance(models, dict):
            raise PayloadError(f"{raw.name}: category {category!r} is not an object")
        for model_key, entry in models.items():
            number += 1
            entry = obj(entry)
            rows.append(
                (
                    raw.name,
                    number,
                    {
                        "leaderboard": board,
                        "category": category,
                        "model_key": model_key,
                        "rating": entry.get("rating"),
                        "rating_low": entry.get("rating_q025"),
                        "rating_high": entry.get("rating_q975"),
                        "source_file": raw.name,
                    },
                )
            )
    return rows


def parse_by_record(files: Sequence[RawFile]) -> dict[str, pl.DataFrame]:
    """Record by record (the reference `parse` is tested against)."""
    ratings, models = [], []
    for raw in files:
        board = LEADERBOARD_FILE.match(raw.name)
        if board:
            ratings += _catalogue_rows(raw, board.group("board").replace("-", "_"))
        elif raw.name.endswith(".csv"):
            ratings += _public_table_rows(raw)
        elif raw.name == "scatterplot-data.json":
            models += _model_rows(raw)
    return {
        ARENA_RATINGS.name: staged_frame(list(ARENA_RATINGS.columns), ratings),
        ARENA_MODELS.name: staged_frame(list(ARENA_MODELS.columns), models),
    }


def data_dates(files: Sequence[RawFile]) -> list[Stated]:
    """LMArena's publication date: the date the public table's file is named with
    (`..._2026_01_16.csv`, the day LMArena published it), counted while a rating of that file
    is accepted. The catalogue's `leaderboard-*.json` and `scatterplot-data.json` state no
    date of their own, so a payload of them alone has none (the dated model keys in them say
    only that the data is no older than those models)."""
    found: list[Stated] = []
    for raw in files:
        dated = DATED.search(raw.name) if raw.name.endswith(".csv") else None
        if dated:
            stated = text_date("-".join(dated.groups()))
            found.append(Stated(stated, f"the name of {raw.name}", ARENA_RATINGS.name, raw.name))
    return found
