"""The submissions inbox into a real warehouse: valid runs kept and costed at the rate in
effect on their date, each malformed file rejected with its file, field and reason, nothing
lost and nothing read twice; dated rates from the pricing file and from OpenRouter."""

import hashlib
import json
from contextlib import nullcontext
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from signing import SUBMITTERS, sign
from test_submissions import for_bank, valid

from bench_pipeline.core import settings
from bench_pipeline.core.money import MAX_STORED_USD
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.runs.costing import LONG_CONTEXT_UNPRICED, MODEL_UNPRICED, Rates
from bench_pipeline.runs.intake import ingest_inbox, submission_run_id
from bench_pipeline.runs.rates import (
    DatedRates,
    PricingFileError,
    _openrouter_tier,
    _row,
    load_pricing_file,
    rates_by_api_id,
    refresh_model_rates,
)
from bench_pipeline.scores.load import usecase_frames
from bench_pipeline.scores.usecase import IMPLAUSIBLE_COST, UseCaseRun, hard_flags
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
PRICING = """
[[rate]]
api_id = "anthropic/claude-opus-4.6"
effective_date = 2026-08-14
input = "5"
output = "25"
cached_input = "0.5"
cache_write = "6.25"

[[rate]]
api_id = "anthropic/claude-opus-4.6"
effective_date = 2026-11-25
input = "6"
output = "30"
cached_input = "0.6"
cache_write = "7.5"

[[rate]]
api_id = "openai/gpt-5.4"
effective_date = 2026-08-14
input = "2.5"
output = "15"
long_context = { threshold_tokens = 271999, input = "5", output = "22.5" }
"""


@pytest.fixture(scope="module")
def bank():
    return load_bank()


@pytest.fixture
def conn(tmp_path: Path):
    pricing = tmp_path / "pricing.toml"
    pricing.write_text(PRICING)
    with connect(tmp_path / "bench.duckdb") as connection:
        migrate(connection, settings.migrations_dir())
        refresh_model_rates(connection, pricing)
        yield connection


def _write(inbox: Path, name: str, content: bytes | dict) -> Path:
    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / name
    # every document is signed by a registered submitter: these tests are about the rest
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(sign(content)).encode())
    return path


MALFORMED = {
    "wrong-type.json": (valid(turns="six"), "turns"),
    "missing-field.json": (
        {k: v for k, v in valid().items() if k != "wall_time_seconds"},
        "wall_time_seconds",
    ),
    "negative-tokens.json": (
        valid(tokens={"total": {"input_tokens": -5, "output_tokens": 10}}),
        "tokens.total.input_tokens",
    ),
    "bad-hash.json": (valid(evidence_sha256="not-a-hash"), "evidence_sha256"),
    "future-date.json": (valid(started_at="2026-12-24T09:00:00+00:00"), "started_at"),
    "unknown-use-case.json": (valid(use_case="uc-nothing-like-it"), "use_case"),
    "old-version.json": (valid(use_case_version="0123456789abcdef"), "use_case_version"),
    "missing-criterion.json": (valid(criteria={"keeps_latest": "pass"}), "criteria"),
    "unknown-field.json": (valid(favourite_colour="blue"), "favourite_colour"),
    "bad-run-link.json": (valid(rerun_of="run-42"), "rerun_of"),
    "zero-turns.json": (valid(turns=0), "turns"),
    "claims-simulated.json": (
        valid(model={"name": "anthropic/claude-opus-4.6", "settings": {" Simulated": True}}),
        "model.settings",
    ),
    "bad-autonomy.json": (valid(autonomy="fully"), "autonomy"),
    # Bounded on both sides: before 2020, and a start UTC cannot hold (it stopped every run).
    "before-2020.json": (valid(started_at="2019-12-31T23:59:59+00:00"), "started_at"),
    "year-one.json": (valid(started_at="0001-01-01T00:00:00+14:00"), "started_at"),
    "last-instant.json": (valid(started_at="9999-12-31T23:59:59-14:00"), "started_at"),
    "boolean-version.json": (valid(schema_version=True), "schema_version"),
    "million-turns.json": (valid(turns=1_000_001), "turns"),
}
KEEP_VERSION = {"old-version.json"}


