"""Simulated use-case submissions for the offline demo, so its UseCaseRank board has spread.

UseCaseRank is built from runs that agents made elsewhere and sent in; a fresh offline home has
none. In simulated model mode, the pipeline adds, for every model record of `setups/` and every
public use case of the bank, `RUNS_PER_GROUP` made-up runs (enough for a rank), derived like the
simulated provider's answers (`providers.simulated`): each record's latent skill (model and
effort) plus seeded per-run noise gives a quality, and each success criterion passes, is partial
or fails by comparing that quality with the criterion's own difficulty (`simulated_outcome`).
Better models succeed more often, retry less, need fewer step-ins and finish sooner, so the
board has real spread, clear gaps and ties.

Every row is labelled: `submitted_runs.simulated` is true, the model's settings carry
`simulated=True` (so a simulated group never shares a name, or a board, with a real one), and
the evidence log and output start with `[simulated]`. Runs are built as `Submission`s and costed
by the intake's own `submitted_row` at our dated rates. Ids are fixed by the seed, the record,
the use case and the repeat: a run already stored is never stored again or changed, and real
submissions are never touched.

The demo signs its runs as a real submitter would (`runs.submitters`): as `DEMO_SUBMITTER`,
registered in a submitters file of its own made at demo time with a fresh random secret
(`settings.demo_submitters_path()`, never the real `BENCH_SUBMITTERS` file, so that secret
cannot submit real runs), and each run's signature is checked by the intake's own rule before
it is stored as `submitter_verified`.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.providers.simulated import (
    QUALITY_NOISE,
    SIMULATED_MARKER,
    SIMULATION_SEED,
    latent_skill,
    simulated_outcome,
)
from bench_pipeline.runs.costing import Rates
from bench_pipeline.runs.intake import SUBMITTED_COLUMNS, submitted_row
from bench_pipeline.runs.submissions import Submission
from bench_pipeline.runs.submitters import Submitters, check_signature, signed
from bench_pipeline.scores.usecase import autonomy_level
from bench_pipeline.taskbank import TaskBank
from bench_pipeline.taskbank.setups import ModelRecord

RUNS_PER_GROUP = 8
"""Runs per model and use case: above the 5 a group needs for a rank."""
SPREAD_DAYS = 28
"""Demo runs are dated over the four weeks before they are first made."""
DEMO_SUBMITTER = "offline demo (simulated)"


def demo_run_id(record: ModelRecord, use_case: str, repeat: int) -> str:
    """`sim-` + 16 hex digits fixed by the seed, the record, the use case and the repeat."""
    key = f"{SIMULATION_SEED}\0{record.id}\0{use_case}\0{repeat}"
    return f"sim-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def demo_submission(
    record: ModelRecord, use_case: str, version: str, criteria: Sequence[str], repeat: int,
    now: datetime, submitters: Submitters,
) -> Submission:  # fmt: skip
    """One simulated run of `record` on a use case, signed as `DEMO_SUBMITTER` with the
    demo's own secret from `submitters` (see the module docstring)."""
    rng = random.Random(demo_run_id(record, use_case, repeat))
    skill = latent_skill(record.api_id, record.reasoning_effort)
    quality = min(1.0, max(0.0, skill + rng.gauss(0.0, QUALITY_NOISE)))
    outcomes = {c: simulated_outcome(quality, f"usecase/{use_case}/{c}") for c in criteria}
    success = set(outcomes.values()) == {"pass"}
    retries = 0 if success and rng.random() < quality else rng.randint(0, 2)
    step_ins = max(0, round((1.0 - quality) * 4 + rng.uniform(-1.0, 1.0)))
    output_tokens = 800 + int(4000 * (1.0 - quality) * rng.random())
    log = (
        f"{SIMULATED_MARKER} Simulated agent run {repeat + 1} of {record.id} on {use_case} "
        f"(quality {quality:.3f}), made up for the offline demo: no agent ran and no model "
        "was called. Criteria: "
        + ", ".join(f"{c} {o}" for c, o in sorted(outcomes.items()))
        + f". Retries {retries}, step-ins {step_ins}."
    )
    settings: dict[str, str | int | float | bool] = {"simulated": True}
    if record.reasoning_effort:
        settings["reasoning_effort"] = record.reasoning_effort
    started = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(
        days=rng.uniform(1.0, SPREAD_DAYS)
    )
    document = signed(
        {
            "schema_version": 1,
            "use_case": use_case,
            "use_case_version": version,
            # From midnight (UTC) of `now`'s day, so two homes built the same day agree.
            "started_at": started.isoformat(),
            "model": {"name": record.api_id, "settings": settings},
            "harness": {"name": "simulated", "version": "1"},
            "tokens": {"total": {"input_tokens": 20_000 + rng.randint(0, 30_000),
                                 "output_tokens": output_tokens}},
            "wall_time_seconds": round(120.0 + 900.0 * (1.0 - quality) * rng.random(), 1),
            "step_ins": step_ins,
            "turns": 4 + step_ins,
            "retries": retries,
            "first_try": success and retries == 0,
            "autonomy": autonomy_level(step_ins),
            "criteria": outcomes,
            "evidence_log": log,
            "evidence_sha256": hashlib.sha256(log.encode()).hexdigest(),
            "output": f"{SIMULATED_MARKER} No output: a simulated demo run.",
        },
        DEMO_SUBMITTER,
        submitters.secrets[DEMO_SUBMITTER],
    )  # fmt: skip
    problem = check_signature(document, submitters)  # the intake's own rule
    if problem is not None:
        raise ValueError(f"demo run {demo_run_id(record, use_case, repeat)}: {problem}")
    return Submission.model_validate(document, strict=False)


def store_demo_submissions(
    conn: duckdb.DuckDBPyConnection,
    bank: TaskBank,
    records: Sequence[ModelRecord],
    rates: Mapping[str, Sequence[Rates]],
    now: datetime,
    submitters: Submitters,
) -> int:
    """Store the demo runs not stored yet (marked simulated), signed with the demo's own
    `submitters` (`runs.submitters.demo_submitters`); returns how many were added."""
    stored = {r for (r,) in conn.execute(
        "SELECT run_id FROM submitted_runs WHERE simulated").fetchall()}  # fmt: skip
    rows: list[dict[str, Any]] = []
    for case in bank.suite("usecase"):
        if case.private:
            continue
        criteria = [c.id for c in case.criteria]
        for record in records:
            for repeat in range(RUNS_PER_GROUP):
                run_id = demo_run_id(record, case.id, repeat)
                if run_id in stored:
                    continue
                submission = demo_submission(
                    record, case.id, case.version, criteria, repeat, now, submitters
                )
                row = submitted_row(
                    submission, Path(f"{run_id}.json"), run_id, rates, now,
                    submitter_verified=True,
                )  # fmt: skip
                row["run_id"] = run_id
                row["received_at"] = (submission.started_at + timedelta(hours=1)).replace(
                    tzinfo=None
                )
                rows.append(row | {"simulated": True})
    columns = (*SUBMITTED_COLUMNS, "simulated")
    with transaction(conn):
        insert_rows(conn, "submitted_runs", columns, [[r[c] for c in columns] for r in rows])
    return len(rows)
