"""Receipts (seed 002), the PM judge's work beside each run (seed 000), the "Measures the
model / system" mark and the disclosures page, on a real small pipeline (`receipts_stage`):
two setups' simulated PM and Navigator runs, graded, reviewed, scored, released, rendered."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from receipts_stage import SUBMITTED, Stage, build_stage

from bench_pipeline.cli.review import review_session
from bench_pipeline.core.warehouse import connect
from bench_pipeline.grading.review_model import Review
from bench_pipeline.grading.review_store import awaiting_second_look, review_queue, submit_review
from bench_pipeline.release.receipts import (
    ReceiptLeak,
    assemble,
    held_receipts,
    public_receipt_runs,
    refuse_secrets,
)
from bench_pipeline.site import build_site, disclosures
from bench_pipeline.site.disclosures import SECTIONS, DisclosuresError, load_disclosures
from bench_pipeline.site.swap import publish_site
from bench_pipeline.taskbank import UnitTestsCheck, canonical_json, load_bank, private_texts
from bench_pipeline.taskbank.privacy import secret_texts
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.store

OUTPUT_BLOCK = re.compile(r'<pre class="verbatim" id="output">.*?</pre>', re.S)
REAL_DISCLOSURES = Path(__file__).parent.parent / "site" / "disclosures.toml"


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Stage:
    return build_stage(tmp_path_factory.mktemp("receipts"))


def _json(stage: Stage, table: str) -> list[dict]:
    return json.loads((stage.release / "data" / f"{table}.json").read_text(encoding="utf-8"))


def _receipts(stage: Stage) -> dict[str, dict]:
    return {r["run_id"]: r for r in _json(stage, "receipts")}


def _private_cases() -> set[str]:
    return {c.id for c in load_bank() if c.private}


def _awaiting(stage: Stage) -> set[str]:
    """Runs whose second look waits for a person: their receipts are held."""
    return {run for (run,) in stage.query("SELECT DISTINCT run_id FROM second_look")}


# --- item 1: receipts ------------------------------------------------------------------------


def test_every_published_pm_run_of_a_public_case_has_one_receipt_and_a_page(stage: Stage) -> None:
    published = stage.query("SELECT run_id, case_id FROM pm_runs WHERE published")
    private = [run for run, case in published if case in _private_cases()]
    assert private, "the stage must publish runs of a private case, to show they get none"
    public = {run for run, case in published if case not in _private_cases()}
    receipts = _receipts(stage)
    assert public & _awaiting(stage), "the stage must hold a receipt for a second look"
    assert {r for r, row in receipts.items() if row["suite"] == "pm"} == public - _awaiting(stage)
    assert not set(private) & set(receipts)
    for run_id in receipts:
        assert (stage.site / "receipts" / f"{run_id}.html").is_file(), run_id
    for run_id in private:
        assert not (stage.site / "receipts" / f"{run_id}.html").exists()


def test_navigator_receipts_are_the_runs_the_board_scored(stage: Stage) -> None:
    receipts = [r for r in _receipts(stage).values() if r["suite"] == "navigator"]
    (runs,) = stage.query("SELECT sum(runs) FROM navigator_models")[0]
    (held_out,) = stage.query(
        "SELECT count(*) FROM model_runs WHERE suite = 'navigator' AND list_contains(?, case_id)",
        [sorted(_private_cases())],
    )[0]
    assert held_out > 0  # scored on the board, never on a receipt
    assert len(receipts) + held_out == runs  # a split judge pair is no score: no receipt
    assert not {r["case_id"] for r in receipts} & _private_cases()
    scripted = [r for r in receipts if r["script_versions"]]
    judged = [r for r in receipts if r["judge_models"]]
    assert scripted and judged
    assert all(len(r["judge_models"].split(", ")) == 2 for r in judged)  # two companies


def test_a_submitted_run_has_a_receipt_with_its_own_criteria_and_the_held_out_one_none(
    stage: Stage,
) -> None:
    board = dict(stage.query("SELECT run_id, use_case FROM usecase_runs"))
    assert set(board.values()) == set(SUBMITTED)  # both counted on the board
    receipts = [r for r in _receipts(stage).values() if r["suite"] == "usecase"]
    (receipt,) = receipts
    assert board[receipt["run_id"]] == "uc-csv-dedupe" and receipt["reviewer"] == "tester"
    assert receipt["input"] == load_bank().get("usecase", "uc-csv-dedupe").brief
    assert receipt["judge_cost_usd"] is None and receipt["total_cost_usd"] is None
    claimed = {
        s["criterion"]: s["outcome"]
        for s in _json(stage, "receipt_scores")
        if s["run_id"] == receipt["run_id"]
    }
    assert claimed == SUBMITTED["uc-csv-dedupe"]
    held_out = next(r for r, case in board.items() if case == "uc-holdout-01")
    assert not (stage.site / "receipts" / f"{held_out}.html").exists()
    assert held_out not in (stage.site / "receipts" / "index.html").read_text(encoding="utf-8")


def test_scores_per_criterion_and_graders_are_the_stored_grades(stage: Stage) -> None:
    receipts = _receipts(stage)
    scores = _json(stage, "receipt_scores")
    stored = {
        (run, question, grader): outcome
        for run, question, grader, outcome in stage.query(
            "SELECT run_id, question, grader, outcome FROM grades WHERE NOT sentinel "
            "AND grader_kind = 'judge' AND question <> 'blind_score'"
        )
    }
    judged = [s for s in scores if s["grader_kind"] == "judge"]
    assert judged and all(
        stored[(s["run_id"], s["criterion"], s["grader"])] == s["outcome"] for s in judged
    )
    assert {s["run_id"] for s in scores} <= set(receipts)
    pm = next(r for r in receipts.values() if r["suite"] == "pm" and r["judge_answer"])
    pm_rows = [s for s in scores if s["run_id"] == pm["run_id"] and s["grader_kind"] == "judge"]
    assert len(pm_rows) >= 8 and all(s["question"] for s in pm_rows)  # PM rubric is public
    assert {s["rubric_version"] for s in pm_rows} == set(pm["rubric_versions"].split(", "))
    (reviewer,) = stage.query("SELECT reviewer FROM reviews WHERE run_id = ?", [pm["run_id"]])[0]
    assert pm["reviewer"] == reviewer
    setups = load_setups()
    sent = {run: (h, m) for run, h, m in stage.query(
        "SELECT run_id, request_hash, max_tokens FROM model_runs")}  # fmt: skip
    for run_id, receipt in receipts.items():
        if run_id in sent:  # the receipt's input is exactly what the run was sent
            request = setups.get(receipt["setup_id"]).chat_request(
                receipt["input"], sent[run_id][1]
            )
            if receipt["repeat"]:  # a repeat carries its number as the seed (runs/plan.py)
                request = request.model_copy(
                    update={"extra": {**request.extra, "seed": receipt["repeat"]}}
                )
            assert request.request_hash() == sent[run_id][0], run_id
            system = [m.content for m in request.messages if m.role == "system"]
            assert system == ([receipt["system_instructions"]] if system else []), run_id
    assert any(r["system_instructions"] for r in receipts.values())
    scored = stage.query("SELECT run_id, pm_score FROM pm_runs WHERE published")
    assert all(receipts[r]["score"] == s for r, s in scored if r in receipts)


def test_costs_are_the_seeds_three_figures(stage: Stage) -> None:
    judge_costs = dict(
        stage.query(
            "SELECT run_id, sum(judge_cost_usd) FROM grades WHERE NOT sentinel "
            "AND judge_cost_usd IS NOT NULL GROUP BY 1"
        )
    )
    candidate = dict(
        stage.query(
            "SELECT run_id, cost_usd FROM model_runs "
            "UNION ALL SELECT run_id, cost_usd FROM submitted_runs"
        )
    )
    totals = 0
    for run_id, receipt in _receipts(stage).items():
        assert Decimal(receipt["candidate_cost_usd"]) == candidate[run_id]
        judge = judge_costs.get(run_id)
        assert (receipt["judge_cost_usd"] is None) == (judge is None), run_id
        if judge is None:
            assert receipt["total_cost_usd"] is None  # no judge cost recorded: no total
            continue
        assert Decimal(receipt["judge_cost_usd"]) == judge
        assert Decimal(receipt["total_cost_usd"]) == candidate[run_id] + judge
        totals += 1
    assert totals > 0
    assert any(r["judge_cost_usd"] is None for r in _receipts(stage).values())  # scripted only


def test_board_rows_link_to_their_setups_receipts(stage: Stage) -> None:
    index = (stage.site / "receipts" / "index.html").read_text(encoding="utf-8")
    for page, labels in (
        ("pm-suite.html", [r[0] for r in stage.query("SELECT setup FROM pm_setups")]),
        ("navigator.html", [r[0] for r in stage.query("SELECT model FROM navigator_models")]),
    ):
        html = (stage.site / page).read_text(encoding="utf-8")
        anchors = re.findall(r'class="receipts" href="receipts/index.html#([^"]+)"', html)
        assert len(anchors) == len(labels) > 0, page
        for anchor in anchors:
            assert f'id="{anchor}"' in index, anchor
    for run_id in _receipts(stage):
        assert f'href="../receipts/{run_id}.html"' in index


# --- second looks stay blind ------------------------------------------------------------------


def test_no_second_look_is_offered_while_its_receipt_is_public(
    stage: Stage, tmp_path: Path
) -> None:
    database = tmp_path / "bench.duckdb"
    shutil.copy(stage.database, database)
    bank = load_bank()
    with connect(database) as conn:
        public = public_receipt_runs(conn)
        awaiting = set(awaiting_second_look(conn))
        queue = review_queue(
            conn, bank, "Ada Reviewer", include_simulated=True, public_receipts=public
        )
    assert public == set(_receipts(stage))  # the stage's one release
    looks = {item.run_id for item in queue if item.why != "pm review"}
    assert looks == awaiting and looks  # every second look is offered, its receipt held ...
    assert not {item.run_id for item in queue} & public  # ... and no run with a public receipt

    # A second look found after its run's receipt was published (a score gap raised by a
    # later review) cannot be blind: it is not offered, and the receipt stays published.
    late = sorted(public)[0]
    found = datetime.now(UTC) + timedelta(minutes=1)
    with connect(database) as conn:
        conn.execute(
            "INSERT INTO second_look VALUES (?, 'score_gap', 'late', ?)",
            [late, found.replace(tzinfo=None)],
        )
        assert late in awaiting_second_look(conn) and late not in held_receipts(conn)
        queue = review_queue(
            conn, bank, "Ada Reviewer", include_simulated=True, public_receipts=public
        )
        assert late not in {item.run_id for item in queue}

        # Once a person's review of a held run is stored, its receipt is published again.
        (held,) = conn.execute(
            "SELECT min(run_id) FROM pm_runs WHERE published AND list_contains(?, run_id) "
            "AND NOT list_contains(?, case_id)",
            [sorted(held_receipts(conn)), sorted(_private_cases())],
        ).fetchall()[0]
        assert held is not None
        assert held not in {r["run_id"] for r in assemble(conn, bank)[0]}
        review = Review(run_id=held, reviewer="Ada Reviewer", score=3, understood="u",
                        missed="m", decisive_reason="d")  # fmt: skip
        submit_review(conn, review, bank, now=found + timedelta(minutes=1))
        assert held not in held_receipts(conn)
        assert held in {r["run_id"] for r in assemble(conn, bank)[0]}

    # `bench review` says why the late second look is not offered.
    screen = io.StringIO()
    assert review_session(lambda: connect(database), bank, "Bo Reviewer", out=screen) == 0
    assert screen.getvalue().startswith(
        "1 second looks are not offered: their runs' receipts were published before"
    )


# --- the privacy search ----------------------------------------------------------------------


def _receipt_texts(stage: Stage) -> Iterator[tuple[str, str]]:
    """(where, text) for every cell of every receipt file of the release (JSON, CSV and
    Parquet) and every receipt page, all but the run's output (an answer may rightly contain
    what its check expects)."""
    for table in ("receipts", "receipt_scores"):
        data = stage.release / "data"
        for row in _json(stage, table):
            yield from ((f"{table}.json", str(v)) for k, v in row.items() if k != "output")
        with (data / f"{table}.csv").open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                yield from ((f"{table}.csv", v) for k, v in row.items() if k != "output")
        frame = pl.read_parquet(data / f"{table}.parquet").drop("output", strict=False)
        for row in frame.iter_rows():
            yield from ((f"{table}.parquet", str(v)) for v in row)
    for page in sorted((stage.site / "receipts").glob("*.html")):
        yield page.name, OUTPUT_BLOCK.sub("", page.read_text(encoding="utf-8"))


def _leaks(texts: Iterator[tuple[str, str]], secrets: list[str]) -> list[tuple[str, int]]:
    return [
        (where, number)
        for where, text in texts
        for unescaped in [html.unescape(text)]
        for number, secret in enumerate(secrets)
        if secret in text or secret in unescaped
    ]


def test_no_receipt_holds_an_answer_key_a_hidden_test_or_a_private_text(stage: Stage) -> None:
    bank = load_bank()
    secrets = secret_texts(bank)
    # the list is the bank's own secrets: hidden tests, judge rubrics, private case texts
    hidden = [
        canonical_json(call.model_dump(mode="json"))
        for c in bank
        for i in c.inputs
        if isinstance(i.check, UnitTestsCheck)
        for call in i.check.calls
    ]
    assert hidden and set(hidden) <= set(secrets)
    assert set(private_texts(bank)) <= set(secrets)
    judged = [r.question for c in bank for i in c.inputs if i.check.kind == "judge"
              for r in i.check.rubric]  # fmt: skip
    assert judged and set(judged) <= set(secrets)
    assert _leaks(_receipt_texts(stage), secrets) == []
    # and the search finds a leak where there is one
    page = next((stage.site / "receipts").glob("r*.html")).read_text(encoding="utf-8")
    planted = page.replace("</h1>", f"</h1><p>{hidden[0]}</p>")
    assert _leaks(iter([("planted", planted)]), secrets) == [("planted", secrets.index(hidden[0]))]


def test_the_release_refuses_a_receipt_that_would_leak_a_secret() -> None:
    secrets = secret_texts(load_bank())
    hidden = next(s for s in secrets if s.startswith('{"args":'))  # a hidden test
    refuse_secrets([{"run_id": "r1", "output": f"my answer {hidden}"}], secrets)  # output: fine
    with pytest.raises(ReceiptLeak, match=r"run r1, field judge_reasoning"):
        refuse_secrets([{"run_id": "r1", "judge_reasoning": f"expected {hidden}"}], secrets)


# --- item 2: the LLM judge's work beside each PM run -----------------------------------------


def test_pm_receipts_carry_the_judges_answer_reasoning_and_unfound_claims(stage: Stage) -> None:
    receipts = _receipts(stage)
    stored = stage.query(
        "SELECT run_id, score, reason, details FROM grades WHERE question = 'blind_score' "
        "AND NOT sentinel"
    )
    shown = [row for row in stored if row[0] in receipts]
    assert shown
    for run_id, score, reason, details in shown:
        receipt, kept = receipts[run_id], json.loads(details)
        assert receipt["judge_answer"] == int(score) and receipt["judge_reasoning"] == reason
        assert kept["claims_graded"] is True  # whether the claims check was read is stored
        assert receipt["claims_checked"] == kept["claims_checked"] >= 0
        assert json.loads(receipt["claims_not_found"]) == kept["claims_not_found"]
    with_claims = next(r for r, *_ in shown if json.loads(receipts[r]["claims_not_found"]))
    page = (stage.site / "receipts" / f"{with_claims}.html").read_text(encoding="utf-8")
    assert 'id="judge-work"' in page and 'id="claims-not-found"' in page
    first = json.loads(receipts[with_claims]["claims_not_found"])[0]
    assert first.replace("'", "&#39;") in page
    prototypes = [r for r in receipts.values() if r["suite"] == "pm" and r["judge_answer"] is None]
    assert prototypes and all(r["judge_reasoning"] is None for r in prototypes)


# --- item 5: Measures the model / Measures the system ----------------------------------------


def test_every_task_board_and_receipt_says_what_it_measures(stage: Stage) -> None:
    bank = load_bank()
    tasks = {(t["suite"], t["case_id"]): t["measures"] for t in _json(stage, "tasks")}
    public = {(c.suite, c.id): c for c in bank if not c.private}
    assert set(tasks) == set(public)
    assert all(tasks[key] == case.measured for key, case in public.items())
    pm = {c.id: c.measures for c in bank.suite("pm") if not c.private}
    assert set(pm.values()) == {"model", "system"}  # the PM bank uses both marks
    assert all(tasks[("pm", case)] == kind for case, kind in pm.items())
    assert {tasks[k] for k in tasks if k[0] == "navigator"} == {"model"}
    assert {tasks[k] for k in tasks if k[0] == "usecase"} == {"system"}
    listing = (stage.site / "tasks.html").read_text(encoding="utf-8")
    for (suite, case_id), kind in tasks.items():
        row = re.search(rf'<tr id="{suite}-{case_id}">.*?</tr>', listing, re.S)
        assert row and f"Measures the {kind}" in row.group(0), case_id
    for page, suite in (("pm-suite.html", "pm"), ("navigator.html", "navigator")):
        html = (stage.site / page).read_text(encoding="utf-8")
        counts = {k: list(tasks.values()).count(k) for k in ("model", "system")}
        counts = {k: sum(1 for (s, _), v in tasks.items() if s == suite and v == k) for k in counts}
        for kind, n in counts.items():
            if n:
                assert f"Measures the {kind}: {n} task" in html, (page, kind)
    for run_id, receipt in _receipts(stage).items():
        assert receipt["measures"] == tasks[(receipt["suite"], receipt["case_id"])]
        page = (stage.site / "receipts" / f"{run_id}.html").read_text(encoding="utf-8")
        assert f'id="measures">Measures the {receipt["measures"]}<' in page


# --- item 10: disclosures --------------------------------------------------------------------


def test_the_disclosures_page_renders_every_section_and_every_page_links_it(stage: Stage) -> None:
    disclosures = load_disclosures(REAL_DISCLOSURES)
    page = (stage.site / "disclosures.html").read_text(encoding="utf-8")
    for heading, statements in disclosures.sections():
        assert f"<h2>{heading}</h2>" in page
        assert all(s.replace("'", "&#39;") in page for s in statements)
    pages = list(stage.site.rglob("*.html"))
    assert len(pages) > 50
    for html_page in pages:
        root = "../" * (len(html_page.relative_to(stage.site).parts) - 1)
        assert f'href="{root}disclosures.html"' in html_page.read_text(encoding="utf-8"), html_page


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "disclosures.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = REAL_DISCLOSURES.read_text(encoding="utf-8")


@pytest.mark.parametrize("field", [name for name, _ in SECTIONS] + ["updated", "responsible"])
def test_a_disclosures_file_missing_a_field_names_the_file_and_field(
    tmp_path: Path, field: str
) -> None:
    lines = GOOD.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{field} ="))
    end = start + 1
    if lines[start].endswith("["):
        end = next(i for i in range(start, len(lines)) if lines[i] == "]") + 1
    path = _write(tmp_path, "\n".join(lines[:start] + lines[end:]))
    with pytest.raises(DisclosuresError, match=rf"{re.escape(str(path))}: field `{field}`"):
        load_disclosures(path)


def test_a_malformed_or_missing_disclosures_file_is_refused_by_name(tmp_path: Path) -> None:
    empty = _write(tmp_path, GOOD.replace('"No one who runs', '"   ", "No one who runs'))
    with pytest.raises(DisclosuresError, match=r"field `conflicts.0`"):
        load_disclosures(empty)
    with pytest.raises(DisclosuresError, match=r"field `funding`: .*at least 1"):
        load_disclosures(_write(tmp_path, re.sub(r"funding = \[.*?\n\]", "funding = []", GOOD,
                                                 flags=re.S)))  # fmt: skip
    with pytest.raises(DisclosuresError, match=r"field `sponsor`"):
        load_disclosures(_write(tmp_path, GOOD + '\nsponsor = ["typo"]\n'))
    with pytest.raises(DisclosuresError, match=r"not readable TOML"):
        load_disclosures(_write(tmp_path, GOOD + "\nfunding = [unclosed\n"))
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(DisclosuresError, match=rf"{re.escape(str(missing))}: missing"):
        load_disclosures(missing)


def test_a_broken_disclosures_file_stops_the_site_and_leaves_the_published_one(
    stage: Stage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    releases = stage.release.parent

    def build(folder: Path):
        return build_site(stage.release, folder, releases)

    publish_site(site, build)
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*.html")}
    broken = _write(tmp_path, GOOD.replace("who_pays =", "who_pays_for_runs ="))
    monkeypatch.setattr(disclosures, "DISCLOSURES", broken)
    with pytest.raises(DisclosuresError, match=rf"{re.escape(str(broken))}: field `who_pays`"):
        publish_site(site, build)
    assert {p.relative_to(site): p.read_bytes() for p in site.rglob("*.html")} == before