def test_malformed_files_are_rejected_precisely_and_valid_ones_kept(conn, bank, tmp_path):
    inbox = tmp_path / "inbox"
    for name, (document, _field) in MALFORMED.items():
        _write(inbox, name, document if name in KEEP_VERSION else for_bank(bank, document))
    _write(inbox, "not-json.json", b"{this is not json")
    good = [
        _write(inbox, "good-1.json", for_bank(bank, valid())),
        _write(inbox, "good-2.json", for_bank(bank, valid(started_at="2026-11-26T10:00:00+00:00"))),
    ]
    _write(inbox, "notes.txt", b"ignored: not a .json file")

    report = ingest_inbox(lambda: nullcontext(conn), inbox, bank, now=NOW, submitters=SUBMITTERS)

    assert len(report.accepted) == 2
    assert len(report.rejected) == len(MALFORMED) + 1
    files = {
        name: (status, field, reason)
        for name, status, field, reason in conn.execute(
            "SELECT file_name, status, field, reason FROM submission_files"
        ).fetchall()
    }
    for name, (_document, field) in MALFORMED.items():
        status, got_field, reason = files[name]
        assert (status, got_field) == ("rejected", field), (name, reason)
        assert reason.startswith(field)
    assert files["future-date.json"][2] == "started_at: 2026-12-24T09:00:00+00:00 is in the future"
    assert files["not-json.json"][0] == "rejected" and "not valid JSON" in files["not-json.json"][2]
    assert {files[p.name][0] for p in good} == {"accepted"}
    assert "notes.txt" not in files
    # Nothing is moved or changed: every file is still in the inbox as written.
    assert len(list(inbox.iterdir())) == len(MALFORMED) + 4

    stored = dict(conn.execute("SELECT file_name, run_id FROM submitted_runs").fetchall())
    digest = hashlib.sha256(good[0].read_bytes()).hexdigest()
    assert stored["good-1.json"] == submission_run_id(digest) == f"sub-{digest[:16]}"

    again = ingest_inbox(lambda: nullcontext(conn), inbox, bank, now=NOW, submitters=SUBMITTERS)
    assert (again.accepted, again.rejected, again.seen_before) == ([], [], len(files))
    assert conn.execute("SELECT count(*) FROM submitted_runs").fetchall()[0][0] == 2


def test_an_absurd_claimed_cost_is_stored_flagged_not_lost(conn, bank, tmp_path):
    """A claim no money column holds (1e20 USD as a JSON number, 10^25 as a string) is no
    reason to lose the file: the run is stored with the claim clamped to the largest amount
    the column holds and kept as written beside it, and scoring flags it `implausible_cost`
    from the claim as written, token counts or not."""
    inbox = tmp_path / "inbox"
    huge = "1" + "0" * 25
    _write(inbox, "number.json", for_bank(bank, valid(claimed_cost_usd=1e20)))
    _write(inbox, "string.json", for_bank(bank, valid(claimed_cost_usd=huge, turns=7)))
    _write(inbox, "fits.json", for_bank(bank, valid(claimed_cost_usd="99999.5", turns=8)))
    report = ingest_inbox(lambda: nullcontext(conn), inbox, bank, now=NOW, submitters=SUBMITTERS)
    assert (len(report.accepted), report.rejected) == (3, [])
    stored = {
        name: (claimed, written)
        for name, claimed, written in conn.execute(
            "SELECT file_name, claimed_cost_usd, claimed_cost_as_written FROM submitted_runs"
        ).fetchall()
    }
    assert stored["number.json"] == (MAX_STORED_USD, "1E+20")
    assert stored["string.json"] == (MAX_STORED_USD, huge)
    assert stored["fits.json"] == (Decimal("99999.5"), None)  # a claim that fits, as it was
    runs = usecase_frames(conn, NOW)["usecase_runs"]
    flags = dict(conn.execute("SELECT file_name, run_id FROM submitted_runs").fetchall())
    by_run = dict(zip(runs["run_id"], runs["flags"], strict=True))
    assert IMPLAUSIBLE_COST in by_run[flags["number.json"]]
    assert IMPLAUSIBLE_COST in by_run[flags["string.json"]]
    # 99,999.5 USD is above every token at the dearest rate too: the same flag, from the bound
    assert IMPLAUSIBLE_COST in by_run[flags["fits.json"]]


def test_a_claim_above_any_column_is_implausible_without_token_counts() -> None:
    run = UseCaseRun(
        run_id="sub-0000000000000000", use_case="u", model="m", outcome="success",
        first_try=True, retries=0, step_ins=0, turns=1, wall_time_s=10.0, cost_usd=None,
        claimed_cost_usd=Decimal("1E+20"), run_at=NOW, published_at=NOW,
    )  # fmt: skip
    assert run.token_counts is None and IMPLAUSIBLE_COST in hard_flags(run)
    fits = replace(run, claimed_cost_usd=MAX_STORED_USD)
    assert IMPLAUSIBLE_COST not in hard_flags(fits)  # without tokens, no bound to pass


