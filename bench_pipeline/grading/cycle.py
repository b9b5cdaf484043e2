"""One grading cycle: every run not graded yet, by the graders its task names.

- Navigator inputs with a scripted check: tier 1 (`scripted.run_check`).
- Navigator inputs with a judge rubric: two judges of two companies, neither the
  candidate's; a pass/fail split goes to a person.
- PM written tasks: the PM judge (claims against the brief, the criteria, the blind 1–5).
- PM prototypes: the criteria by one judge, and the page opened by the inspector (Chromium).
- Sentinels: a known-bad (and, where prepared, a known-good) output per judged case, graded
  by every judge of the cycle through the same requests; a judge that misgrades one has all
  its grades of the cycle held from publication.

Each grade becomes one row of `grades` (never updated). Judges, the vision model and the
browser see the output with anything naming a model redacted (`blinding`); scripted checks
grade the stored output; the stored output is never edited.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench_pipeline.grading.browser import GRADER as BROWSER_GRADER
from bench_pipeline.grading.browser import BrowserReport, PrototypeInspector
from bench_pipeline.grading.decision import GradeRecord, grade_rubric
from bench_pipeline.grading.judge_flows import ClaimsCheck, navigator_judge, pm_judge
from bench_pipeline.grading.judges import JudgeModel, assign_judges
from bench_pipeline.grading.outcomes import CheckResult
from bench_pipeline.grading.queue import QueueItem, second_look
from bench_pipeline.grading.sandbox import Sandbox
from bench_pipeline.grading.scripted import run_check
from bench_pipeline.grading.sentinels import (
    CycleItem,
    JudgedItem,
    flag_judges,
    grade_cycle,
    sentinel_misgrades,
    sentinels_for,
)
from bench_pipeline.grading.simulated import is_simulated, simulated_check
from bench_pipeline.grading.vision import VisionAnswer, VisionStep
from bench_pipeline.providers.base import Provider, Usage
from bench_pipeline.runs.costing import Rates, cost_of_all, rate_in_effect
from bench_pipeline.taskbank import Case, JudgeCheck
from bench_pipeline.taskbank.models import content_hash

GRADE_COLUMNS = (
    "grade_id", "cycle_id", "run_id", "sentinel", "suite", "case_id", "input_id", "question",
    "tier", "grader_kind", "grader", "grader_company", "grader_family", "rubric_version",
    "outcome", "score", "p_pass", "p_partial", "p_fail", "confidence", "reason", "details",
    "held", "simulated", "judge_cost_usd", "graded_at",
)  # fmt: skip
HTML_MARKERS = ("<html", "<!doctype html", "<body")


@dataclass(frozen=True)
class RunToGrade:
    """A stored run, with what grading needs and nothing that names it to a judge."""

    run_id: str
    case: Case
    input_id: str
    blind_output: str
    """The output with its model, company and setup names redacted."""
    company: str
    """The candidate's company (for judge assignment only; never in a prompt)."""
    output: str | None = None
    """The output exactly as stored, which scripted checks grade (None: `blind_output` is
    the output, for a caller that made no blind copy)."""

    @property
    def stored_output(self) -> str:
        return self.blind_output if self.output is None else self.output


@dataclass
class CycleResult:
    grades: list[dict[str, Any]] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)
    browser: list[dict[str, Any]] = field(default_factory=list)
    second_look: list[QueueItem] = field(default_factory=list)
    judges: set[str] = field(default_factory=set)
    simulated: bool = False


def _judge_cost(
    usages: Sequence[Usage | None], judge: str, rates: Mapping[str, Sequence[Rates]], day: date
) -> Decimal | None:
    if not usages or any(u is None for u in usages):
        return None
    in_effect = rate_in_effect(rates.get(judge, ()), day)
    return cost_of_all([u for u in usages if u is not None], in_effect).cost_usd


