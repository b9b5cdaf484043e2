"""Grading: a cycle over every run not graded yet, then people's reviews and calibration.

The calibration check is blocking: when judges and people agree on less than 85% of the
runs both graded, the scores and the release below it are not built.
"""

from datetime import UTC, datetime

import dagster as dg

from bench_pipeline.assets.metadata import table_asset_metadata, table_metadata, timed
from bench_pipeline.assets.runs import MODEL_RUNS_KEY
from bench_pipeline.assets.versions import outside_metadata, tables_version
from bench_pipeline.core import settings
from bench_pipeline.grading.calibration import gate_verdict
from bench_pipeline.grading.rounds import grade_pending, review_round
from bench_pipeline.resources.browser import BrowserResource
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.sandbox import SandboxResource
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.shared import configured_store, merge_into_warehouse
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

GROUP = "grading"
GRADES_KEY = dg.AssetKey(["grading", "grades"])
REVIEWS_KEY = dg.AssetKey(["grading", "reviews"])


@dg.asset(
    key=GRADES_KEY,
    deps=[MODEL_RUNS_KEY],
    group_name=GROUP,
    kinds={"duckdb"},
    owners=["team:grading"],
    description=(
        "One grading cycle over every run not graded yet: scripted checks, blinded judges "
        "(never the candidate's company; two companies for Navigator), the browser "
        "resource (Chromium) for prototypes, and sentinels mixed in. Grades are only ever "
        "added, never changed."
    ),
)
@timed
def grades(
    context: dg.AssetExecutionContext,
    warehouse: WarehouseResource,
    models: ModelCallsResource,
    browser: BrowserResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    store = configured_store()
    merged: dict[str, int | float] = {}
    if store is not None:  # runs made on many machines: into the warehouse first
        report = merge_into_warehouse(store, warehouse.connection)
        store.close()
        merged = {"runs merged from the run store": report.merged,
                  "failures merged from the run store": report.failures,
                  "merge seconds": round(report.seconds, 3)}  # fmt: skip
        context.log.info(
            f"merged {report.merged} runs and {report.failures} failures from {store.address}"
        )
    with warehouse.connection() as conn:
        outside = outside_metadata(GRADES_KEY, conn) | merged
    graded = grade_pending(
        warehouse.connection,
        models.providers(),
        inspector=browser.inspector(),
        sandbox=sandbox.sandbox(),
        bank=load_bank(),
        setups=load_setups(),
        now=datetime.now(UTC),
        screenshots=settings.bench_home() / "build" / "screenshots",
        concurrency=models.concurrency,
    )
    with warehouse.connection() as conn:
        version = tables_version(conn, ["grades"])
        outside |= table_asset_metadata(conn, "grades")
    if graded.cycle_id is None:
        return dg.MaterializeResult(metadata={"runs graded": 0, **outside}, data_version=version)
    result = graded.result
    with warehouse.connection() as conn:
        metadata = table_metadata(conn, "grades") | outside
    flagged = sorted({f["judge"] for f in result.flags})
    context.log.info(
        f"cycle {graded.cycle_id}: {len(graded.runs)} runs, judges flagged: {flagged or 'none'}"
    )
    return dg.MaterializeResult(
        metadata=metadata
        | {
            "cycle": graded.cycle_id,
            "runs graded": len(graded.runs),
            "grades": len(result.grades),
            "judges": dg.MetadataValue.json(sorted(result.judges)),
            "judges flagged by sentinels": dg.MetadataValue.json(flagged),
            "second looks": len(result.second_look),
            "simulated": result.simulated,
            "browser": browser.mode,
        }
    )


@dg.asset(
    key=REVIEWS_KEY,
    deps=[GRADES_KEY],
    group_name=GROUP,
    kinds={"duckdb"},
    owners=["team:grading"],
    description=(
        "People's blind reviews (from `bench review` and files in $BENCH_HOME/inbox/reviews/), "
        "the labelled simulated reviewer for simulated runs, the DM-versus-review second "
        "looks, and judge-person calibration for the release gate."
    ),
)
@timed
def reviews(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connection() as conn:
        outside = outside_metadata(REVIEWS_KEY, conn)
    done = review_round(
        warehouse.connection, settings.reviews_inbox(), load_bank(), datetime.now(UTC)
    )
    with warehouse.connection() as conn:
        metadata = table_metadata(conn, "reviews") | table_metadata(conn, "calibration")
        metadata |= table_asset_metadata(conn, "reviews")
        version = tables_version(conn, ["reviews", "calibration"])
    return dg.MaterializeResult(
        data_version=version,
        metadata=metadata
        | outside
        | {
            "review files accepted": len(done.accepted_reviews),
            "review files rejected": dg.MetadataValue.json(done.rejected_files),
            "simulated reviews added": done.simulated_reviews,
            "new score-gap second looks": done.score_gaps,
            "calibration pairs": done.calibration_pairs,
            "agreement": done.agreement,
        },
    )


@dg.asset_check(asset=REVIEWS_KEY, blocking=True, description=(
    "Release gate: judges and people agree on at least 85% of the runs both graded (from at "
    "least 10 pairs). Passes without pairs only while every graded run is simulated."
))  # fmt: skip
def calibration_gate(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connection() as conn:
        overall = conn.execute(
            "SELECT pairs, agreement FROM calibration WHERE scope = 'overall'"
        ).fetchall()
        pairs, agreement = overall[0] if overall else (0, None)
        real = conn.execute(
            "SELECT count(*) FROM model_runs r WHERE NOT simulated "
            "AND EXISTS (SELECT 1 FROM grades g WHERE g.run_id = r.run_id)"
        ).fetchall()[0][0]
    passed, reason = gate_verdict(pairs, agreement, real)
    return dg.AssetCheckResult(
        passed=passed,
        description=reason,
        metadata={"pairs": pairs, "agreement": agreement, "graded real runs": real},
    )


@dg.asset_check(asset=GRADES_KEY, description=(
    "No judge misgraded a sentinel in the last cycle (a flagged judge's grades are held)."
))  # fmt: skip
def sentinels_passed(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connection() as conn:
        flagged = conn.execute(
            "SELECT judge, count(*) FROM sentinel_flags WHERE cycle_id = "
            "(SELECT cycle_id FROM grading_cycles ORDER BY started_at DESC LIMIT 1) GROUP BY 1"
        ).fetchall()
    return dg.AssetCheckResult(
        passed=not flagged,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"judges flagged": dg.MetadataValue.json(dict(flagged))},
    )


GRADING_ASSETS = [grades, reviews]
GRADING_CHECKS = [calibration_gate, sentinels_passed]