def test_cost_uses_the_rate_in_effect_on_the_run_date(conn, bank, tmp_path):
    inbox = tmp_path / "inbox"
    _write(inbox, "before.json", for_bank(bank, valid()))  # 2026-11-20: the August rates
    _write(inbox, "after.json", for_bank(bank, valid(started_at="2026-11-26T10:00:00+00:00")))
    ingest_inbox(lambda: nullcontext(conn), inbox, bank, now=NOW, submitters=SUBMITTERS)
    costs = dict(conn.execute("SELECT file_name, cost_usd FROM submitted_runs").fetchall())
    # Request 1: 12,000 input of which 8,000 cached, 900 output; request 2: 15,000 in, 400 out.
    # August: (4,000×5 + 8,000×0.5 + 900×25 + 15,000×5 + 400×25) / 1e6
    #       = (20,000 + 4,000 + 22,500 + 75,000 + 10,000) / 1e6 = 0.1315
    assert costs["before.json"] == Decimal("0.1315")
    # From 25 November: (4,000×6 + 8,000×0.6 + 900×30 + 15,000×6 + 400×30) / 1e6
    #       = (24,000 + 4,800 + 27,000 + 90,000 + 12,000) / 1e6 = 0.1578
    assert costs["after.json"] == Decimal("0.1578")


def test_totals_only_fall_back_to_base_rates_with_the_warning(conn, bank, tmp_path):
    inbox = tmp_path / "inbox"
    big = {"total": {"input_tokens": 300_000, "output_tokens": 1_300}}
    _write(inbox, "long.json", for_bank(bank, valid(
        model={"name": "openai/gpt-5.4"}, tokens=big)))  # fmt: skip
    split = {"per_request": [{"input_tokens": 290_000, "output_tokens": 1_000},
                             {"input_tokens": 10_000, "output_tokens": 300}]}  # fmt: skip
    _write(inbox, "split.json", for_bank(bank, valid(
        model={"name": "openai/gpt-5.4"}, tokens=split)))  # fmt: skip
    _write(inbox, "unpriced.json", for_bank(bank, valid(model={"name": "acme/unknown-1"})))
    ingest_inbox(lambda: nullcontext(conn), inbox, bank, now=NOW, submitters=SUBMITTERS)
    rows = {
        name: (cost, warnings)
        for name, cost, warnings in conn.execute(
            "SELECT file_name, cost_usd, cost_warnings FROM submitted_runs"
        ).fetchall()
    }
    # Totals only: base rates, 300,000×2.5 + 1,300×15 = 769,500 → 0.7695, with the warning.
    assert rows["long.json"] == (Decimal("0.7695"), LONG_CONTEXT_UNPRICED)
    # Per request: the first crosses 271,999 → 290,000×5 + 1,000×22.5 = 1,472,500; the
    # second is at base rates 10,000×2.5 + 300×15 = 29,500; (1,472,500 + 29,500)/1e6 = 1.502
    assert rows["split.json"] == (Decimal("1.502"), "")
    assert rows["unpriced.json"] == (None, MODEL_UNPRICED)


def test_pricing_file_errors_name_the_file_row_and_field(tmp_path):
    path = tmp_path / "pricing.toml"
    cases = {
        "input = 2.5": "rate 1.input: write the rate as a decimal string",
        'input = "-1"': "rate 1.input: '-1' is not a finite, non-negative rate",
        'input = "two"': "rate 1.input: 'two' is not a decimal",
        'colour = "red"': "rate 1.colour: unknown field",
        "long_context = { threshold_tokens = -3 }": "rate 1.long_context.threshold_tokens",
    }
    for line, message in cases.items():
        path.write_text(f'[[rate]]\napi_id = "a/b"\neffective_date = 2026-01-01\n{line}\n')
        with pytest.raises(PricingFileError) as raised:
            load_pricing_file(path)
        assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value)
    path.write_text('[[rate]]\napi_id = "a/b"\neffective_date = 2026-01-01\n' * 2)
    with pytest.raises(PricingFileError, match="rate 2: a second row for a/b on 2026-01-01"):
        load_pricing_file(path)
    assert load_pricing_file(tmp_path / "absent.toml") == []


