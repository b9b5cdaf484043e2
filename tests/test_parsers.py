"""Each source parser on the recorded real snapshots, and on the broken payloads sources send."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl
import pytest

from bench_pipeline.core import settings
from bench_pipeline.ingest.catalog import evaluations, source_definitions
from bench_pipeline.ingest.parsers import arena, epoch, models_dev, openrouter
from bench_pipeline.ingest.payload import PayloadError, RawFile
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.ingest.tables import TABLES
from bench_pipeline.ingest.validation import validate_records
from bench_pipeline.resources.sources import RecordedSnapshotClient

pytestmark = pytest.mark.unit

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
FIXTURES = Path(__file__).parent / "fixtures"
OLD_LISTING = FIXTURES / "openrouter_models_2026-05.json"

HTML_ERROR_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>"
    b"<body><h1>502 Bad Gateway</h1><p>cloudflare</p></body></html>\n"
)


def _snapshot(source: str) -> list[RawFile]:
    client = RecordedSnapshotClient(snapshots_dir=str(SNAPSHOTS))
    return client.fetch(source_definitions()[source])


@pytest.fixture(scope="module")
def parsed() -> dict[str, dict[str, pl.DataFrame]]:
    """Every source's recorded snapshot through the parser the pipeline wires to it."""
    return {source: PARSERS[source](_snapshot(source)) for source in source_definitions()}


def _csv_records(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


# --- row counts of the real snapshots ---------------------------------------------------------


def test_openrouter_models_snapshot(parsed) -> None:
    frame = parsed["openrouter_models"]["openrouter_models"]
    listing = json.loads((SNAPSHOTS / "openrouter_models" / "models.json").read_bytes())
    assert frame.height == 414 == len(listing["data"])
    assert frame.get_column("model_id").to_list() == [m["id"] for m in listing["data"]]
    result = validate_records(TABLES["openrouter_models"], frame)
    assert result.valid.height == 414
    assert result.quarantined.is_empty()


def test_openrouter_endpoints_snapshot(parsed) -> None:
    frame = parsed["openrouter_endpoints"]["openrouter_endpoints"]
    assert frame.height == 4
    result = validate_records(TABLES["openrouter_endpoints"], frame)
    assert result.valid.height == 4
    assert result.valid.get_column("provider_name").null_count() == 0


def test_models_dev_snapshot(parsed) -> None:
    frame = parsed["models_dev"]["modelsdev_models"]
    document = json.loads((SNAPSHOTS / "models_dev" / "api.json").read_bytes())
    assert frame.height == 5258 == sum(len(p["models"]) for p in document.values())
    result = validate_records(TABLES["modelsdev_models"], frame)
    assert result.valid.height == 5258


def test_arena_snapshot(parsed) -> None:
    frames = parsed["arena"]
    folder = SNAPSHOTS / "arena"
    catalogue = sum(
        len(models)
        for path in folder.glob("leaderboard-*.json")
        for models in json.loads(path.read_bytes()).values()
    )
    public = sum(len(_csv_records(path)) for path in folder.glob("*.csv"))
    assert frames["arena_ratings"].height == 16121 == catalogue + public
    assert frames["arena_models"].height == 141
    ratings = validate_records(TABLES["arena_ratings"], frames["arena_ratings"])
    assert ratings.valid.height == 16121
    # The public CSV's "±5" interval and "1 ◄─► 4" rank spread are read as numbers.
    public_rows = ratings.valid.filter(pl.col("leaderboard") == "text_public")
    assert public_rows.height == public
    assert public_rows.get_column("rating_low").null_count() == 0
    assert public_rows.get_column("rank_worst").null_count() == 0
    assert public_rows.get_column("votes").null_count() == 0


def test_epoch_snapshot_stages_every_mapped_evaluation_row(parsed) -> None:
    folder = SNAPSHOTS / "epoch"
    per_spec = [_csv_records(folder / spec.file) for spec in evaluations()]
    expected = sum(len(records) for records in per_spec)
    unversioned = sum(1 for records in per_spec for r in records if not r["Model version"])
    assert expected == 870
    assert unversioned == 32

    frame = parsed["epoch"]["evaluation_rows"]
    assert frame.height == expected
    result = validate_records(TABLES["evaluation_rows"], frame)
    assert result.valid.height == 838
    assert result.rows_quarantined == 32
    assert set(result.quarantined.get_column("field")) == {"model_version"}
    assert set(result.quarantined.get_column("reason")) == {"missing a required value"}

    models = validate_records(TABLES["epoch_models"], parsed["epoch"]["epoch_models"])
    assert models.valid.height == len(_csv_records(folder / "epoch_capabilities_index.csv"))


def test_epoch_scores_are_scaled_to_percent(parsed) -> None:
    frame = parsed["epoch"]["evaluation_rows"]
    gpqa = _csv_records(SNAPSHOTS / "epoch" / "gpqa_diamond.csv")[0]
    row = frame.filter(
        (pl.col("evaluation_id") == "gpqa_diamond") & (pl.col("row_key") == gpqa["id"])
    ).row(0, named=True)
    assert float(row["score"]) == pytest.approx(float(gpqa["mean_score"]) * 100)


# --- the older OpenRouter listing and variable prices ------------------------------------------


def test_older_openrouter_listing_without_total_count_parses_and_validates() -> None:
    document = json.loads(OLD_LISTING.read_bytes())
    assert set(document) == {"data"}  # the 2026-05 shape: no total_count, no links
    frame = openrouter.parse_models([RawFile(OLD_LISTING.name, OLD_LISTING.read_bytes())])[
        "openrouter_models"
    ]
    assert frame.height == 364
    result = validate_records(TABLES["openrouter_models"], frame)
    assert result.valid.height == 364
    assert result.quarantined.is_empty()


def test_negative_price_means_variable_pricing_and_no_price() -> None:
    listing = json.loads((SNAPSHOTS / "openrouter_models" / "models.json").read_bytes())
    fixed, router = listing["data"][0], listing["data"][1]
    router["pricing"] = {"prompt": "-1", "completion": "-1"}
    raw = RawFile("models.json", json.dumps({"data": [fixed, router]}).encode())
    frame = openrouter.parse_models([raw])["openrouter_models"]
    valid = validate_records(TABLES["openrouter_models"], frame).valid

    by_id = {row["model_id"]: row for row in valid.iter_rows(named=True)}
    assert by_id[router["id"]]["variable_pricing"] is True
    assert by_id[router["id"]]["prompt_usd_per_m"] is None
    assert by_id[router["id"]]["completion_usd_per_m"] is None
    assert by_id[fixed["id"]]["variable_pricing"] is False
    assert by_id[fixed["id"]]["prompt_usd_per_m"] is not None


def test_openrouter_auto_router_in_older_listing_is_variable() -> None:
    frame = openrouter.parse_models([RawFile(OLD_LISTING.name, OLD_LISTING.read_bytes())])[
        "openrouter_models"
    ]
    valid = validate_records(TABLES["openrouter_models"], frame).valid
    auto = valid.filter(pl.col("model_id") == "openrouter/auto").row(0, named=True)
    assert auto["variable_pricing"] is True
    assert auto["prompt_usd_per_m"] is None


# --- unreadable payloads -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parse", "name"),
    [
        (openrouter.parse_models, "models.json"),
        (openrouter.parse_endpoints, "openai__gpt-4o.json"),
        (models_dev.parse, "api.json"),
        (arena.parse, "leaderboard-text.json"),
        (arena.parse, "scatterplot-data.json"),
    ],
)
def test_html_error_page_is_a_payload_error(parse, name: str) -> None:
    with pytest.raises(PayloadError, match="not valid JSON") as raised:
        parse([RawFile(name, HTML_ERROR_PAGE)])
    assert name in str(raised.value)
    assert "<!DOCTYPE html>" in str(raised.value)  # the preview shows what came instead