class _Rows:
    """Builds `grades` rows for one cycle."""

    def __init__(
        self,
        cycle_id: str,
        now: datetime,
        rates: Mapping[str, Sequence[Rates]],
        simulated: bool,
    ) -> None:
        self.cycle_id, self.now, self.rates, self.simulated = cycle_id, now, rates, simulated
        self.rows: list[dict[str, Any]] = []

    def add(self, run_id: str, case: Case, input_id: str, question: str, **values: Any) -> None:
        row = {
            "cycle_id": self.cycle_id, "run_id": run_id, "sentinel": False, "suite": case.suite,
            "case_id": case.id, "input_id": input_id, "question": question,
            "grader_company": None, "grader_family": None, "rubric_version": None,
            "score": None, "p_pass": None, "p_partial": None, "p_fail": None,
            "confidence": None, "reason": None, "details": None, "held": False,
            "simulated": self.simulated, "judge_cost_usd": None,
            "graded_at": self.now.replace(tzinfo=None),
        } | values  # fmt: skip
        key = [self.cycle_id, run_id, input_id, question, row["grader"]]
        row["grade_id"] = "g" + content_hash(key)
        self.rows.append(row)

    def check(self, item: RunToGrade, result: CheckResult, kind: str, question: str) -> None:
        self.add(
            item.run_id, item.case, item.input_id, question, tier=1, grader_kind=kind,
            grader=result.grader, outcome=result.outcome, reason=result.reason,
            details=json.dumps(result.details, default=str, sort_keys=True),
        )  # fmt: skip

    def judged(self, run_id: str, case: Case, grade: GradeRecord, sentinel: bool = False) -> None:
        p = grade.probabilities or {}
        self.add(
            run_id, case, grade.input_id, grade.criterion_id, tier=2, grader_kind="judge",
            grader=grade.judge_api_id, grader_company=grade.judge_company,
            grader_family=grade.judge_family, rubric_version=grade.rubric_version,
            outcome=grade.outcome, p_pass=p.get("pass"), p_partial=p.get("partial"),
            p_fail=p.get("fail"), confidence=grade.confidence, reason=grade.reason,
            sentinel=sentinel, simulated=grade.simulated,
            judge_cost_usd=_judge_cost(grade.usage, grade.judge_api_id, self.rates,
                                       self.now.date()),
        )  # fmt: skip

    def vision(self, item: RunToGrade, step: VisionStep, answer: VisionAnswer) -> None:
        model = step.model
        self.add(
            item.run_id, item.case, item.input_id, f"vision:{answer.check_id}", tier=2,
            grader_kind="vision", grader=model.api_id, grader_company=model.company,
            grader_family=model.family, outcome=answer.outcome, reason=answer.reason,
            simulated=answer.simulated,
            judge_cost_usd=_judge_cost([answer.usage], model.api_id, self.rates,
                                       self.now.date()),
        )  # fmt: skip


def _claims_details(claims: ClaimsCheck) -> dict[str, Any]:
    """What the blind-score grade keeps of the judge's claims check, to publish beside the
    run: the claims it could not find in the brief, how many it checked, and whether its
    answer was read at all (an unread check is not "every claim found")."""
    return {
        "claims_not_found": list(claims.not_found),
        "claims_checked": len(claims.claims),
        "claims_graded": claims.graded,
    }


def _is_html(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in HTML_MARKERS)


def _inspect(
    item: RunToGrade, screenshots: Path, inspector: PrototypeInspector
) -> BrowserReport | None:
    """The prototype opened by the inspector; None when the output holds no HTML document."""
    if not _is_html(item.blind_output):
        return None
    return inspector.inspect(
        item.blind_output, item.case.browser_checks, screenshots / f"{item.run_id}.png"
    )


def _browser(report: BrowserReport | None) -> tuple[CheckResult, dict[str, Any]]:
    """The page's grade from its report; an output with no HTML document fails."""
    if report is None:
        result = CheckResult("fail", "the output holds no HTML document", BROWSER_GRADER)
        return result, {}
    measures = {} if report.measures is None else {
        "colours": report.measures.colour_count,
        "gradients": report.measures.gradients,
        "font_families": list(report.measures.font_families),
        "card_grids": len(report.measures.card_grids),
        "em_dashes": report.measures.em_dashes,
        "goals": {g.id: [g.outcome, g.reason] for g in report.goals},
    }  # fmt: skip
    outcome = report.outcome if report.outcome in ("pass", "partial", "fail") else "inconclusive"
    result = CheckResult(outcome, report.reason, report.grader, measures)
    return result, {"screenshot": str(report.screenshot_path or "")} | measures


