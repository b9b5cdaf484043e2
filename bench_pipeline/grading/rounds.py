"""A grading cycle and a review round as the pipeline runs them, as plain calls: the
`grading/grades` and `grading/reviews` assets are these functions wired to their resources,
and tests call the same functions.

The warehouse is reached through `Connect` and not held while judges answer or review files
are read (other writers, such as model runs on another worker, carry on); a cycle that ran
alongside this one is caught when it is stored (`store_cycle` refuses the second).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from bench_pipeline.grading.browser import PrototypeInspector
from bench_pipeline.grading.cycle import CycleResult, RunToGrade, grade_runs
from bench_pipeline.grading.judges import JudgeModel
from bench_pipeline.grading.review_store import ingest_review_files, simulated_reviews
from bench_pipeline.grading.sandbox import Sandbox
from bench_pipeline.grading.store import (
    add_score_gaps,
    calibration_pairs,
    runs_to_grade,
    store_calibration,
    store_cycle,
)
from bench_pipeline.grading.vision import VisionStep
from bench_pipeline.providers.base import Provider
from bench_pipeline.runs.batch import Connect
from bench_pipeline.runs.proposals import benchmarked_companies
from bench_pipeline.runs.rates import rates_by_api_id
from bench_pipeline.taskbank import TaskBank
from bench_pipeline.taskbank.setups import SetupCatalog


class JudgeCalls(Protocol):
    """What answers judge requests, closed at the end (the model-calls resource's
    `ProviderChooser`)."""

    def judges(self) -> tuple[Provider, tuple[JudgeModel, ...]]:
        """The provider that answers judge requests, and the judge pool."""
        ...

    async def aclose(self) -> None:
        """Close whatever connections the providers opened."""
        ...


@runtime_checkable
class VisionCalls(Protocol):
    """Judge calls that also serve the browser check's vision model (`ProviderChooser`)."""

    def vision(self, benchmarked_companies: Sequence[str]) -> VisionStep | None:
        """The vision step, checked against the benchmarked companies (None: none set up)."""
        ...


@dataclass(frozen=True)
class GradingRound:
    """One cycle: its id and the runs it graded (none: nothing was waiting, nothing stored)."""

    cycle_id: str | None
    runs: list[RunToGrade]
    result: CycleResult = field(default_factory=CycleResult)


def cycle_id_for(now: datetime, runs: Sequence[RunToGrade]) -> str:
    """The cycle's id: a digest of its start time and the runs it grades."""
    digest = hashlib.sha256((now.isoformat() + "".join(r.run_id for r in runs)).encode())
    return "c" + digest.hexdigest()[:16]


def grade_pending(
    connect: Connect,
    calls: JudgeCalls,
    *,
    inspector: PrototypeInspector,
    sandbox: Sandbox | None = None,
    bank: TaskBank,
    setups: SetupCatalog,
    now: datetime,
    screenshots: Path,
    concurrency: int = 8,
) -> GradingRound:
    """One grading cycle over every stored run not graded yet, stored when done.

    Args:
        connect: Opens a warehouse connection.
        calls: The judges; closed before returning.
        inspector: Opens prototypes (`grade_runs`).
        sandbox: Runs unit-test answer code (None: the bubblewrap jail).
        bank: The task bank.
        setups: The setups (their companies are the benchmarked ones judges are kept from).
        now: The cycle's time (grades are stamped with it).
        screenshots: Where prototype screenshots go.
        concurrency: Judge calls in flight at most.

    Raises:
        GradingConflict: Another cycle stored grades of these runs meanwhile (nothing stored).
    """
    with connect() as conn:
        companies = benchmarked_companies(conn, setups)
        runs = runs_to_grade(conn, bank)
        rates = rates_by_api_id(conn)
    if not runs:
        return GradingRound(None, [])
    cycle_id = cycle_id_for(now, runs)
    provider, pool = calls.judges()
    vision = calls.vision(companies) if isinstance(calls, VisionCalls) else None

    async def cycle() -> CycleResult:
        try:
            return await grade_runs(
                runs, provider, pool, companies, cycle_id,
                rates=rates, now=now, screenshots=screenshots,
                inspector=inspector, sandbox=sandbox, concurrency=concurrency, vision=vision,
            )  # fmt: skip
        finally:
            await calls.aclose()

    result = asyncio.run(cycle())
    with connect() as conn:
        store_cycle(conn, cycle_id, result, now)
    return GradingRound(cycle_id, runs, result)


@dataclass(frozen=True)
class ReviewRound:
    """What one round of reviews added."""

    accepted_reviews: list[str]
    """Review ids taken in from files."""
    rejected_files: dict[str, str]
    """File name -> why it was refused."""
    simulated_reviews: int
    score_gaps: int
    """New DM-versus-review second looks."""
    calibration_pairs: int
    agreement: float | None


def review_round(connect: Connect, inbox: Path, bank: TaskBank, now: datetime) -> ReviewRound:
    """Take in review files from `inbox` (read before the warehouse is opened), review
    simulated runs with the labelled simulated reviewer, queue score-gap second looks, and
    store judge-person calibration."""
    intake = ingest_review_files(connect, inbox, bank, now)
    with connect() as conn:
        simulated = simulated_reviews(conn, now)
        gaps = add_score_gaps(conn, now)
        pairs = calibration_pairs(conn, bank)
        agreement = store_calibration(conn, pairs, now)
    return ReviewRound(
        accepted_reviews=list(intake.accepted),
        rejected_files={name: reason for name, _field, reason in intake.rejected},
        simulated_reviews=simulated,
        score_gaps=gaps,
        calibration_pairs=len(pairs),
        agreement=agreement,
    )
