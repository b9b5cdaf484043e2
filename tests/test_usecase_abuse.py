"""UseCaseRank against submitters gaming the board, through the real path: submission files
in an inbox, `ingest_inbox` into a real warehouse, the scoring that builds `usecase_runs` and
`usecase_groups`, and those tables read back with the release's own queries. Every published
row is checked value by value against values worked out here from the methodology."""

from __future__ import annotations

import hashlib
import io
import json
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from signing import SUBMITTER, SUBMITTERS, sign
from test_intake import PRICING
from test_submissions import EVIDENCE, for_bank, valid

from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.release.published import PUBLISHED_BY_NAME
from bench_pipeline.runs.intake import ingest_inbox
from bench_pipeline.runs.rates import rates_by_api_id, refresh_model_rates
from bench_pipeline.runs.submissions import parse_submission
from bench_pipeline.scores.load import store_frames, usecase_frames
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store

START = datetime(2026, 11, 20, 8, 30, tzinfo=UTC)  # valid()'s started_at, in UTC
AS_OF = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
OPUS = "anthropic/claude-opus-4.6"
GROUP = f"{OPUS} · thinking=high"
COST = "0.1315"  # (4000 + 15000) × 5 + 8000 × 0.5 + 1300 × 25 per million, rate of 08-14
ALL_PASS = {"one_row_per_email": "pass", "keeps_latest": "pass", "reports_removed": "pass",
            "input_untouched": "pass"}  # fmt: skip
ALL_FAIL = dict.fromkeys(ALL_PASS, "fail")


@pytest.fixture(scope="module")
def bank():
    return load_bank()


@pytest.fixture
def home(tmp_path: Path):
    pricing = tmp_path / "pricing.toml"
    pricing.write_text(PRICING)
    with connect(tmp_path / "bench.duckdb") as conn:
        migrate(conn, settings.migrations_dir())
        refresh_model_rates(conn, pricing)
    return tmp_path


def own_log(tag: str) -> str:
    """An evidence log of a run's own (no line shared with `EVIDENCE` or another tag's)."""
    return "".join(f"$ python scripts/dedupe.py --run {tag} --pass {i}\n"
                   f"run {tag}, pass {i}: removed 12 rows\n" for i in range(5))  # fmt: skip


def run_doc(bank, *, evidence: str = "", **changes: Any) -> dict[str, Any]:
    """A successful, unflagged submission; `evidence` gives it an evidence log of its own."""
    log = own_log(evidence) if evidence else EVIDENCE
    document = valid(criteria=ALL_PASS, evidence_log=log,
                     evidence_sha256=hashlib.sha256(log.encode()).hexdigest())  # fmt: skip
    return for_bank(bank, document | changes)


def submit(home: Path, bank, documents: list[tuple[str, bytes | dict]]) -> dict[str, str]:
    """Each file ingested one minute after the previous one; name → run id. A document is
    signed by the registered submitter it names (default `SUBMITTER`); bytes go as they are."""
    ids = {}
    with connect(home / "bench.duckdb") as conn:
        rates = rates_by_api_id(conn)
        for minute, (name, content) in enumerate(documents):
            inbox = home / "inbox" / name
            inbox.mkdir(parents=True)
            if isinstance(content, dict):
                content = json.dumps(sign(content, content.get("submitter", SUBMITTER))).encode()
            (inbox / f"{name}.json").write_bytes(content)
            now = AS_OF - timedelta(hours=1) + timedelta(minutes=minute)
            report = ingest_inbox(
                lambda: nullcontext(conn), inbox, bank, rates, now=now, submitters=SUBMITTERS
            )
            assert not report.rejected, report.rejected
            (ids[name],) = report.accepted
    return ids


def published(home: Path) -> tuple[dict[str, dict], list[dict]]:
    """`usecase_runs` by run id and `usecase_groups`, as the release reads them."""
    with connect(home / "bench.duckdb") as conn:
        store_frames(conn, usecase_frames(conn, AS_OF))
        out = []
        for name in ("usecase_runs", "usecase_groups"):
            cursor = conn.execute(PUBLISHED_BY_NAME[name].sql)
            columns = [d[0] for d in cursor.description]
            out.append([dict(zip(columns, row, strict=True)) for row in cursor.fetchall()])
    runs, groups = out
    for row in runs:
        row["published_at"] = row["published_at"].astimezone(UTC)
    return {r["run_id"]: r for r in runs}, groups


def recency() -> float:
    """The board's weight for age: whole UTC days from the run's day to the board's."""
    return 0.5 ** ((AS_OF.astimezone(UTC).date() - START.astimezone(UTC).date()).days / 90)


