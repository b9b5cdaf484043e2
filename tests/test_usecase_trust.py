"""Trust that costs something (UseCaseRank): only registered submitters who sign their files
are taken, a near copy of a run is one run, a reproduction counts only from another
registered submitter with an evidence log of its own, and a claimed cost beyond any
plausible rate is flagged. Through the real path: signed files in an inbox, `ingest_inbox`
into a real warehouse, the scoring, and `usecase_runs` / `usecase_groups` read back with the
release's own queries; every published value of the runs involved is checked."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat
from contextlib import nullcontext
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from signing import SECRETS, SUBMITTER, SUBMITTERS, register, sign
from test_intake import PRICING
from test_submissions import for_bank, valid
from test_usecase_abuse import (
    ALL_PASS,
    AS_OF,
    COST,
    GROUP,
    OPUS,
    _close,
    expected_run,
    own_log,
    published,
    run_doc,
    submit,
)

from bench_pipeline.cli.main import main
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.ingest.tables import MAX_USD_PER_M
from bench_pipeline.runs.intake import ingest_inbox
from bench_pipeline.runs.rates import refresh_model_rates
from bench_pipeline.runs.submissions import parse_submission
from bench_pipeline.runs.submitters import (
    Submitters,
    canonical_bytes,
    check_signature,
    load_submitters,
    signed,
)
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.store


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


def ingest(home: Path, bank, files: dict[str, bytes], submitters: Submitters = SUBMITTERS):
    """Drop `files` into a fresh inbox and take them in, an hour before the board."""
    batches = home / "inbox"
    inbox = batches / f"batch-{len(list(batches.glob('*'))) if batches.exists() else 0}"
    inbox.mkdir(parents=True)
    for name, data in files.items():
        (inbox / name).write_bytes(data)
    with connect(home / "bench.duckdb") as conn:
        return ingest_inbox(
            lambda: nullcontext(conn), inbox, bank, now=AS_OF - timedelta(hours=1),
            submitters=submitters,
        )  # fmt: skip


def file_fates(home: Path) -> dict[str, tuple[str, str | None, str | None]]:
    with connect(home / "bench.duckdb") as conn:
        rows = conn.execute("SELECT file_name, status, field, reason FROM submission_files")
        return {name: (status, field, reason) for name, status, field, reason in rows.fetchall()}


def encode(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


# Who may submit -------------------------------------------------------------------------------


def test_unregistered_and_unproven_submitters_are_rejected_with_the_reason(home, bank):
    document = run_doc(bank)
    good = sign(document)
    tampered = copy.deepcopy(good)
    tampered["tokens"]["total"]["output_tokens"] = 1301  # changed after signing ...
    tampered["tokens"]["per_request"][1]["output_tokens"] = 401  # ... consistently
    mallory, ada = b"m" * 40, SECRETS[SUBMITTER].encode()
    files = {
        "unsigned.json": encode(document),
        "made-up.json": encode(signed(document, "Mallory", mallory)),
        "lookalike.json": encode(signed(document, "\u0410da Lovelace", ada)),
        "no-signature.json": encode(document | {"submitter": SUBMITTER}),
        "someone-elses-key.json": encode(signed(document, SUBMITTER, SECRETS["Bob"].encode())),
        "tampered.json": encode(tampered),
        # Canonical bytes: re-indented, keys in another order, the same proof.
        "reformatted.json": json.dumps(dict(reversed(list(good.items()))), indent=3).encode(),
    }  # fmt: skip
    report = ingest(home, bank, files)
    how = "name a registered submitter and sign the file: bench sign FILE --submitter NAME"
    wrong = (
        "does not prove 'Ada Lovelace': not the HMAC-SHA256 of the file's canonical bytes "
        "under their secret (was the file changed after signing?)"
    )
    expected = {
        "unsigned.json": ("rejected", "submitter", f"submitter: missing: {how}"),
        "made-up.json": (
            "rejected", "submitter", "submitter: 'Mallory' is not a registered submitter"),
        "lookalike.json": (
            "rejected", "submitter",
            "submitter: '\u0410da Lovelace' is not a registered submitter"),
        "no-signature.json": ("rejected", "signature", f"signature: missing: {how}"),
        "someone-elses-key.json": ("rejected", "signature", f"signature: {wrong}"),
        "tampered.json": ("rejected", "signature", f"signature: {wrong}"),
        "reformatted.json": ("accepted", None, None),
    }  # fmt: skip
    assert file_fates(home) == expected
    assert {Path(r.source or "").name for r in report.rejected} == set(expected) - {
        "reformatted.json"
    }
    (accepted,) = report.accepted
    # Nothing moved: every file is still where it was dropped.
    assert sorted(p.name for p in (home / "inbox").glob("*/*.json")) == sorted(files)
    with connect(home / "bench.duckdb") as conn:
        stored = conn.execute(
            "SELECT run_id, submitter, submitter_verified FROM submitted_runs"
        ).fetchall()
    assert stored == [(accepted, SUBMITTER, True)]
    runs, groups = published(home)
    assert list(runs) == [accepted]
    _close(runs[accepted], expected_run(accepted, 0, published_at=AS_OF - timedelta(hours=1)))
    assert [(g["group"], g["runs"], g["under_review_runs"]) for g in groups] == [(GROUP, 1, 0)]


def test_while_the_submitters_file_cannot_be_used_files_wait_unrecorded(home, bank):
    files = {"run.json": encode(sign(run_doc(bank))), "broken.json": b"{"}
    missing = load_submitters(home / "submitters.toml")
    report = ingest(home, bank, files, missing)
    # The broken file is judged (its fault is its own); the signed one waits for the registry.
    assert report.accepted == [] and [Path(str(r.source)).name for r in report.waiting] == [
        "run.json"
    ]
    assert report.waiting[0].reason == (
        f"submitter: waits: no submitters file at {home / 'submitters.toml'}"
    )
    assert set(file_fates(home)) == {"broken.json"}
    weak = home / "weak.toml"
    weak.write_text('[submitters."Ada Lovelace"]\nsecret = "short"\n')
    assert load_submitters(weak).problem == (
        f'{weak}: submitters."Ada Lovelace".secret: a string of 32+ characters'
    )
    twins = home / "twins.toml"
    twins.write_text(
        f'[submitters.Bob]\nsecret = "{"b" * 32}"\n[submitters.BOB]\nsecret = "{"c" * 32}"\n'
    )
    assert load_submitters(twins).problem == (
        f"{twins}: submitters.\"BOB\": reads as the same name as 'Bob'"
    )
    # Once the file is there, the same inbox is taken on the next intake.
    inbox = next((home / "inbox").iterdir())
    with connect(home / "bench.duckdb") as conn:
        again = ingest_inbox(
            lambda: nullcontext(conn), inbox, bank, now=AS_OF, submitters=register(home)
        )
    assert len(again.accepted) == 1 and again.waiting == [] and again.seen_before == 1
    assert file_fates(home)["run.json"] == ("accepted", None, None)


def test_bench_sign_signs_in_place_with_the_registered_secret(home, bank, capsys):
    registry = register(home)
    path = home / "run.json"
    path.write_text(json.dumps(run_doc(bank)))
    assert (
        main(
            ["sign", str(path), "--submitter", "Bob", "--submitters", str(home / "submitters.toml")]
        )
        == 0
    )
    document = json.loads(path.read_text())
    assert document["submitter"] == "Bob"
    assert check_signature(document, registry) is None
    # The proof is HMAC-SHA256 over the canonical bytes, as documented, and nothing else.
    import hmac

    unsigned = {k: v for k, v in document.items() if k != "signature"}
    text = json.dumps(unsigned, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert canonical_bytes(document) == text.encode()
    assert (
        document["signature"]
        == hmac.new(SECRETS["Bob"].encode(), text.encode(), hashlib.sha256).hexdigest()
    )
    assert "signed as 'Bob'" in capsys.readouterr().out
    before = path.read_bytes()
    assert (
        main(
            ["sign", str(path), "--submitter", "Eve", "--submitters", str(home / "submitters.toml")]
        )
        == 1
    )
    assert "'Eve' is not in" in capsys.readouterr().out
    assert path.read_bytes() == before  # a refusal leaves the file as it was
    # With no --submitters, BENCH_SUBMITTERS (default $BENCH_HOME/submitters.toml) is read.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCH_HOME", str(home))
        patch.delenv("BENCH_SUBMITTERS", raising=False)
        assert settings.submitters_path() == home / "submitters.toml"
        assert main(["sign", str(path), "--submitter", "Cy"]) == 0
    assert check_signature(json.loads(path.read_text()), registry) is None


# Duplicates and reproductions --------------------------------------------------------------


def _bump_output(document: dict[str, Any], by: int) -> dict[str, Any]:
    """The same run with its second request's output tokens (and the total) changed."""
    changed = copy.deepcopy(document)
    changed["tokens"]["per_request"][1]["output_tokens"] += by
    changed["tokens"]["total"]["output_tokens"] += by
    return changed


