"""A small real pipeline for the receipt tests: two setups' simulated PM and Navigator runs,
graded (simulated judges priced, so judge costs are recorded), reviewed, scored, released
and rendered, through the functions the assets call."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from bench_pipeline.grading.browser_offline import RecordedInspector
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
from bench_pipeline.grading.rounds import grade_pending, review_round
from bench_pipeline.grading.sandbox import OfflineSandbox
from bench_pipeline.release.build import build_release
from bench_pipeline.release.published import METHODOLOGY_VERSIONS
from bench_pipeline.resources.models import ModelCallsResource
from bench_pipeline.resources.warehouse import WarehouseResource
from bench_pipeline.runs.batch import run_model_batch, store_task_bank
from bench_pipeline.runs.plan import parse_partition_key
from bench_pipeline.runs.rates import refresh_model_rates
from bench_pipeline.scores.load import all_frames, store_frames
from bench_pipeline.site import build_site
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

SETUPS = ("s271688162bc6196c", "s9ae95bb7ba37ef42")
JUDGE_RATE = ("0.5", "1.5")
"""USD per million input and output tokens, given to the simulated judges here only, so that
their calls are costed as a real judge's are."""


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
    keys = [
        k
        for k in stored.partitions
        if k.split(":")[0] in SETUPS and parse_partition_key(k).suite in ("pm", "navigator")
    ]
    calls = ModelCallsResource(mode="simulated", cache_dir=str(home / "cache"))
    report = run_model_batch(
        keys, warehouse.connection, calls.providers(), bank=bank, setups=setups
    )
    assert not report.failures, report.failures
    now = datetime.now(UTC)  # runs are stamped with the clock: grades and boards come after
    grade_pending(
        warehouse.connection, calls.providers(), inspector=RecordedInspector(home / "browser"),
        sandbox=OfflineSandbox({}), bank=bank, setups=setups, now=now,
        screenshots=home / "shots",
    )  # fmt: skip
    review_round(warehouse.connection, home / "inbox", bank, now)
    with warehouse.connection() as conn:
        store_frames(conn, all_frames(conn, bank, datetime.now(UTC)))
        outcome = build_release(conn, home / "releases", METHODOLOGY_VERSIONS)
    build_site(outcome.path, home / "site", home / "releases")
    return Stage(home, database, outcome.path, home / "site")