def expected_run(run_id: str, minute: int, **changes: Any) -> dict[str, Any]:
    """A counted successful run on its own cost and time reference (see the module
    docstring of scores.usecase): outcome 1, cost and speed 1, autonomy 1/(1+1), first try 1
    → 100 × (0.40 + 0.15 + 0.15 + 0.15 × 0.5 + 0.15) = 92.5; trust 50 + 20 + 10."""
    trust = changes.pop("trust", 80.0)
    row = {
        "run_id": run_id, "use_case": "uc-csv-dedupe", "group": GROUP, "model": OPUS,
        "settings": "thinking=high", "outcome": "success", "score": 92.5,
        "metric_outcome": 1.0, "metric_cost_efficiency": 1.0, "metric_speed": 1.0,
        "metric_autonomy": 0.5, "metric_first_try": 1.0, "cost_usd": COST,
        "cost_per_success_usd": COST, "trust": trust, "weight": trust / 100 * recency(),
        "under_review": False, "verified": False, "rerun_of": None,
        "published_at": AS_OF - timedelta(hours=1) + timedelta(minutes=minute),
        "duplicate_of": None, "reproduces": None, "reproduction_counts": None,
        "reproduction_reason": None, "model_name_problem": None, "flags": "",
        "cleared_flags": "", "warnings": "", "simulated": False,
    }  # fmt: skip
    row.update(changes)
    return row