async def grade_runs(
    runs: Sequence[RunToGrade],
    provider: Provider,
    pool: Sequence[JudgeModel],
    benchmarked_companies: Sequence[str],
    cycle_id: str,
    *,
    rates: Mapping[str, Sequence[Rates]],
    now: datetime,
    screenshots: Path,
    inspector: PrototypeInspector,
    sandbox: Sandbox | None = None,
    concurrency: int = 8,
    progress: Callable[[str], None] | None = None,
    vision: VisionStep | None = None,
) -> CycleResult:
    """Grade every run (see the module docstring).

    With `vision`, the vision model answers each browser check from the prototype's
    screenshot (`grading/vision.py`); each answer is a `vision` grade, and every check left
    `inconclusive` goes to a person.

    The outside systems a grader uses are handed in, never started here: `inspector` opens
    prototypes (Chromium, or recorded inspections offline) and `sandbox` runs unit-test answer
    code (None: the bubblewrap jail); a scripted check the sandbox leaves `inconclusive` goes
    to a person. Provider errors propagate (the cycle is then not stored, and the next one
    starts again); so do a broken inspector's.
    """
    rows = _Rows(cycle_id, now, rates, provider.simulated)
    result = CycleResult(simulated=provider.simulated)
    gate = asyncio.Semaphore(concurrency)
    cases: dict[str, Case] = {}
    judged_cases: dict[str, set[str]] = {}  # judge api id -> case keys it graded

    def use(judge: JudgeModel, case: Case) -> None:
        result.judges.add(judge.api_id)
        judged_cases.setdefault(judge.api_id, set()).add(case.key)
        cases[case.key] = case

    async def one(item: RunToGrade) -> None:
        case = item.case
        async with gate:
            if case.suite == "navigator":
                spec = next(i.check for i in case.inputs if i.id == item.input_id)
                if not isinstance(spec, JudgeCheck):
                    # A script is no judge: it grades the stored output, never the blind copy
                    # (a correct answer may name its own maker: "Google LLC").
                    output = item.stored_output
                    checked = (
                        simulated_check(f"{case.key}:{item.input_id}", output)
                        if is_simulated(output)
                        else run_check(spec, output, sandbox=sandbox)
                    )
                    rows.check(item, checked, "script", "check")
                    if checked.outcome == "inconclusive":
                        result.second_look.append(QueueItem(
                            run_id=item.run_id, reason="inconclusive_check",
                            detail=checked.reason, criterion_id=item.input_id,
                        ))  # fmt: skip
                    return
                judges = assign_judges("navigator", item.company, pool, benchmarked_companies)
                for judge in judges:
                    use(judge, case)
                judgement = await navigator_judge(
                    provider, judges, case, item.input_id, item.blind_output
                )
                for pair in judgement.criteria:
                    for grade in pair.grades:
                        rows.judged(item.run_id, case, grade)
                result.second_look.extend(second_look(item.run_id, navigator=judgement))
                return
            (judge,) = assign_judges("pm", item.company, pool, benchmarked_companies)[:1]
            use(judge, case)
            browser: dict[str, CheckResult] | None
            if case.prototype:
                grades = await grade_rubric(provider, judge, case, item.blind_output)
                report = await asyncio.to_thread(_inspect, item, screenshots, inspector)
                if report is not None and vision is not None:
                    report, answers = await vision.look(report, case.browser_checks)
                    for answer in answers:
                        rows.vision(item, vision, answer)
                page, details = _browser(report)
                rows.check(item, page, "browser", "browser")
                result.browser.append({"run_id": item.run_id, "outcome": page.outcome,
                                       "reason": page.reason, **details})  # fmt: skip
                browser = {"browser": page}
                if vision is not None and report is not None:
                    # every check still undecided goes to a person, whatever the page's outcome
                    browser |= {
                        g.id: CheckResult("inconclusive", g.reason, report.grader)
                        for g in report.goals if g.outcome == "inconclusive"
                    }  # fmt: skip
            else:
                verdict = await pm_judge(provider, judge, case, item.blind_output)
                grades = verdict.criteria
                review = verdict.review
                rows.add(
                    item.run_id, case, item.input_id, "blind_score", tier=2,
                    grader_kind="judge", grader=judge.api_id, grader_company=judge.company,
                    grader_family=judge.family, outcome="score" if review.score else "ungraded",
                    score=review.score, reason=review.reason, simulated=verdict.simulated,
                    details=json.dumps(_claims_details(verdict.claims)),
                    judge_cost_usd=_judge_cost(review.call.usage + verdict.claims.call.usage,
                                               judge.api_id, rates, now.date()),
                )  # fmt: skip
                browser = None
            for grade in grades:
                rows.judged(item.run_id, case, grade)
            result.second_look.extend(second_look(item.run_id, grades=grades, browser=browser))
        if progress is not None:
            progress(item.run_id)

    await asyncio.gather(*(one(item) for item in runs))

    # Sentinels: each judge of the cycle grades the sentinels of the cases it judged.
    sentinel_items: list[JudgedItem] = []
    for judge in (j for j in pool if j.api_id in judged_cases):
        items = [
            CycleItem.of_sentinel(s)
            for key in sorted(judged_cases[judge.api_id])
            for s in sentinels_for(cases[key])
        ]
        sentinel_items += await grade_cycle(provider, judge, cases, cycle_id, items)
    for judged in sentinel_items:
        for grade in judged.grades:
            rows.judged(judged.item.item_id, cases[judged.item.case_key], grade, sentinel=True)
    flagged = flag_judges(sentinel_items)
    for miss in sentinel_misgrades(sentinel_items):
        expected = "fail" if miss.sentinel == "known_bad" else "pass"
        result.flags.append(
            {
                "cycle_id": cycle_id,
                "judge": miss.judge_api_id,
                "sentinel_id": miss.item_id,
                "expected": expected,
                "got": miss.verdict,
                "flagged_at": now.replace(tzinfo=None),
            }
        )
    for row in rows.rows:
        row["held"] = row["grader"] in flagged
    result.grades = rows.rows
    return result