def test_a_near_copy_of_a_run_is_a_duplicate_not_a_second_run(home, bank):
    original = run_doc(bank, evidence="original")
    one_token = _bump_output(original, 1)  # one token count changed, nothing else
    # Another submitter, the log with one line of ten changed, input tokens 3% up.
    lines = original["evidence_log"].splitlines(keepends=True)
    lines[3] = "run original, pass 1: removed 13 rows\n"
    log = "".join(lines)
    edited = copy.deepcopy(original) | {
        "evidence_log": log, "evidence_sha256": hashlib.sha256(log.encode()).hexdigest(),
        "submitter": "Bob", "claimed_cost_usd": "0.13555",
    }  # fmt: skip
    edited["tokens"]["per_request"][0]["input_tokens"] += 810
    edited["tokens"]["total"]["input_tokens"] += 810
    honest = run_doc(bank, evidence="honest")  # the control: the same tokens, its own log
    ids = submit(home, bank, [("original", original), ("one-token", one_token),
                              ("edited", edited), ("honest", honest)])  # fmt: skip
    assert len(set(ids.values())) == 4  # four files, four runs stored, ...
    runs, groups = published(home)
    first = ids["original"]
    _close(runs[first], expected_run(first, 0))
    _close(runs[ids["honest"]], expected_run(ids["honest"], 3))
    # ... two of them near copies: published, flagged `duplicate` of the original, never counted.
    # (50 + 20 for the log, no +10: a flag was raised.) Their cost follows their tokens.
    one_cost = "0.131525"  # 0.1315 + 1 output token at 25 per million
    edited_cost = "0.13555"  # 0.1315 + 810 input tokens at 5 per million
    for name, minute, cost in (("one-token", 1, one_cost), ("edited", 2, edited_cost)):
        _close(runs[ids[name]], expected_run(
            ids[name], minute, trust=70.0, under_review=True, duplicate_of=first,
            flags="duplicate", cost_usd=cost, cost_per_success_usd=cost,
            metric_cost_efficiency=float(Decimal(COST) / Decimal(cost)),
        ) | {"score": runs[ids[name]]["score"]})  # fmt: skip
    (group,) = groups
    assert (group["group"], group["runs"], group["under_review_runs"], group["rank"]) == (
        GROUP, 2, 2, None,
    )  # fmt: skip


