"""A synthetic dataset release in the published layout, for tests and the site benchmark.

`write_synthetic_release(root, models=12)` writes `root/<id>/` (manifest, schema, diff, every
table as CSV, JSON and Parquet, rank columns computed by the published rank rules), an older
release it points back to, and `root/latest`. The data is made up and deterministic (a fixed
seed). Model 3 is named `<script>alert(1)</script>`; some models miss values (a missing value
is `null`), some are not eligible for the Known Good Index, one price is flagged, and some
Arena ratings are preliminary.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from bench_pipeline.release.published import PUBLISHED_BY_NAME, schema_document
from bench_pipeline.release.schema import SCHEMA
from bench_pipeline.scores.usecase import UseCaseRun

COMPONENTS = ("gpqa_diamond", "math_aime", "swe_bench_verified", "livebench", "terminal_bench")
CAPABILITIES = ("coding_index", "agentic_index", "mathematics_index", "science_index")
COLUMNS = {
    name: PUBLISHED_BY_NAME[name].column_names
    for name in ("known_good_index", "capability_indices", "market", "provider_prices",
                 "arena_elo", "models", "source_runs", "index_lineage", "price_history",
                 "sources")
}  # fmt: skip
HOSTILE_NAME = "<script>alert(1)</script>"
RELEASE_ID = "2025-06-02T060000Z"
PREVIOUS_ID = "2025-06-01T060000Z"


SOURCES = (
    ("openrouter_models", "OpenRouter model listing", "OpenRouter", "https://openrouter.ai/models",
     "OpenRouter Terms of Service", "Model list and prices from the OpenRouter API."),
    ("openrouter_endpoints", "OpenRouter endpoints", "OpenRouter", "https://openrouter.ai/docs",
     "OpenRouter Terms of Service", "Per-host prices and telemetry from the OpenRouter API."),
    ("models_dev", "models.dev catalogue", "models.dev", "https://models.dev", "MIT",
     "Model metadata from models.dev (MIT licence)."),
    ("arena", "LMArena leaderboards", "LMArena", "https://lmarena.ai/leaderboard",
     "No open licence", "Arena ratings from LMArena (lmarena.ai)."),
    ("epoch", "Epoch AI Benchmarking Hub", "Epoch AI", "https://epoch.ai/benchmarks",
     "CC BY 4.0", "Epoch AI, 'AI Benchmarking Hub' (CC BY 4.0)."),
)  # fmt: skip


DATA_DATES = {  # the release is made 2025-06-02 06:00 UTC; each source may be 48 h old
    "openrouter_models": {"data_as_of": "2025-06-01T20:00:00",
                          "data_as_of_basis": "newest model `created` among 9 stated: m"},
    "openrouter_endpoints": {"data_as_of": "2025-06-01T08:00:00",
                             "data_as_of_basis": "newest model `created` among 2 stated: m"},
    "models_dev": {"data_as_of": "2025-05-20T00:00:00",
                   "data_as_of_basis": "newest `last_updated` among 5 stated: p/m"},
    "arena": {"data_as_of": None,
              "data_as_of_basis": "no publication date stated in the payload"},
    "epoch": {"data_as_of": "2025-01-15T10:30:00",
              "data_as_of_basis": "newest run date among 40 stated: Started at of m"},
}  # fmt: skip
"""Fresh (openrouter_models: 10 h old; openrouter_endpoints: 22 h), STALE (models.dev, Epoch),
UNDATED (LMArena)."""


def _run_id(source: str, number: int) -> str:
    return f"{source}-{hashlib.sha256(source.encode()).hexdigest()[:12]}-{number}"


def _money(rng: random.Random) -> str:
    return str(rng.choice((0.1, 0.25, 0.5, 1, 2, 2.5, 3, 5, 10, 15)))


def _blended(input_usd: str | None, output_usd: str | None) -> str | None:
    if input_usd is None or output_usd is None:
        return None
    return format((3 * float(input_usd) + float(output_usd)) / 4, "g")


def synthetic_tables(models: int, seed: int = 7) -> dict[str, list[dict[str, Any]]]:
    """Every release table for `models` made-up models (at least 6)."""
    rng = random.Random(seed)
    runs = {name: _run_id(name, 2) for name, *_ in SOURCES}
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in COLUMNS}
    tables["sources"] = [
        dict(zip(COLUMNS["sources"][:6], row, strict=True))
        | {"cadence_cron": "0 4 * * *", "freshness_hours": 48}
        | {"data_run_id": _run_id(row[0], 1 if row[0] == "models_dev" else 2)}
        | DATA_DATES[row[0]]
        for row in SOURCES
    ]
    for number, (name, *_) in enumerate(SOURCES):
        rejected = name == "models_dev"
        tables["source_runs"].append(
            {
                "source": name,
                "run_id": runs[name],
                "status": "rejected" if rejected else "accepted",
                "started_at": f"2025-06-02T05:{number:02d}:00",
                "finished_at": f"2025-06-02T05:{number:02d}:30",
                "rows_valid": 0 if rejected else 100 + number,
                "rows_quarantined": number,
                "reason": "fewer rows than 0.5 × the last accepted run" if rejected else None,
                "content_sha256": hashlib.sha256(name.encode()).hexdigest(),
                **(
                    DATA_DATES[name]
                    if not rejected
                    else {"data_as_of": None, "data_as_of_basis": None}
                ),
            }
        )
    for i in range(models):
        model_id = f"org{i % 7}/model-{i}"
        name = HOSTILE_NAME if i == 3 else f"Model {i}"
        tables["models"].append(
            {"model_id": model_id, "name": name, "organization": f"Org {i % 7}",
             "origin_source": "openrouter_models"}
        )  # fmt: skip
        held = {c: round(rng.random(), 4) for c in COMPONENTS if rng.random() < 0.8}
        held["gpqa_diamond"] = round(rng.random(), 4)
        if i % 5 == 4:
            held.pop("math_aime", None)  # no mathematics evidence: not eligible
        else:
            held["math_aime"] = round(rng.random(), 4)
        eligible = i % 5 != 4
        tables["known_good_index"].append(
            {"model_id": model_id, "model_name": name,
             "known_good_index": round(100 * sum(held.values()) / len(held), 2)
             if eligible else None,
             "index_components": len(held), **{c: held.get(c) for c in COMPONENTS}, "hle": None}
        )  # fmt: skip
        for evaluation, value in held.items():
            tables["index_lineage"].append(
                {"model_id": model_id, "evaluation_id": evaluation,
                 "score": round(100 * value, 1), "normalised": value,
                 "source_run_id": runs["epoch"], "publisher": "Epoch AI"}
            )  # fmt: skip
        tables["capability_indices"].append(
            {"model_id": model_id, "model_name": name,
             **{c: round(100 * rng.random(), 2) if rng.random() < 0.7 else None
                for c in CAPABILITIES}, "reasoning_index": None}
        )  # fmt: skip
        priced = i % 6 != 5
        input_usd = _money(rng) if priced else None
        output_usd = str(float(input_usd) * 4) if input_usd else None
        hosts = [] if i % 4 == 3 else ["Alpha", "Beta", "Gamma"][: 1 + i % 3]
        tables["market"].append(
            {"model_id": model_id, "model_name": name, "input_usd_per_1m": input_usd,
             "output_usd_per_1m": output_usd,
             "blended_price_usd_per_1m": _blended(input_usd, output_usd),
             "output_speed_tps": round(rng.uniform(20, 200), 1) if hosts and i % 2 else None,
             "latency_ttft_s": round(rng.uniform(0.2, 3), 2) if hosts and i % 2 else None,
             "providers_tracked": len(hosts), "openness": rng.choice((5, 40, 60, 90, 100, None)),
             "licence_class": rng.choice(("permissive", "proprietary", None)),
             "price_flag": "models.dev lists input 9 / output 9 USD per 1M" if i == 2 else None}
        )  # fmt: skip
        for host in hosts:
            host_in, host_out = _money(rng), _money(rng)
            tables["provider_prices"].append(
                {"model_id": model_id, "provider_name": host, "tag": host.lower(),
                 "quantization": rng.choice(("fp8", "bf16", None)), "input_usd_per_1m": host_in,
                 "output_usd_per_1m": host_out, "uptime_last_30m": round(rng.uniform(90, 100), 2),
                 "latency_ttft_s": None if i % 2 == 0 else round(rng.uniform(0.2, 2), 2),
                 "output_speed_tps": None if i % 2 == 0 else round(rng.uniform(20, 150), 1),
                 "source_run_id": runs["openrouter_endpoints"],
                 "blended_price_usd_per_1m": _blended(host_in, host_out)}
            )  # fmt: skip
            tables["price_history"].append(
                {"observed_at": "2025-06-02T05:01:00",
                 "source_run_id": runs["openrouter_endpoints"], "model_id": model_id,
                 "host": host, "tag": host.lower(), "input_usd_per_1m": host_in,
                 "output_usd_per_1m": host_out}
            )  # fmt: skip
        if priced:
            for day in range(1 + i % 4):
                past = format(float(input_usd or 0) * (1 + 0.1 * (3 - day)), "g")
                tables["price_history"].append(
                    {"observed_at": f"2025-05-{28 + day:02d}T06:00:00",
                     "source_run_id": _run_id("openrouter_models", 1 + day), "model_id": model_id,
                     "host": None, "input_usd_per_1m": past, "output_usd_per_1m": output_usd}
                )  # fmt: skip
        if i % 3 != 2:
            for board in ("text", "vision") if i % 2 else ("text",):
                rating = rng.uniform(1100, 1450)
                tables["arena_elo"].append(
                    {"model_id": model_id, "model_name": name, "leaderboard": board,
                     "category": "full", "model_key": f"model-{i}", "rating": rating,
                     "rating_low": rating - 6, "rating_high": rating + 6,
                     "votes": None if i % 4 == 1 else rng.randint(500, 50_000),
                     "rank": None, "rank_best": None, "rank_worst": None,
                     "preliminary": i % 7 == 6, "published_on": "2025-05-30",
                     "source_run_id": runs["arena"]}
                )  # fmt: skip
    return tables


def _write_table(directory: Path, name: str, rows: list[dict[str, Any]]) -> dict[str, Path]:
    data = directory / "data"
    data.mkdir(parents=True, exist_ok=True)
    declared = PUBLISHED_BY_NAME.get(name)
    for rule in declared.ranks if declared else ():
        if rows and rule.column not in rows[0]:  # what the release adds
            for row, rank in zip(rows, rule.ranks(rows), strict=True):
                row[rule.column] = rank
    columns = list(declared.column_names) if declared else ["id"]
    frame = pl.DataFrame(rows, schema=None if rows else columns, infer_schema_length=None)
    paths = {kind: data / f"{name}.{kind}" for kind in ("csv", "json", "parquet")}
    frame.write_csv(paths["csv"], null_value="")
    paths["json"].write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n", "utf-8")
    frame.write_parquet(paths["parquet"])
    return paths


def write_release(
    root: Path,
    release_id: str,
    tables: dict[str, list[dict[str, Any]]],
    *,
    created_at: str,
    previous: str | None = None,
    diff: dict[str, Any] | None = None,
) -> Path:
    """One release folder in the published layout; `root/latest` names it."""
    directory = root / release_id
    entries, files = [], []
    for name, rows in tables.items():
        paths = _write_table(directory, name, rows)
        described = {}
        for kind, path in paths.items():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            relative = path.relative_to(directory).as_posix()
            described[kind] = {"path": relative, "sha256": digest}
            files.append({"path": relative, "sha256": digest, "bytes": path.stat().st_size,
                          "rows": len(rows)})  # fmt: skip
        title = name.replace("_", " ").capitalize()
        entries.append({"name": name, "title": title, "rows": len(rows), "files": described})
    runs = tables.get("source_runs", [])
    manifest = {
        "release_id": release_id,
        "created_at": created_at,
        "methodology_versions": {"known_good_index": "1.0", "market": "1.0"},
        "case_versions": [],
        "source_runs": [
            {
                k: r.get(k)
                for k in (
                    "source",
                    "run_id",
                    "content_sha256",
                    "finished_at",
                    "status",
                    "data_as_of",
                )
            }
            for r in runs
        ],
        "tables": entries,
        "files": files,
        "previous_release_id": previous,
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", "utf-8")
    (directory / SCHEMA).write_text(json.dumps(schema_document(), indent=1) + "\n", "utf-8")
    if diff is not None:
        (directory / "diff.json").write_text(json.dumps(diff, indent=1) + "\n", "utf-8")
    (root / "latest").write_text(release_id + "\n", "utf-8")
    return directory


def synthetic_boards() -> dict[str, list[dict[str, Any]]]:
    """A small UseCaseRank board, a PM leaderboard and a Navigator row: two groups of six
    runs where the published weights put the first (named like a script tag) ahead, and
    weighting speed alone puts the second ahead."""
    runs, groups = [], []
    boards = ((HOSTILE_NAME, 1.0, 0.2, 65.5), ("group-b", 0.5, 1.0, 57.5))
    for group, outcome, speed, score in boards:
        runs.extend(
            {
                "run_id": f"sub-{hashlib.sha256(f'{group}{number}'.encode()).hexdigest()[:16]}",
                "use_case": "uc-demo", "group": group, "model": group, "settings": "",
                "outcome": "success" if outcome == 1.0 else "partial", "score": score,
                "metric_outcome": outcome, "metric_cost_efficiency": 0.5, "metric_speed": speed,
                "metric_autonomy": 0.5, "metric_first_try": 0.5, "cost_usd": "0.1",
                "cost_per_success_usd": "0.1", "trust": 80.0, "weight": 1.0,
                "under_review": False, "verified": True, "rerun_of": None,
                "published_at": "2025-06-01T06:00:00", "flags": "", "cleared_flags": "",
                "warnings": "",
            }
            for number in range(6)
        )  # fmt: skip
        groups.append({
            "use_case": "uc-demo", "group": group, "model": group, "settings": "",
            "score": score, "weighted_score": score, "ci_low": score - 5, "ci_high": score + 5,
            "n_eff": 6.0, "runs": 6, "passes": 6 if outcome == 1.0 else 0,
            "partials": 0 if outcome == 1.0 else 6, "fails": 0, "pass_rate": outcome,
            "under_review_runs": 0, "bt_pairs": 0, "bt_win_probability": None,
            "blended": None, "rank": 1 if outcome == 1.0 else 2, "trend": None,
        })  # fmt: skip
    return {"usecase_runs": runs, "usecase_groups": groups}


def write_synthetic_release(root: Path, models: int = 12, seed: int = 7) -> Path:
    """An older release and the latest one (with its diff) under `root`; the latest's folder."""
    older = synthetic_tables(max(6, models - 1), seed + 1)
    write_release(root, PREVIOUS_ID, older, created_at="2025-06-01T06:00:00Z")
    tables = synthetic_tables(max(6, models), seed) | synthetic_boards()
    first = tables["known_good_index"][0]
    epoch_run = {"source": "epoch", "run_id": _run_id("epoch", 2), "status": "accepted"}
    diff = {
        "from": PREVIOUS_ID,
        "to": RELEASE_ID,
        "models_added": [tables["models"][-1]["model_id"]],
        "models_removed": ["retired/model-x"],
        "tables": {
            "known_good_index": {
                "rows_added": [{"model_id": tables["models"][-1]["model_id"]}],
                "rows_removed": [{"model_id": "retired/model-x"}],
                "changed": [
                    {"key": {"model_id": first["model_id"]}, "column": "known_good_index",
                     "old": 50.0, "new": first["known_good_index"], "lineage": {}},
                    {"key": {"model_id": "org3/model-3"}, "column": "model_name",
                     "old": "Model 3", "new": HOSTILE_NAME, "lineage": {}},
                ],
                "rank_moves": [{"key": {"model_id": first["model_id"]}, "old_rank": 3,
                                "new_rank": 1}],
            },
            "arena_elo": {
                "rows_added": [], "rows_removed": [], "rank_moves": [],
                "changed": [{"key": {"leaderboard": "text", "model_key": "model-1"},
                             "column": "votes", "old": None, "new": 1200,
                             "lineage": {"source_run_id": _run_id("arena", 2)}}],
            },
            "sources": {"added_table": True, "rows": len(tables["sources"])},
        },
        "caused_by": {"source_runs": [epoch_run], "case_versions": []},
    }  # fmt: skip
    return write_release(
        root, RELEASE_ID, tables, created_at="2025-06-02T06:00:00Z", previous=PREVIOUS_ID, diff=diff
    )


