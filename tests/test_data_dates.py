"""Every source run records the date of its data: the newest date its payload states, with how
it was derived; never the fetch time. The expected dates were read by hand from the recorded
snapshots (and agree with `sources/snapshots/PROVENANCE.md`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from bench_pipeline.ingest import freshness
from bench_pipeline.ingest.dating import accepted_date, data_date, stated_frame
from bench_pipeline.ingest.parsers.dates import Stated, newest, text_date, unix_date
from bench_pipeline.ingest.payload import RawFile
from tests.conftest import REPO_SNAPSHOTS

pytestmark = pytest.mark.store

# source -> (the data date, the record that states it), checked by hand in the snapshots
EXPECTED = {
    # `created` 1786722910 of qwen/qwen3.8-27b, the newest of the 414 listings
    "openrouter_models": (datetime(2026, 8, 14, 15, 55, 10), "qwen/qwen3.8-27b in models.json"),
    # `data.created` 1789021285 of the DeepSeek V4.1 Flash endpoint listing
    "openrouter_endpoints": (datetime(2026, 9, 10, 6, 21, 25), "deepseek/deepseek-v4.1-flash"),
    # `last_updated` "2026-06-12" (several providers' kimi-k2.7-code); none is later
    "models_dev": (datetime(2026, 6, 12), "kimi-k2.7-code"),
    # the public table's file name: LMArena published it on 2026-01-16 (the catalogue files
    # carry no date of their own)
    "arena": (datetime(2026, 1, 16), "chatbot_arena_elo_scores_2026_01_16.csv"),
    # `Started at` 2026-04-15T14:17:38.000Z, OTIS Mock AIME, gpt-5.4-mini-2026-03-17_high: the
    # newest run date (a model's `Release date` of 2026-04-16 is not a run date)
    "epoch": (datetime(2026, 4, 15, 14, 17, 38), "otis_mock_aime_2024_2025.csv"),
    # `date` "2025-12-09" of "Devstral small (2512)" on bash-only, the newest of 322 entries
    "swebench": (datetime(2025, 12, 9), "Devstral small (2512) on bash-only"),
    # `eval.created` 2025-07-05T09:59:48-04:00 of the gemma3 log, the newest of the four (its day)
    "inspect_popularity": (datetime(2025, 7, 5), "ollama/gemma3 in log_read_sample.eval"),
}


def _files(source: str) -> list[RawFile]:
    folder = REPO_SNAPSHOTS / source
    return [RawFile(p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()]


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_each_sources_run_records_the_date_its_payload_states(warehouse, source) -> None:
    run = warehouse.ingest(source)
    assert run.status == "accepted", run.reason
    expected, where = EXPECTED[source]
    row = warehouse.run_row(run.run_id)
    assert row is not None
    assert row["data_as_of"] == expected
    assert where in row["data_as_of_basis"], row["data_as_of_basis"]
    assert row["data_as_of_basis"].startswith("newest ")
    # each date is tied to the record the parser numbered it as: with nothing quarantined,
    # no date is left out (a numbering that disagreed with the parser's would drop some)
    if run.rows_quarantined == 0:
        assert "left out" not in row["data_as_of_basis"], row["data_as_of_basis"]
    # the fetch time is months later: the date is not the fetch's
    assert row["finished_at"] - row["data_as_of"] > timedelta(days=30)
    # the analyst copy (a copy of this file) has it beside the fetch time
    assert warehouse.query(
        "SELECT run_id, data_as_of, fetched_at FROM source_data_as_of WHERE source = ?", [source]
    ) == [(run.run_id, expected, row["finished_at"])]


def test_the_dates_come_from_the_payload_not_the_fetch() -> None:
    """Edit the one record that states the newest date and the data date follows it."""
    listing = json.loads((REPO_SNAPSHOTS / "openrouter_models" / "models.json").read_bytes())
    newest_model = max(listing["data"], key=lambda m: m["created"])
    newest_model["created"] = int(datetime(2026, 8, 20, 12).timestamp())
    files = [RawFile("models.json", json.dumps(listing).encode())]
    dated = data_date("openrouter_models", files, datetime(2026, 12, 6))
    assert dated.as_of == datetime(2026, 8, 20, 12)
    # with the date removed, the second newest model dates the listing
    del newest_model["created"]
    files = [RawFile("models.json", json.dumps(listing).encode())]
    dated = data_date("openrouter_models", files, datetime(2026, 12, 6))
    assert dated.as_of is not None and dated.as_of < datetime(2026, 8, 14, 15, 55, 10)


def test_a_payload_stating_no_date_has_none_and_says_so(warehouse) -> None:
    # the arena catalogue without the public table: no file states a publication date
    catalogue = {f.name: f.content for f in _files("arena") if not f.name.endswith(".csv")}
    run = warehouse.ingest("arena", files=catalogue)
    assert run.status == "accepted", run.reason
    row = warehouse.run_row(run.run_id)
    assert row is not None and row["data_as_of"] is None
    assert row["data_as_of_basis"] == "no publication date stated in the payload"
    with warehouse.connect() as conn:
        live = freshness.live_data(conn)["arena"]
    judged = freshness.judge(live.data_as_of, 336, row["finished_at"])
    assert judged.verdict == "UNDATED"  # not "fresh" because it was fetched just now


def test_a_date_after_the_run_is_not_believed() -> None:
    now = datetime(2026, 12, 6, 12)
    found = [(datetime(2099, 1, 1), "a typo"), (datetime(2026, 11, 30), "the real one")]
    dated = newest(found, "entry `date`", now)
    assert dated.as_of == datetime(2026, 11, 30)
    assert "1 date(s) after the run ignored" in dated.basis
    assert newest([(datetime(2099, 1, 1), "x")], "entry `date`", now).as_of is None


def test_hostile_date_values_are_skipped_not_raised() -> None:
    assert text_date("2026-06") == datetime(2026, 6, 1)
    assert text_date("2026-04-15T14:17:38.000Z") == datetime(2026, 4, 15, 14, 17, 38)
    for value in ("2026-13-40", "yesterday", 20260101, None, "", "9999-99"):
        assert text_date(value) is None
    for value in (True, 10**30, "1789021285", -(10**20)):
        assert unix_date(value) is None
    # a broken payload gives no date, with the reason, and never raises
    dated = data_date("swebench", [RawFile("leaderboards.json", b"<html>")], datetime(2026, 1, 1))
    assert dated.as_of is None and dated.basis.startswith("no data date: ")
    assert data_date("unknown", [], datetime(2026, 1, 1)).as_of is None


def test_a_recorded_capture_older_than_its_cadence_is_stale() -> None:
    fetched_now = datetime(2026, 12, 6, 12)
    for source, (when, _) in EXPECTED.items():
        judged = freshness.judge(when, 336, fetched_now)
        assert judged.verdict == "STALE", source
    assert freshness.judge(datetime(2026, 12, 6), 24, fetched_now).verdict == "fresh"
    assert freshness.judge(datetime(2026, 12, 5), 24, fetched_now).describe() == (
        "STALE (data 36 h old, allowed 24 h)"
    )


def _listing_with_a_record_dated_today(price: str) -> tuple[dict[str, bytes], datetime]:
    """The recorded models listing with one model (not the newest) stating today's `created`
    and `price` as its prompt price."""
    listing = json.loads((REPO_SNAPSHOTS / "openrouter_models" / "models.json").read_bytes())
    newest_model = max(listing["data"], key=lambda m: m["created"])
    hostile = next(m for m in listing["data"] if m is not newest_model)
    today = datetime.now(UTC).replace(tzinfo=None, microsecond=0) - timedelta(hours=1)
    hostile["created"] = int(today.replace(tzinfo=UTC).timestamp())
    hostile["pricing"]["prompt"] = price
    return {"models.json": json.dumps(listing).encode()}, today


def test_a_quarantined_record_dated_today_does_not_date_the_run(warehouse) -> None:
    """A record quarantined (a negative price) that states today's date must not make the
    months-old listing look fresh: the run is dated by the records it accepts."""
    files, _ = _listing_with_a_record_dated_today("-0.000001")
    run = warehouse.ingest("openrouter_models", files=files)
    assert run.status == "accepted", run.reason
    assert run.rows_quarantined == 1
    row = warehouse.run_row(run.run_id)
    assert row is not None
    expected, where = EXPECTED["openrouter_models"]
    assert row["data_as_of"] == expected  # months ago, not today
    assert where in row["data_as_of_basis"]
    assert "1 date(s) of quarantined records left out" in row["data_as_of_basis"]
    with warehouse.connect() as conn:
        live = freshness.live_data(conn)["openrouter_models"]
    assert live.data_as_of == expected


def test_the_same_record_accepted_dates_the_run(warehouse) -> None:
    """The control: with a valid price the same record is accepted, and its date counts."""
    files, today = _listing_with_a_record_dated_today("0.000001")
    run = warehouse.ingest("openrouter_models", files=files)
    assert run.status == "accepted", run.reason
    row = warehouse.run_row(run.run_id)
    assert row is not None and row["data_as_of"] == today


def test_a_date_a_file_states_counts_while_one_of_its_records_is_accepted() -> None:
    """A date stated by a file (an endpoint listing's model, a table's file name) counts
    while any record of that file is accepted, and not once every one is quarantined."""
    now = datetime(2026, 12, 6)
    stated = stated_frame(
        [
            Stated(datetime(2026, 12, 5), "new.json", "openrouter_endpoints", "new.json"),
            Stated(datetime(2026, 6, 1), "old.json", "openrouter_endpoints", "old.json"),
        ]
    )

    def accepted(*files: str) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "table": ["openrouter_endpoints"] * len(files),
                "file": list(files),
                "record": [1] * len(files),
            },
            schema={"table": pl.Utf8, "file": pl.Utf8, "record": pl.Int64},
        )

    both = accepted_date("openrouter_endpoints", stated, accepted("new.json", "old.json"), now)
    assert both.as_of == datetime(2026, 12, 5)
    only_old = accepted_date("openrouter_endpoints", stated, accepted("old.json"), now)
    assert only_old.as_of == datetime(2026, 6, 1)
    none = accepted_date("openrouter_endpoints", stated, accepted(), now)
    assert none.as_of is None and "2 date(s) of quarantined records left out" in none.basis