def test_made_up_reproducers_are_refused_and_the_original_stays_unverified(home, bank):
    # The attack seen on main: three "reproductions" under made-up names, the evidence log
    # copied byte for byte. None of the names is registered, so none is taken.
    ids = submit(home, bank, [("original", run_doc(bank, evidence="original"))])
    target = ids["original"]
    original = run_doc(bank, evidence="original")
    files = {
        f"{name}.json": encode(signed(
            _bump_output(original, 100 * (n + 1)) | {"reproduces": target},
            name, f"{name}-made-up-secret-{'9' * 32}".encode(),
        ))
        for n, name in enumerate(("Mallory", "Trent", "Oscar"))
    }  # fmt: skip
    report = ingest(home, bank, files)
    assert report.accepted == []
    assert {name: fate[1:] for name, fate in file_fates(home).items() if name in files} == {
        f"{name}.json": ("submitter", f"submitter: '{name}' is not a registered submitter")
        for name in ("Mallory", "Trent", "Oscar")
    }
    runs, groups = published(home)
    assert list(runs) == [target]
    _close(runs[target], expected_run(target, 0))  # trust 80, not verified
    assert [(g["runs"], g["under_review_runs"]) for g in groups] == [(1, 0)]


def test_copied_evidence_never_reproduces_a_run(home, bank):
    original = run_doc(bank, evidence="original", submitter="Ada Lovelace")
    ids = submit(home, bank, [("original", original)])
    target = ids["original"]
    log = original["evidence_log"]

    def claim(submitter: str, evidence_log: str, extra_output: int) -> dict[str, Any]:
        """A claim whose output tokens are `extra_output` above the original's: more than
        5% from every other claim's, so none is a duplicate of another (no claimed cost:
        its own cost is what it is)."""
        changed = _bump_output(original, extra_output)
        return changed | {
            "submitter": submitter, "reproduces": target, "evidence_log": evidence_log,
            "evidence_sha256": hashlib.sha256(evidence_log.encode()).hexdigest(),
            "claimed_cost_usd": None,
        }  # fmt: skip

    lines = log.splitlines(keepends=True)
    one_changed = "".join([*lines[:-1], "run original, pass 4: removed 12 rows, checked\n"])
    padded = log + "".join(f"padding line {i}\n" for i in range(40))
    fay_log = own_log("fay")
    claims = [
        ("bob-byte-copy", claim("Bob", log, 300)),
        ("cy-one-line-changed", claim("Cy", one_changed, 500)),
        ("dee-padded", claim("Dee", padded, 700)),
        ("gus-exact-duplicate", claim("Gus", log, 0) | {"claimed_cost_usd": "0.1"}),
        ("hal-empty", claim("Hal", "", 900)),
        ("fay-own", claim("Fay", fay_log, 1100)),
        ("tester-copies-fay", claim("tester", fay_log, 1300)),
    ]
    ids |= submit(home, bank, claims)
    runs, _groups = published(home)
    reasons = {name: runs[ids[name]]["reproduction_reason"] for name, _ in claims}
    assert reasons == {
        "bob-byte-copy": "does not count: its evidence log is a near copy of the original's "
        "(100% of lines shared)",
        "cy-one-line-changed": "does not count: its evidence log is a near copy of the "
        "original's (90% of lines shared)",
        "dee-padded": "does not count: its evidence log is a near copy of the original's "
        "(100% of lines shared)",
        "gus-exact-duplicate": f"does not count: it is a duplicate of {target}",
        "hal-empty": "does not count: it has no evidence log of its own",
        "fay-own": "an independent reproduction",
        "tester-copies-fay": "does not count: its evidence log is a near copy of "
        f"{ids['fay-own']}'s (100% of lines shared)",
    }
    counts = {name: runs[ids[name]]["reproduction_counts"] for name, _ in claims}
    assert counts == {name: name == "fay-own" for name, _ in claims}
    # Only Fay's counted: the original is Verified with trust 80 + 10, not 100.
    _close(runs[target], expected_run(target, 0, trust=90.0, verified=True))
    assert runs[ids["gus-exact-duplicate"]]["flags"] == "duplicate"
    # An empty log: 50 + 10 (no flag), no +20 for a substantial log.
    assert runs[ids["hal-empty"]]["trust"] == 60.0


