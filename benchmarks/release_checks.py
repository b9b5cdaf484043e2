"""Release rendering and the private-text check, each against the approach it replaced.

A synthetic release at the size of 50× today's sources (100,000 models, 200,000 listings,
100,000 priced rows with exact decimals and timestamps), written as a release writes it:
CSV, JSON and Parquet per table and a `bench.duckdb` holding the tables.

* rendering: `release.downloads.write_download` (decimals and timestamps converted a column at
  a time, rows handed to `json.dumps` at once) against the row loop it replaced (every value
  through a Python function, decimals through `map_elements`); both renderings must parse to
  the same records.
* ranks: the release's rank columns (`RankRule.rank_series`, polars' `min` rank over the
  boards) against `rank_rows` over the frame's rows as dicts, on the Known Good Index and
  six capability indices of every model; the ranks must be equal.
* privacy: `release.verify.private_text_findings` (one Aho-Corasick pass per column for every
  text at once) against the check it replaced (every string of every file against every
  text); the task bank's own private texts, one planted in a cell of each format, and the
  two must report the same findings.

Goals: rendering at least 3× faster than its baseline, rank columns 10×, the private-text
check 2× (it still reads every Parquet and DuckDB column and every file's raw text, and at
the bank's 8 private texts the old per-pair test is cheap beside that reading).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import string
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.core.money import plain
from bench_pipeline.release.database import quoted_name
from bench_pipeline.release.downloads import neutralise_formulas, write_download
from bench_pipeline.release.schema import RankRule
from bench_pipeline.release.verify import private_text_findings, private_texts

MODELS = 100_000
SEED = 20_261_201
REPEAT = 1
GOALS = {"rendering": 3.0, "ranks": 10.0, "privacy": 2.0}


def _words(rng: random.Random, count: int) -> str:
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9)))
                    for _ in range(count))  # fmt: skip


def synthetic_tables(models: int, secret: str, seed: int = SEED) -> dict[str, pl.DataFrame]:
    """`models`, `model_aliases` and `provider_prices`-shaped frames, `secret` in one cell."""
    rng = random.Random(seed)
    ids = [f"lab{i % 400}/model-{i}" for i in range(models)]
    names = [_words(rng, 3) for _ in range(models)]
    names[models // 2] = f"copied {secret} here"
    started = datetime(2026, 8, 14, 9, 30)
    return {
        "models": pl.DataFrame({
            "model_id": ids, "name": names,
            "organization": [f"Lab {i % 400}" for i in range(models)],
            "origin_source": [rng.choice(("openrouter_models", "models_dev", "epoch"))
                              for _ in range(models)],
        }),
        "model_aliases": pl.DataFrame({
            "model_id": ids * 2,
            "source": ["models_dev"] * models + ["arena"] * models,
            "source_key": [f"k{i}" for i in range(2 * models)],
            "name": names + [n.upper() for n in names],
            "host": [rng.choice(("", "together", "fireworks")) or None for _ in range(2 * models)],
            "method": [rng.choice(("provider_id", "normalised_name")) for _ in range(2 * models)],
        }),
        "provider_prices": pl.DataFrame({
            "model_id": ids,
            "input_usd_per_1m": pl.Series(
                [Decimal(rng.randint(0, 10**8)) / 10**6 for _ in range(models)],
                dtype=pl.Decimal(24, 12)),
            "observed_at": [started + timedelta(minutes=i) for i in range(models)],
            "published_on": [date(2026, 8, 1) + timedelta(days=i % 90) for i in range(models)],
            "uptime_last_30m": [rng.random() * 100 for _ in range(models)],
        }),
    }  # fmt: skip


def _index_frame(models: int, seed: int = SEED) -> pl.DataFrame:
    """An index score (0-100, two decimals, many ties, some missing) and six capability
    indices per model."""
    rng = random.Random(seed)
    columns = ["known_good_index", *(f"capability_{i}" for i in range(6))]
    return pl.DataFrame(
        {"model_id": [f"m{i}" for i in range(models)]}
        | {c: [None if rng.random() < 0.3 else round(rng.uniform(0, 100), 2)
               for _ in range(models)] for c in columns}
    )  # fmt: skip


# ------------------------------------------------------------------ the replaced approaches


def _old_json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return plain(value)
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _old_decimal_text(frame: pl.DataFrame) -> pl.DataFrame:
    decimals = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.Decimal)]
    return frame.with_columns(
        pl.col(name).map_elements(_old_json_value, return_dtype=pl.Utf8) for name in decimals
    )


def old_write_download(frame: pl.DataFrame, name: str, directory: Path) -> None:
    """The row-loop rendering the release used (with the offset added to timestamps)."""
    directory.mkdir(parents=True, exist_ok=True)
    text = neutralise_formulas(frame).pipe(_old_decimal_text).write_csv(null_value="")
    (directory / f"{name}.csv").write_text(text, encoding="utf-8")
    records = [
        {k: _old_json_value(v) for k, v in row.items()}
        for row in _old_decimal_text(frame).iter_rows(named=True)
    ]
    (directory / f"{name}.json").write_bytes(
        (json.dumps(records, ensure_ascii=False, indent=1) + "\n").encode()
    )


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _old_file_strings(path: Path) -> Iterator[tuple[str, str]]:
    if path.suffix == ".json":
        for text in _strings(json.loads(path.read_text(encoding="utf-8"))):
            yield "", text
    elif path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                yield from (("", cell) for cell in row)
    elif path.suffix == ".parquet":
        frame = pl.read_parquet(path)
        for column in frame.columns:
            if frame.schema[column] == pl.Utf8:
                yield from ((column, v) for v in frame[column].drop_nulls().to_list())
    elif path.name == "bench.duckdb":
        with duckdb.connect(str(path), read_only=True) as conn:
            columns = conn.execute(
                "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
                "WHERE NOT internal AND data_type = 'VARCHAR' ORDER BY ALL"
            ).fetchall()
            for schema, table, column in columns:
                name, source = quoted_name(column), f"{quoted_name(schema)}.{quoted_name(table)}"
                values = conn.execute(
                    f"SELECT {name} FROM {source} WHERE {name} IS NOT NULL"
                ).fetchall()
                yield from ((f"{table}.{column}", v[0]) for v in values)
    yield "bytes", path.read_bytes().decode("utf-8", errors="replace")


def old_private_text_findings(release_dir: Path, texts: Sequence[str]) -> list[dict[str, Any]]:
    """The check the release used: every string against every text."""
    wanted = [(i, t) for i, t in enumerate(texts) if t]
    findings = []
    for path in sorted(p for p in release_dir.rglob("*") if p.is_file()):
        hits: set[tuple[int, str]] = set()
        for where, text in _old_file_strings(path):
            hits.update((i, where) for i, t in wanted if t in text)
        findings += [
            {"file": path.relative_to(release_dir).as_posix(), "where": w or None,
             "text_number": i}
            for i, w in sorted(hits)
        ]  # fmt: skip
    return findings


# ------------------------------------------------------------------------------ measuring


def _best(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def _records(folder: Path, name: str) -> list[dict[str, Any]]:
    """A JSON download's records with timestamps parsed (the two write the same instants)."""
    rows = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    for row in rows:
        if row.get("observed_at"):
            row["observed_at"] = datetime.fromisoformat(row["observed_at"])
    return rows


