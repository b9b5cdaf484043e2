"""Receipts of a requested v1 comparison: one JSON file per call, plus the fit ranking.

A receipt holds what methodology v1 promises a reader: the input sent, the output, the stored
overall and every dimension score with the displayed overall and its label, who graded it
(the judge's model id and rubric version, or the scripted check's version), the completeness
flags, and the costs (`candidate_cost_usd`, `judge_cost_usd`, `total_cost_usd`). Never a
tier-1 check (an answer key) or the judge's guidance. Every text is scrubbed of the secrets
handed in (the requester's key) before it is written, whatever a server echoed back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench_pipeline.core.files import write_text
from bench_pipeline.providers.scrubbing import scrub
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.runs.v1_comparison import V1Comparison, V1Result, total_cost
from bench_pipeline.scores.navigator import V1Fit
from bench_pipeline.taskbank.v1_library import V1Config


def receipt(result: V1Result, config: V1Config) -> dict[str, Any]:
    """The receipt of one call (see the module docstring for what it holds and never holds)."""
    score, shown = result.score, result.display
    return {
        "run_id": result.run_id,
        "model": result.candidate.label,
        "api_id": result.candidate.api_id,
        "task": {
            "id": result.task.id,
            "title": result.task.title,
            "tier": result.task.tier,
            "version": result.task.version,
            "digest": result.task.digest,
        },
        "call": result.call,
        "input": result.task.prompt,
        "output": result.output,
        "finish_reason": result.finish_reason,
        "completeness": result.incomplete,
        "scores": {
            "stored_overall": score.stored_overall,
            "dimensions": score.dimensions,
            "displayed_overall": None if shown is None else shown.displayed_overall,
            "label": None if shown is None else shown.label,
            "reason": score.reason,
        },
        "graded_by": {
            "grader": score.grader,
            "judge_model": config.judge_model if result.task.tier == 2 else None,
            "rubric_version": score.rubric_version,
            "methodology_version": config.methodology_version,
            "reviewer": None,
        },
        "costs": {
            "candidate_cost_usd": format_usd(result.cost_usd),
            "judge_cost_usd": format_usd(result.judge_cost_usd),
            "total_cost_usd": format_usd(total_cost(result.cost_usd, result.judge_cost_usd)),
        },
        "simulated": result.simulated,
    }


def fit_rows(fits: Iterable[V1Fit]) -> list[dict[str, Any]]:
    """The fit ranking as JSON rows (exact decimals as strings)."""
    return [
        {"rank": f.rank, "model": f.model, "task": f.task,
         "displayed_overall": f.displayed_overall, "calls": f.calls,
         "mean_cost_per_call_usd": format_usd(f.mean_cost_per_call_usd),
         "monthly_cost_usd": format_usd(f.monthly_cost_usd),
         "monthly_volume": f.monthly_volume,
         "monthly_budget_usd": format_usd(f.monthly_budget_usd)}
        for f in fits
    ]  # fmt: skip


def write_receipts(
    folder: Path,
    comparison: V1Comparison,
    config: V1Config,
    fits: Sequence[V1Fit],
    request: dict[str, Any],
    secrets: Sequence[str],
) -> list[Path]:
    """Write `receipts/<run_id>.json` for every call and `comparison.json` (the request and
    the fit ranking) under `folder`, each atomically; return the paths written."""
    written = []
    for result in comparison.results:
        body = scrub(receipt(result, config), secrets)
        target = folder / "receipts" / f"{result.run_id}.json"
        written.append(write_text(target, json.dumps(body, indent=2, ensure_ascii=False) + "\n"))
    summary = scrub(
        {"comparison_id": comparison.comparison_id, "request": request, "fit": fit_rows(fits),
         "receipts": [f"receipts/{r.run_id}.json" for r in comparison.results]},
        secrets,
    )  # fmt: skip
    written.append(write_text(folder / "comparison.json", json.dumps(summary, indent=2) + "\n"))
    return written