def test_only_runs_of_proven_submitters_reproduce_each_other(home, bank):
    # Runs stored before submitters were registered (not verified) never count.
    ids = submit(home, bank, [
        ("original", run_doc(bank, evidence="original")),
        ("claim", run_doc(bank, evidence="claim", submitter="Bob")),
    ])  # fmt: skip
    with connect(home / "bench.duckdb") as conn:
        conn.execute("UPDATE submitted_runs SET reproduces = ? WHERE run_id = ?",
                     [ids["original"], ids["claim"]])  # fmt: skip
        conn.execute("UPDATE submitted_runs SET submitter_verified = false WHERE run_id = ?",
                     [ids["original"]])  # fmt: skip
    runs, _ = published(home)
    assert runs[ids["claim"]]["reproduction_reason"] == (
        "does not count: both runs must be signed by registered submitters"
    )
    _close(runs[ids["original"]], expected_run(ids["original"], 0))


# Cost ----------------------------------------------------------------------------------------


def test_an_absurd_claimed_cost_is_flagged_with_or_without_a_rate(home, bank):
    unpriced = {"name": "acme/unknown-1", "settings": {"thinking": "high"}}
    # valid()'s 27,000 input + 1,300 output tokens at $10,000 per million (MAX_USD_PER_M):
    # $283 is the dearest those tokens could cost.
    bound = (27_000 + 1_300) * MAX_USD_PER_M / 1_000_000
    assert bound == 283
    ids = submit(home, bank, [
        ("absurd", run_doc(bank, evidence="absurd", model=unpriced,
                           claimed_cost_usd="1000000000000000")),
        ("at-bound", run_doc(bank, evidence="at-bound", model=unpriced, claimed_cost_usd="283")),
        ("past-bound", run_doc(bank, evidence="past", model=unpriced, claimed_cost_usd="283.01")),
        ("priced-absurd", run_doc(bank, evidence="priced", claimed_cost_usd=1e15)),
    ])  # fmt: skip
    runs, groups = published(home)
    unpriced_group = "acme/unknown-1 · thinking=high"

    def expected(name: str, minute: int, flags: str) -> dict[str, Any]:
        # No rate: no cost, cost efficiency 0 → score 92.5 − 15 = 77.5; trust 50 + 20
        # (+10 without a flag) − 5 for the model_unpriced warning.
        trust = 65.0 if flags else 75.0
        return expected_run(
            ids[name], minute, group=unpriced_group, model="acme/unknown-1",
            cost_usd=None, cost_per_success_usd=None, metric_cost_efficiency=0.0, score=77.5,
            warnings="model_unpriced", flags=flags, under_review=bool(flags), trust=trust,
        )  # fmt: skip

    _close(runs[ids["absurd"]], expected("absurd", 0, "implausible_cost"))
    _close(runs[ids["at-bound"]], expected("at-bound", 1, ""))
    _close(runs[ids["past-bound"]], expected("past-bound", 2, "implausible_cost"))
    _close(runs[ids["priced-absurd"]], expected_run(
        ids["priced-absurd"], 3, flags="cost_mismatch,implausible_cost", under_review=True,
        trust=70.0,
    ))  # fmt: skip
    by_group = {g["group"]: (g["runs"], g["under_review_runs"]) for g in groups}
    assert by_group == {unpriced_group: (1, 2), GROUP: (0, 1)}


