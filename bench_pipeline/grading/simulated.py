"""Tier 1 for simulated outputs: the offline demo's answers cannot pass a real scripted check
(they are placeholders), so they are graded by the latent quality they carry against the
item's simulated difficulty (`providers.simulated`), and the reason says so."""

from __future__ import annotations

from bench_pipeline.grading.outcomes import CheckResult
from bench_pipeline.providers.simulated import (
    SIMULATED_MARKER,
    simulated_outcome,
    simulated_quality,
)

SIMULATED_GRADER = "simulated:latent_quality@1"


def is_simulated(output: str) -> bool:
    """Whether `output` is a simulated placeholder (it starts with the simulated marker)."""
    return output.lstrip().startswith(SIMULATED_MARKER)


def simulated_check(item: str, output: str) -> CheckResult:
    """The check result of a simulated output on the item keyed `item` (case and input)."""
    quality = simulated_quality(output)
    if quality is None:
        return CheckResult("fail", "a simulated placeholder, not an answer", SIMULATED_GRADER)
    outcome = simulated_outcome(quality, item)
    return CheckResult(
        outcome,
        f"[simulated] latent quality {quality:.3f} against this item's simulated difficulty",
        SIMULATED_GRADER,
        {"quality": quality},
    )
