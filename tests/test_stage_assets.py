"""Every stage's assets materialised with `dagster.materialize` and offline resources, in one
BENCH_HOME, in the order `bench run` runs them: inputs (sources, registry, indices), model
runs, grading, scores, then release, site and the analyst copy. Each test reads one stage's
results; the offline browser replays a recorded inspection for one prototype and sends the
other to a person."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from stages import INPUT_ASSETS, database_of, materialize_in

from bench_pipeline.assets.grading import GRADING_ASSETS, GRADING_CHECKS
from bench_pipeline.assets.publish import analyst_copy
from bench_pipeline.assets.release import release_checks, release_dataset
from bench_pipeline.assets.runs import RUN_ASSETS, model_runs
from bench_pipeline.assets.scores import SCORE_ASSETS
from bench_pipeline.assets.site import static_site
from bench_pipeline.core.warehouse import connect
from bench_pipeline.grading.browser import BrowserReport, GoalResult
from bench_pipeline.grading.browser_offline import OFFLINE_GRADER, record
from bench_pipeline.grading.store import runs_to_grade
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.runs.plan import setup_partition_key
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.assets

PROTOTYPES = Path(__file__).parent / "fixtures" / "prototypes"
PROTOTYPE_CASE = "pm-proto-usage-dashboard"
SETUPS = ("s271688162bc6196c", "s9ae95bb7ba37ef42")
CASES = (
    "pm:pm-delay-update",  # a written PM task: the PM judge
    "pm:pm-proto-usage-dashboard",  # a prototype: a judge and the browser
    "navigator:nav-coding-json-repair",  # scripted exact-fields checks, no sandbox
)
RECORDED = BrowserReport(
    outcome="fail",
    reason="0 of 1 decidable goals pass (recorded for this test)",
    needs_person=False,
    goals=(GoalResult("headline_shown", "fail", "the headline is not shown (recorded)"),),
    measures=None,
    screenshot_path=None,
    blocked_requests=(),
    page_errors=(),
    elapsed_seconds=1.5,
)


def outcomes(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    """Each materialised asset's metadata, by asset key."""
    return {
        event.asset_key.to_user_string(): {k: v.value for k, v in event.metadata.items()}
        for event in result.get_asset_materialization_events()
        for event in [event.event_specific_data.materialization]
    }


@dataclasses.dataclass
class Pipeline:
    home: Path
    inputs: dict[str, dict]
    runs: dict[str, dict]
    partitions: list[str]
    grading: dict[str, dict]
    recorded_run: str
    scores: dict[str, dict]
    publish: dg.ExecuteInProcessResult

    def query(self, sql: str) -> list[tuple]:
        with duckdb.connect(str(database_of(self.home)), read_only=True) as conn:
            return conn.execute(sql).fetchall()


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    home = tmp_path_factory.mktemp("stages")
    instance = dg.DagsterInstance.ephemeral()  # the partitions task_bank registers live here
    inbox = home / "inbox" / "submissions"
    inbox.mkdir(parents=True)
    (inbox / "broken.json").write_text("{ not json", encoding="utf-8")

    inputs = outcomes(materialize_in(home, INPUT_ASSETS))
    runs = outcomes(
        materialize_in(home, [a for a in RUN_ASSETS if a is not model_runs], instance=instance)
    )
    registered = instance.get_dynamic_partitions("model_runs")
    named = {s.setup_id: setup_partition_key(s) for s in load_setups().setups}
    partitions = [named[setup] for setup in SETUPS]
    assert set(partitions) <= set(registered)
    only = {"ops": {"runs__model_runs": {"config": {"cases": list(CASES)}}}}
    for key in partitions:
        runs |= outcomes(
            materialize_in(
                home, [model_runs], instance=instance, partition_key=key, run_config=only
            )
        )

    # Each setup's prototype run is given a fixture page of its own in place of its simulated
    # page, so what the browser reports is known exactly.
    # One page's inspection is recorded (as a Chromium run would have kept it); the other
    # page has none.
    with connect(database_of(home)) as conn:
        for setup, page in zip(SETUPS, ("plain.html", "gradients.html"), strict=True):
            conn.execute(
                "UPDATE model_runs SET output = ? WHERE setup_id = ? AND case_id = ?",
                [(PROTOTYPES / page).read_text(encoding="utf-8"), setup, PROTOTYPE_CASE],
            )
        waiting = runs_to_grade(conn, load_bank())
        setup_of = dict(conn.execute("SELECT run_id, setup_id FROM model_runs").fetchall())
    prototype = next(r for r in waiting if r.case.prototype and setup_of[r.run_id] == SETUPS[0])
    record(home / "cache" / "browser", prototype.blind_output, prototype.case.browser_checks,
           RECORDED)  # fmt: skip

    grading = outcomes(materialize_in(home, [*GRADING_ASSETS, *GRADING_CHECKS]))
    scores = outcomes(materialize_in(home, SCORE_ASSETS))
    publish = materialize_in(home, [release_dataset, *release_checks, static_site, analyst_copy])
    return Pipeline(
        home, inputs, runs, partitions, grading, prototype.run_id, scores, publish
    )  # fmt: skip