def copy_downloads(release_dir: Path, site_dir: Path) -> list[Path]:
    """What the release asset does after a release: its CSV and JSON files to `site/data/`."""
    target = site_dir / "data"
    target.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((release_dir / "manifest.json").read_text("utf-8"))
    copied = []
    for table in manifest["tables"]:
        for kind in ("csv", "json"):
            source = release_dir / table["files"][kind]["path"]
            copied.append(target / source.name)
            copied[-1].write_bytes(source.read_bytes())
    return copied


BOARD_DAY = datetime(2026, 6, 1, 12, tzinfo=UTC)


def _usecase_run(run_id: str, model: str, number_: int, **fields: object) -> UseCaseRun:
    run_at = BOARD_DAY - timedelta(days=number_ % 9)
    values: dict[str, object] = {
        "run_id": run_id, "use_case": "triage", "model": model,
        "outcome": ("success", "partial", "fail")[number_ % 3 if model != "beta" else 0],
        "first_try": number_ % 2 == 0, "retries": number_ % 2, "step_ins": number_ % 4,
        "turns": 6, "wall_time_s": 60.0 + 7 * number_, "cost_usd": Decimal(1 + number_ % 5),
        "evidence_log": "x" * 200, "run_at": run_at, "published_at": run_at,
    } | fields  # fmt: skip
    return UseCaseRun(**values)  # type: ignore[arg-type]