# The offline demo ----------------------------------------------------------------------------


def test_the_demo_signs_with_its_own_secret_which_the_real_intake_refuses(home, bank):
    from bench_pipeline.runs.demo_submissions import DEMO_SUBMITTER
    from bench_pipeline.runs.submitters import demo_submitters

    path = home / "build" / "demo" / "submitters.toml"
    demo = demo_submitters(path, DEMO_SUBMITTER)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert demo_submitters(path, DEMO_SUBMITTER) == demo  # made once, then read
    assert len(demo.secrets[DEMO_SUBMITTER]) == 64
    assert demo.secrets[DEMO_SUBMITTER].decode() not in repr(demo)  # never printed
    other = demo_submitters(home / "elsewhere" / "submitters.toml", DEMO_SUBMITTER)
    assert other.secrets != demo.secrets  # made at demo time: no shared, committed secret
    # A file signed with the demo's secret is not taken by the real intake.
    forged = signed(run_doc(bank), DEMO_SUBMITTER, demo.secrets[DEMO_SUBMITTER])
    report = ingest(home, bank, {"demo.json": encode(forged)}, register(home))
    assert [r.reason for r in report.rejected] == [
        f"submitter: {DEMO_SUBMITTER!r} is not a registered submitter"
    ]


def test_a_signed_file_parses_and_keeps_its_signature(bank):
    document = sign(for_bank(bank, valid(criteria=ALL_PASS)))
    parsed = parse_submission(encode(document))
    assert parsed.submitter == SUBMITTER and parsed.signature == document["signature"]
    assert parsed.model.name == OPUS


def test_bench_run_says_how_many_files_wait_for_the_submitters_file(home, bank, monkeypatch):
    from bench_pipeline.cli.summary import waiting_lines

    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.delenv("BENCH_SUBMITTERS", raising=False)
    inbox = settings.submissions_inbox()
    inbox.mkdir(parents=True)
    (inbox / "run.json").write_bytes(encode(sign(run_doc(bank))))
    with connect(home / "bench.duckdb") as conn:
        ingest_inbox(lambda: nullcontext(conn), inbox, bank, now=AS_OF)  # the default file
        assert waiting_lines(conn) == [
            f"  1 waiting, not yet judged: no submitters file at {home / 'submitters.toml'} "
            "(BENCH_SUBMITTERS)"
        ]
        register(home)
        assert waiting_lines(conn) == []
        report = ingest_inbox(lambda: nullcontext(conn), inbox, bank, now=AS_OF)
    assert len(report.accepted) == 1