def _close(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, float):
            assert actual[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert actual[key] == value, key


def test_five_near_identical_resubmissions_count_once(home, bank):
    original = run_doc(bank)
    # The same run again: field order reversed, white space changed, the evidence log given
    # a trailing space (and its hash recomputed), a look-alike-free case change in settings.
    reordered = dict(reversed(list(original.items())))
    spaced = original | {"output": original["output"] + "   ", "notes": "resubmitted"}
    log = original["evidence_log"] + " \n"
    trailing = original | {"evidence_log": log,
                           "evidence_sha256": hashlib.sha256(log.encode()).hexdigest()}  # fmt: skip
    indented = json.dumps(sign(original), indent=7).encode()  # same JSON, other bytes
    ids = submit(home, bank, [("a", original), ("b", reordered), ("c", spaced),
                              ("d", trailing), ("e", indented)])  # fmt: skip
    assert len(set(ids.values())) == 5  # five files, five runs recorded
    variants = [original, reordered, spaced, trailing, indented]
    keys = {parse_submission(v if isinstance(v, bytes) else json.dumps(v).encode()).content_key
            for v in variants}  # fmt: skip
    assert len(keys) == 1  # one key for the five, read from the files as parsed
    runs, groups = published(home)

    first = ids["a"]
    _close(runs[first], expected_run(first, 0))
    for minute, name in enumerate("bcde", start=1):
        _close(runs[ids[name]], expected_run(
            ids[name], minute, trust=70.0, under_review=True, duplicate_of=first,
            flags="duplicate",
        ))  # fmt: skip
    # One counted run: the weighted mean is its score (to float rounding of w·s / w).
    (group,) = groups
    for name in ("score", "weighted_score"):
        assert group.pop(name) == pytest.approx(92.5, abs=1e-12)
    assert [group] == [{
        "use_case": "uc-csv-dedupe", "group": GROUP, "model": OPUS, "settings": "thinking=high",
        "ci_low": None, "ci_high": None, "n_eff": 1.0,
        "runs": 1, "passes": 1, "partials": 0, "fails": 0, "pass_rate": 1.0,
        "under_review_runs": 4, "bt_pairs": 0, "bt_win_probability": None, "blended": False,
        "rank": None, "trend": None, "simulated": False,
    }]  # fmt: skip


def test_five_really_different_runs_do_get_a_rank(home, bank):
    # The control: the same model's five genuinely distinct runs rank, so "no rank" above
    # is the duplicate rule and not a lack of runs.
    ids = submit(home, bank, [(n, run_doc(bank, evidence=f"run {n}")) for n in "abcde"])
    runs, groups = published(home)
    assert {r["duplicate_of"] for r in runs.values()} == {None}
    assert [(g["runs"], g["rank"]) for g in groups] == [(5, 1)]
    assert set(runs) == set(ids.values())


def test_only_an_independent_reproduction_counts(home, bank):
    gpt = {"name": "openai/gpt-5.4", "settings": {"thinking": "high"}}
    ids = submit(home, bank, [("original", run_doc(bank, submitter="Ada Lovelace"))])
    target = ids["original"]
    # (A look-alike of a registered name, or no name, is not taken at all: test_usecase_trust.)
    claims = [
        ("self", run_doc(bank, evidence="self", submitter="Ada Lovelace", reproduces=target)),
        ("other-model", run_doc(bank, evidence="gpt", submitter="Bob", model=gpt,
                                reproduces=target)),
        ("failed", run_doc(bank, evidence="failed", submitter="Cy", criteria=ALL_FAIL,
                           reproduces=target)),
        ("unknown", run_doc(bank, evidence="unknown", submitter="Fay",
                            reproduces="sub-0000000000000000")),
    ]  # fmt: skip
    ids |= submit(home, bank, claims)
    runs, _ = published(home)
    # Nothing counted: the original is as it would be alone.
    _close(runs[target], expected_run(target, 0))
    reasons = {name: runs[ids[name]]["reproduction_reason"] for name, _ in claims}
    assert reasons == {
        "self": "does not count: a self-reproduction: the same submitter ran both",
        "other-model": (
            "does not count: another model or settings: 'openai/gpt-5.4 · thinking=high', "
            f"the original ran '{GROUP}'"
        ),
        "failed": "does not count: the reproduction did not succeed (outcome fail)",
        "unknown": "does not count: no live run sub-0000000000000000 to reproduce",
    }
    assert {runs[ids[n]]["reproduction_counts"] for n, _ in claims} == {False}
    assert {runs[ids[n]]["reproduces"] for n, _ in claims if n != "unknown"} == {target}

    # A real independent reproduction: another person, same model and settings, same use
    # case version, succeeded. It adds 10 trust and makes the original Verified.
    real = run_doc(bank, evidence="independent", submitter="Dee", reproduces=target)
    ids |= submit(home, bank, [("real", real)])
    # A second reproduction by the same person adds nothing more.
    again = run_doc(bank, evidence="again", submitter="Dee", reproduces=target)
    ids |= submit(home, bank, [("again", again)])
    runs, groups = published(home)
    _close(runs[target], expected_run(target, 0, trust=90.0, verified=True))
    _close(runs[ids["real"]], expected_run(
        ids["real"], 0, reproduces=target, reproduction_counts=True,
        reproduction_reason="an independent reproduction",
    ) | {"published_at": runs[ids["real"]]["published_at"]})  # fmt: skip
    assert runs[ids["again"]]["reproduction_reason"] == (
        "does not count: this submitter already reproduced it (each counts once)"
    )
    # The group's score is the trust-weighted mean of its counted runs.
    opus = next(g for g in groups if g["group"] == GROUP)
    counted = [r for r in runs.values() if r["group"] == GROUP and not r["under_review"]]
    weights = [r["weight"] for r in counted]
    mean = sum(r["score"] * w for r, w in zip(counted, weights, strict=True)) / sum(weights)
    assert opus["weighted_score"] == pytest.approx(mean)
    assert (opus["runs"], opus["passes"], opus["fails"]) == (len(counted), len(counted) - 1, 1)
    assert opus["rank"] == 1  # 9 counted runs: ranked
    assert ids["real"] != ids["again"]


def test_a_lookalike_model_name_is_flagged_and_never_shown_as_the_model(home, bank):
    fake = {"name": "anthropic/cl\u0430ude-opus-4.6", "settings": {"thinking": "high"}}
    hidden = {"name": "anthropic/claude-opus-4.6\u200b\x1b[0m", "settings": {"thinking": "high"}}
    ids = submit(home, bank, [
        ("real", run_doc(bank)),
        ("fake", run_doc(bank, evidence="fake", model=fake)),
        ("hidden", run_doc(bank, evidence="hidden", model=hidden)),
    ])  # fmt: skip
    runs, groups = published(home)
    fake_row, hidden_row = runs[ids["fake"]], runs[ids["hidden"]]
    assert fake_row["model"] == "anthropic/cl\\u0430ude-opus-4.6"
    assert fake_row["group"] == "anthropic/cl\\u0430ude-opus-4.6 · thinking=high"
    assert fake_row["model_name_problem"] == (
        "holds letters that pass for Latin ones: U+0430 CYRILLIC SMALL LETTER A"
    )
    assert hidden_row["model"] == "anthropic/claude-opus-4.6\\u200b\\u001b[0m"
    for row in (fake_row, hidden_row):
        assert row["flags"] == "lookalike_model_name" and row["under_review"]
        # 50 + 20 − 5: no rate is known for a name that is not the model's (model_unpriced)
        assert (row["trust"], row["warnings"], row["cost_usd"]) == (65.0, "model_unpriced", None)
    # The real model's group is untouched; no published name displays as it but its own.
    _close(runs[ids["real"]], expected_run(ids["real"], 0))
    assert [g["group"] for g in groups if g["model"] == OPUS] == [GROUP]
    assert [g["runs"] for g in groups if g["model"] == OPUS] == [1]

    # `bench scores usecase` prints the board with the escaped names and no control bytes.
    from bench_pipeline.cli.main import scores_as_of

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(settings, "warehouse_path", lambda: home / "bench.duckdb")
        scores_as_of("usecase", AS_OF, False, out)
    printed = out.getvalue()
    assert "\x1b" not in printed and "\u200b" not in printed and "\u0430" not in printed
    assert "0430ude" in printed  # the escaped name


def test_a_cleared_duplicate_still_counts_once(home, bank):
    original = run_doc(bank)
    ids = submit(home, bank, [("a", original), ("b", dict(reversed(list(original.items()))))])
    with connect(home / "bench.duckdb") as conn:
        conn.execute(
            "INSERT INTO clearances (run_id, flag, cleared_by, reason, cleared_at) "
            "VALUES (?, 'duplicate', 'Reviewer', 'looks different to me', ?)",
            [ids["b"], AS_OF.replace(tzinfo=None) - timedelta(minutes=1)],
        )
    runs, groups = published(home)
    assert runs[ids["b"]]["under_review"] and runs[ids["b"]]["cleared_flags"] == ""
    assert groups[0]["runs"] == 1
    assert Decimal(runs[ids["a"]]["cost_usd"]) == Decimal(COST)