def blended_usecase_runs() -> list[UseCaseRun]:
    """beta: 6 runs; alpha: 22 runs, each a rerun of a beta run (22 pairs each); gamma: 6
    runs and no pairs (not blended)."""
    beta = [_usecase_run(f"beta-{i}", "beta", i) for i in range(6)]
    alpha = [_usecase_run(f"alpha-{i}", "alpha", i, rerun_of=f"beta-{i % 6}") for i in range(22)]
    gamma = [_usecase_run(f"gamma-{i}", "gamma", i + 1) for i in range(6)]
    return beta + alpha + gamma


def synthetic_item_boards(seed: int = 11, entries: int = 40) -> dict[str, list[dict[str, Any]]]:
    """`item_boards` and `item_board_pairs` rows from made-up per-item results, by the
    production board code: a board named like a script tag, two entries sharing a name, one
    entry publishing only a percentage, one item without a cost, and a second small board."""
    from bench_pipeline.scores.item_boards import BoardEntry, ItemResult, board_frames, item_board

    rng = random.Random(seed)
    items = [f"item-{k:02d}" for k in range(30)]

    def entry(key: str, name: str, skill: float) -> BoardEntry:
        results = {
            item: ItemResult(rng.random() < skill, None if item == "item-07" and key == "k3"
                             else Decimal(rng.choice(("0.01", "0.25", "1.5"))))
            for item in items
        }  # fmt: skip
        return BoardEntry(key=key, entry=name, model_id=None, published_percent=None,
                          items=results)  # fmt: skip

    big = [
        entry(f"k{n}", f"Entry <{n}>" if n % 7 else "Twin", rng.random()) for n in range(entries)
    ]
    big.append(BoardEntry(key="pct", entry="Percent only", published_percent=41.5))
    small = [entry(f"s{n}", f"Small {n}", 0.2 + 0.15 * n) for n in range(5)]
    frames = board_frames([item_board(HOSTILE_NAME, big), item_board("small", small)])
    return {name: frame.to_dicts() for name, frame in frames.items()}
