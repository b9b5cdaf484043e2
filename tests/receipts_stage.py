"""A small real pipeline for the receipt tests: two setups' simulated PM and Navigator runs,
graded (simulated judges priced, so judge costs are recorded), reviewed, scored, released
and rendered, through the functions the assets call."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
from signing import SUBMITTERS, signed_json

from bench_pipeline.grading.browser_parent import ChromiumInspector
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
from bench_pipeline.grading.rounds import grade_pending, review_round
from bench_pipeline.grading.sandbox import OfflineSandbox
from bench_pipeline.release.build import build_release
from bench_pipeline.release.published import METHODOLOGY_VERSIONS
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.batch import run_model_batch, store_task_bank
from bench_pipeline.runs.intake import ingest_inbox
from bench_pipeline.runs.plan import setup_partition_key
from bench_pipeline.runs.rates import refresh_model_rates
from bench_pipeline.scores.load import all_frames, store_frames
from bench_pipeline.site import build_site
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

SETUPS = ("s271688162bc6196c", "s9ae95bb7ba37ef42")
JUDGE_RATE = ("0.5", "1.5")
"""USD per million input and output tokens, given to the simulated judges here only, so that
their calls are costed as a real judge's are."""


SUBMITTED = {
    "uc-csv-dedupe": {"one_row_per_email": "pass", "keeps_latest": "pass",
                      "reports_removed": "partial", "input_untouched": "pass"},
    "uc-holdout-01": {"retention_correct": "pass", "dry_run_safe": "pass"},  # private
}  # fmt: skip
"""One submitted run per use case: a public one and the held-out one."""
EVIDENCE = "$ python scripts/run.py\ndone, 12 rows changed\n" * 8


def submission(use_case: str, version: str, criteria: dict[str, str]) -> dict:
    """A valid submitted run (schema: site/static/submission.schema.json)."""
    return {
        "schema_version": 1, "use_case": use_case, "use_case_version": version,
        "started_at": "2026-11-20T09:30:00+01:00",
        "model": {"name": "anthropic/claude-opus-4.6", "settings": {"thinking": "high"}},
        "harness": {"name": "Claude Code", "version": "2.1.0", "tools": ["bash", "edit"]},
        "tokens": {"total": {"input_tokens": 27000, "output_tokens": 1300}},
        "wall_time_seconds": 184.5, "step_ins": 1, "turns": 6, "retries": 0,
        "first_try": True, "autonomy": "lightly_guided", "criteria": criteria,
        "evidence_log": EVIDENCE, "evidence_sha256": hashlib.sha256(EVIDENCE.encode()).hexdigest(),
        "output": f"done: {use_case}", "submitter": "tester",
    }  # fmt: skip


@dataclass(frozen=True)
class Stage:
    home: Path
    database: Path
    release: Path
    site: Path

    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        with duckdb.connect(str(self.database), read_only=True) as conn:
            return conn.execute(sql, params or []).fetchall()


def build_stage(home: Path) -> Stage:
    """Runs, grades, reviews, boards, a release and its site, in `home`."""
    database = home / "warehouse" / "bench.duckdb"
    warehouse = WarehouseResource(path=str(database))
    bank, setups = load_bank(), load_setups()
    with warehouse.connection() as conn:
        stored = store_task_bank(conn, bank, setups)
        refresh_model_rates(conn)  # the candidates' rates, from setups/pricing.toml
        conn.executemany(
            "INSERT INTO model_rates (api_id, effective_date, origin, taken_at, "
            "input_usd_per_1m, output_usd_per_1m, local) VALUES (?, DATE '2026-01-01', "
            "'test:judges', TIMESTAMP '2026-01-01', ?, ?, false)",
            [[judge.api_id, *JUDGE_RATE] for judge in SIMULATED_JUDGE_POOL],
        )
    named = {s.setup_id: setup_partition_key(s) for s in setups.setups}
    keys = [named[setup] for setup in SETUPS if named[setup] in stored.partitions]
    calls = ModelCallsResource(mode="simulated", cache_dir=str(home / "cache"))
    report = run_model_batch(
        keys, warehouse.connection, calls.providers(), bank=bank, setups=setups,
        locks=warehouse.locks_dir(),
    )  # fmt: skip
    assert not report.failures, report.failures
    now = datetime.now(UTC)  # runs are stamped with the clock: grades and boards come after
    grade_pending(
        warehouse.connection, calls.providers(), inspector=ChromiumInspector(),
        sandbox=OfflineSandbox({}), bank=bank, setups=setups, now=now,
        screenshots=home / "shots",
    )  # fmt: skip
    review_round(warehouse.connection, home / "inbox", bank, now)
    inbox = home / "inbox" / "submissions"
    inbox.mkdir(parents=True)
    for use_case, criteria in SUBMITTED.items():
        document = submission(use_case, bank.get("usecase", use_case).version, criteria)
        (inbox / f"{use_case}.json").write_text(signed_json(document, "tester"), encoding="utf-8")
    intake = ingest_inbox(warehouse.connection, inbox, bank, submitters=SUBMITTERS)
    assert not intake.rejected, intake.rejected
    with warehouse.connection() as conn:
        store_frames(conn, all_frames(conn, bank, datetime.now(UTC)))
        outcome = build_release(conn, home / "releases", METHODOLOGY_VERSIONS)
    build_site(outcome.path, home / "site", home / "releases")
    return Stage(home, database, outcome.path, home / "site")