def _renamed_header(path: Path, column: str) -> bytes:
    text = path.read_text(encoding="utf-8-sig")
    header, rest = text.split("\n", 1)
    names = header.split(",")
    assert column in names
    renamed = ",".join(f"{n}_v2" if n == column else n for n in names)
    return (renamed + "\n" + rest).encode()


@pytest.mark.parametrize(
    ("file_name", "column"),
    [
        ("gpqa_diamond.csv", "mean_score"),
        ("gpqa_diamond.csv", "Model version"),
        ("hle_external.csv", "Accuracy"),
        ("epoch_capabilities_index.csv", "Display name"),
    ],
)
def test_epoch_csv_with_renamed_required_column_is_a_payload_error(
    file_name: str, column: str
) -> None:
    files = [
        RawFile(raw.name, _renamed_header(SNAPSHOTS / "epoch" / raw.name, column))
        if raw.name == file_name
        else raw
        for raw in _snapshot("epoch")
    ]
    with pytest.raises(PayloadError) as raised:
        epoch.parse(files, evaluations())
    assert file_name in str(raised.value)
    assert f"column(s) {column} missing" in str(raised.value)


def test_arena_csv_with_renamed_votes_column_is_a_payload_error() -> None:
    path = SNAPSHOTS / "arena" / "chatbot_arena_elo_scores_2026_01_16.csv"
    raw = RawFile(path.name, _renamed_header(path, "Votes"))
    with pytest.raises(PayloadError, match=r"column\(s\) Votes missing"):
        arena.parse([raw])


def test_epoch_without_any_evaluation_file_is_a_payload_error() -> None:
    models = [raw for raw in _snapshot("epoch") if raw.name == "epoch_capabilities_index.csv"]
    with pytest.raises(PayloadError, match="none of the evaluation files"):
        epoch.parse(models, evaluations())


def test_openrouter_listing_without_data_is_a_payload_error() -> None:
    raw = RawFile("models.json", b'{"error": {"code": 401, "message": "No auth credentials"}}')
    with pytest.raises(PayloadError, match="expected an object with 'data'"):
        openrouter.parse_models([raw])