def test_the_file_wins_over_an_ingestion_on_the_same_day_and_openrouter_tiers_parse(conn):
    conn.execute(
        "INSERT INTO model_rates (api_id, effective_date, origin, taken_at, input_usd_per_1m, "
        "output_usd_per_1m, local) VALUES ('anthropic/claude-opus-4.6', DATE '2026-08-14', "
        "'openrouter:x-1', TIMESTAMP '2026-08-14 10:00', 99, 99, false)"
    )
    rows = rates_by_api_id(conn)["anthropic/claude-opus-4.6"]
    assert sorted((r.effective_date, r.input) for r in rows) == [
        (date(2026, 8, 14), Decimal("5")),
        (date(2026, 11, 25), Decimal("6")),
    ]
    tier = _openrouter_tier(json.dumps([{"min_prompt_tokens": 200000, "prompt": "0.000004",
                                         "completion": "0.000018"}]))  # fmt: skip
    assert (tier.threshold_tokens, tier.input, tier.output, tier.cache_write) == (
        199999, Decimal("4"), Decimal("18"), None,
    )  # fmt: skip
    assert _openrouter_tier(None) is None


def test_rates_of_some_models_are_those_models_rates_in_the_whole_table(conn):
    """A batch asks for its own models' rates only: the same rows the whole table gives
    them, nothing for a model asked for but unlisted, and no other model."""
    conn.execute(
        "INSERT INTO model_rates (api_id, effective_date, origin, taken_at, input_usd_per_1m, "
        "output_usd_per_1m, local) VALUES "
        "('anthropic/claude-opus-4.6', DATE '2026-08-14', 'openrouter:x-1', "
        "TIMESTAMP '2026-08-14 10:00', 99, 99, false), "
        "('other/model', DATE '2026-08-14', 'openrouter:x-1', "
        "TIMESTAMP '2026-08-14 10:00', 1, 2, false)"
    )
    everything = rates_by_api_id(conn)
    assert len(everything) >= 2
    wanted = ["anthropic/claude-opus-4.6", "anthropic/claude-opus-4.6", "not/listed"]
    some = rates_by_api_id(conn, iter(wanted))
    assert some == {"anthropic/claude-opus-4.6": everything["anthropic/claude-opus-4.6"]}
    assert rates_by_api_id(conn, []) == {}


def test_an_openrouter_run_is_stored_once_with_its_rates_and_tiers(conn, tmp_path):
    """Each listing's row is the one its `Rates` gives: a variable price has no input or
    output rate, a prompt-size override is its tier, any other override is no tier."""
    tier = json.dumps([{"min_prompt_tokens": 128000, "prompt": "0.000001", "completion": "2E-6"}])
    timed = json.dumps([{"prompt": "0.000003", "utc_start": 100, "utc_end": 400}])
    listings = [  # model, prompt, completion, cache read, variable, overrides
        ("a/plain", "1.25", "10", None, False, None),
        ("b/router", "3", "4", "0.5", True, None),
        ("c/tiered", "0.5", "1.5", "0.05", False, tier),
        ("d/tiered-too", "0.7", "0.000000000001", None, False, tier),
        ("e/timed", "0", "0", None, False, timed),
    ]
    conn.execute(
        "INSERT INTO source_runs (source, run_id, mode, started_at, finished_at, status, "
        "rows_valid, rows_quarantined) VALUES ('openrouter_models', 'or-1', 'full', "
        "TIMESTAMP '2026-11-30 09:00', TIMESTAMP '2026-11-30 09:05', 'accepted', 5, 0)"
    )
    for model, prompt, completion, cached, variable, overrides in listings:
        conn.execute(
            "INSERT INTO openrouter_models (model_id, name, prompt_usd_per_m, "
            "completion_usd_per_m, input_cache_read_usd_per_m, variable_pricing, "
            "pricing_overrides, source_run_id) VALUES (?, ?, ?, ?, ?, ?, ?, 'or-1')",
            [model, model, prompt, completion, cached, variable, overrides],
        )
    no_file = tmp_path / "none.toml"
    assert refresh_model_rates(conn, no_file) == 5  # the file's two rows are gone
    assert refresh_model_rates(conn, no_file) == 5  # the run is stored once
    taken = datetime(2026, 11, 30, 9, 5)
    expected = []
    for model, prompt, completion, cached, variable, overrides in listings:
        rates = Rates(
            effective_date=date(2026, 11, 30),
            input=None if variable else Decimal(prompt),
            output=None if variable else Decimal(completion),
            cached_input=None if cached is None else Decimal(cached),
            long_context=_openrouter_tier(overrides),
        )
        expected.append(_row(DatedRates(model, rates, "openrouter:or-1", taken), taken))
    got = conn.execute(
        "SELECT * FROM model_rates WHERE origin = 'openrouter:or-1' ORDER BY api_id"
    ).fetchall()
    assert [list(row) for row in got] == expected