def _write_release(folder: Path, frames: dict[str, pl.DataFrame]) -> None:
    data = folder / "data"
    for name, frame in frames.items():
        write_download(frame, name, data)
        frame.write_parquet(data / f"{name}.parquet")
    with duckdb.connect(str(folder / "bench.duckdb")) as conn:
        for name, frame in frames.items():
            conn.register("frame", frame.to_arrow())
            conn.execute(f'CREATE TABLE "{name}" AS SELECT * FROM frame')
            conn.unregister("frame")


def main(argv: Sequence[str] | None = None) -> int:
    """Run both comparisons; print each ratio and whether its goal is met."""
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks --only release", description=summary
    )
    parser.add_argument("--repeat", type=int, default=REPEAT, help="runs of each, best shown")
    parser.add_argument("--models", type=int, default=MODELS, help="models in the release")
    args = parser.parse_args(argv)
    texts = private_texts()
    if not texts:
        print("release checks: the task bank has no private texts to search for")
        return 1
    frames = synthetic_tables(args.models, texts[0])
    rows = sum(f.height for f in frames.values())
    print(f"release rendering and private-text check, {rows:,} rows in {len(frames)} tables, "
          f"{len(texts)} private texts (load average {os.getloadavg()[0]:.2f})")  # fmt: skip
    print(f"  {'step':<22}  {'replaced':>9}  {'now':>9}  {'ratio':>6}")
    met = True
    with tempfile.TemporaryDirectory(prefix="bench-release-") as tmp:
        root = Path(tmp)
        old, new = root / "old", root / "new"
        baseline, _ = _best(
            lambda: [old_write_download(f, n, old) for n, f in frames.items()], args.repeat
        )
        measured, _ = _best(
            lambda: [write_download(f, n, new) for n, f in frames.items()], args.repeat
        )
        for name in frames:
            if _records(old, name) != _records(new, name):
                raise RuntimeError(f"the two renderings of {name} differ")
        ratio = baseline / measured
        met = met and ratio >= GOALS["rendering"]
        print(
            f"  {'rendering (CSV, JSON)':<22}  {baseline:>8.2f}s  {measured:>8.2f}s  {ratio:>5.1f}×"
        )

        scores = _index_frame(args.models)
        rules = [RankRule(f"{c}_rank", c) for c in scores.columns if c != "model_id"]
        baseline, expected = _best(
            lambda: [rule.ranks(scores.to_dicts()) for rule in rules], args.repeat
        )
        measured, ranks = _best(lambda: [rule.rank_series(scores) for rule in rules], args.repeat)
        if [r.to_list() for r in ranks] != expected:
            raise RuntimeError("the two rankings differ")
        ratio = baseline / measured
        met = met and ratio >= GOALS["ranks"]
        print(f"  {'rank columns':<22}  {baseline:>8.2f}s  {measured:>8.2f}s  {ratio:>5.1f}×")

        release = root / "release"
        _write_release(release, frames)
        baseline, expected = _best(lambda: old_private_text_findings(release, texts), args.repeat)
        measured, found = _best(lambda: private_text_findings(release, texts), args.repeat)
        if found != expected or not found:
            raise RuntimeError(f"the two checks disagree: {found} against {expected}")
        ratio = baseline / measured
        met = met and ratio >= GOALS["privacy"]
        print(f"  {'private-text check':<22}  {baseline:>8.2f}s  {measured:>8.2f}s  {ratio:>5.1f}×")
        print(f"  findings: {len(found)}, identical in both")
    goals = ", ".join(f"{name} ≥ {goal:.0f}×" for name, goal in GOALS.items())
    print(f"  goals {goals}: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