def test_inputs_ingest_every_recorded_source_and_build_the_indices(pipeline: Pipeline) -> None:
    for name in source_definitions():
        assert pipeline.inputs[f"{name}/live"]["status"] == "accepted", name
    assert pipeline.inputs["registry/models"]["models rows"] > 0
    assert pipeline.inputs["indices/known_good_index"]["eligible_models"] > 0
    assert pipeline.inputs["market/market_data"]["market rows"] > 0
    assert pipeline.inputs["arena/arena_elo"]["rows"] > 0


def test_model_runs_answer_each_partition_and_the_inbox_records_a_bad_file(
    pipeline: Pipeline,
) -> None:
    assert len(pipeline.partitions) == len(SETUPS)  # one partition per setup, by its name
    assert all("@" in key and not key.startswith("s") for key in pipeline.partitions)
    assert pipeline.runs["runs/task_bank"]["new partitions"] > len(pipeline.partitions)
    stored = pipeline.query("SELECT DISTINCT setup_id, suite || ':' || case_id FROM model_runs")
    assert set(stored) == {(setup, case) for setup in SETUPS for case in CASES}
    assert pipeline.runs["runs/model_runs"]["model mode"] == "simulated"
    assert pipeline.runs["runs/model_runs"]["failed runs"] == 0
    submitted = pipeline.runs["runs/submitted_runs"]
    assert (submitted["accepted"], submitted["rejected"]) == (0, 1)
    assert [Path(name).name for name in submitted["rejections"]] == ["broken.json"]


def test_grading_grades_every_run_and_the_offline_browser_replays_or_asks_a_person(
    pipeline: Pipeline,
) -> None:
    grades = pipeline.grading["grading/grades"]
    assert grades["browser"] == "offline" and grades["simulated"] is True
    assert grades["runs graded"] == pipeline.query("SELECT count(*) FROM model_runs")[0][0]
    ungraded = pipeline.query(
        "SELECT count(*) FROM model_runs r WHERE NOT EXISTS "
        "(SELECT 1 FROM grades g WHERE g.run_id = r.run_id)"
    )
    assert ungraded == [(0,)]
    browser = dict(
        (run_id, (outcome, reason, grader))
        for run_id, outcome, reason, grader in pipeline.query(
            "SELECT run_id, outcome, reason, grader FROM grades WHERE grader_kind = 'browser'"
        )
    )
    assert browser.pop(pipeline.recorded_run) == (
        RECORDED.outcome,
        RECORDED.reason,
        RECORDED.grader,
    )
    assert browser, "the second setup's prototype was graded too"
    for outcome, reason, grader in browser.values():
        assert (outcome, grader) == ("inconclusive", OFFLINE_GRADER)
        assert reason.startswith("offline inspector: no recorded inspection")
    reviews = pipeline.grading["grading/reviews"]
    assert reviews["simulated reviews added"] > 0


def test_scores_build_each_board_from_the_graded_runs(pipeline: Pipeline) -> None:
    assert set(pipeline.scores) == {
        "scores/pm_suite",
        "scores/usecase_rank",
        "scores/navigator_index",
        "scores/item_boards",
        "scores/pm_checks",
    }
    assert pipeline.scores["scores/item_boards"]["item_boards rows"] > 0  # the SWE-bench board
    # their cards: the two SWE-bench boards and the inspect_ai popularity logs' board
    assert pipeline.scores["scores/item_boards"]["item_board_cards rows"] == 3
    assert pipeline.scores["scores/pm_checks"]["pm_task_admission rows"] > 0
    assert pipeline.scores["scores/pm_suite"]["pm_runs rows"] > 0
    assert pipeline.scores["scores/navigator_index"]["navigator_models rows"] > 0


def test_release_site_and_analyst_copy_publish_with_their_checks_passing(
    pipeline: Pipeline,
) -> None:
    published = outcomes(pipeline.publish)
    release = published["release/dataset"]
    assert release["created"] is True
    latest = pipeline.home / "build" / "releases" / "latest"
    assert latest.read_text().strip() == release["release_id"]
    checks = pipeline.publish.get_asset_check_evaluations()
    assert {c.check_name for c in checks} == {
        "latest_release_matches_manifest",
        "release_has_no_private_text",
    }
    assert all(c.passed for c in checks), [(c.check_name, c.metadata) for c in checks]
    assert published["site/static_site"]["release_id"] == release["release_id"]
    assert (pipeline.home / "build" / "site" / "index.html").exists()
    copy = Path(published["warehouse/analyst_copy"]["path"])
    with duckdb.connect(str(copy), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM grades").fetchall()[0][0] > 0
    manifest = json.loads((pipeline.home / "build" / "releases" / release["release_id"] /
                           "manifest.json").read_text())  # fmt: skip
    assert {t["name"] for t in manifest["tables"]} >= {"pm_runs", "navigator_models"}
