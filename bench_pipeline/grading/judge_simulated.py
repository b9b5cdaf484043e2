"""The offline judge: deterministic, valid JSON answers from a crude, documented heuristic.

`SimulatedJudgeProvider` is the default when no real judge is configured. Its answers are
labelled simulated everywhere (reason prefix and `simulated=True`), so they can never pass
for a real judge's.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict

from bench_pipeline.grading.decision import FORMAT_PREFIX, quoted_output
from bench_pipeline.grading.judges import SIMULATED_JUDGE_POOL
from bench_pipeline.grading.outcomes import Outcome
from bench_pipeline.providers.base import ChatRequest, ChatResponse, Provider
from bench_pipeline.providers.simulated import (
    SIMULATED_MARKER,
    SIMULATION_SEED,
    simulated_outcome,
    simulated_quality,
    simulated_reply,
    unit_hash,
)

MIN_WORDS = 12
"""Fewer words than this cannot do any task in the bank."""
STRONG_OVERLAP = 6
ENOUGH_OVERLAP = 3
"""Distinct brief/context word stems an answer must reuse to be taken as on topic."""
REFUSALS = (
    "i can't help",
    "i cannot help",
    "i can't assist",
    "i cannot assist",
    "i'm unable to",
    "i am unable to",
    "i won't be able",
    "as an ai",
)
STEM = 5
_STOP_STEMS = frozenset(
    {"about", "after", "again", "also", "before", "being", "below", "could", "every", "first"}
    | {"other", "should", "their", "there", "these", "those", "under", "which", "while"}
    | {"would", "where", "without", "write", "answer", "reply", "brief", "conte"}
)
_WORD = re.compile(r"[a-z]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SECTION = re.compile(r"^## (Brief|Context|Input)\n(.*?)(?=\n\n## )", re.DOTALL | re.MULTILINE)
_CRITERION = re.compile(r"^## Criterion\n(.*?)(?=\n\n## )", re.DOTALL | re.MULTILINE)
SIMULATED_REASON = "[simulated judge]"
SPLIT_SHARE = 0.05
"""Share of Navigator criteria (seeded by the material, criterion and output) on which the
simulated judge pair splits pass against fail, so the demo has splits a person must decide."""
_POOL_RANK = {judge.api_id: rank for rank, judge in enumerate(SIMULATED_JUDGE_POOL)}


def simulated_split(material: str, criterion: str, output: str, judge: str) -> Outcome | None:
    """The simulated judge's side on a seeded split, or None when this criterion is no split.

    Only simulated answers to Navigator criteria split (their material has an `Input`
    section; PM has one judge); prepared sentinel answers never do, so no judge is flagged
    for a seeded split. On a split, judges of even rank in `SIMULATED_JUDGE_POOL` say pass
    and odd ranks fail, so the demo's pair (A and B, the first two) always disagree.
    Deterministic in its inputs.
    """
    if simulated_quality(output) is None:
        return None
    if unit_hash(SIMULATION_SEED, "split", material, criterion, output) >= SPLIT_SHARE:
        return None
    return "pass" if _POOL_RANK.get(judge, 0) % 2 == 0 else "fail"


def _stems(text: str) -> set[str]:
    """First five letters of every word of five letters or more, common words left out."""
    stems = {w[:STEM] for w in _WORD.findall(text.lower()) if len(w) >= STEM}
    return stems - _STOP_STEMS


class SimulatedVerdict(BaseModel):
    """The offline judge's view of one output."""

    model_config = ConfigDict(frozen=True)

    outcome: Outcome
    confidence: float
    reason: str
    overlap: int


def simulated_verdict(material: str, output: str) -> SimulatedVerdict:
    """The heuristic the offline judge applies to every question, in this order.

    1. empty → fail; 2. starts with `[simulated]`: a simulated answer carrying a latent
       quality is graded by it against the material's difficulty
       (`providers.simulated.simulated_outcome`), any other placeholder → fail;
    3. under `MIN_WORDS` words → fail; 4. a refusal phrase → fail;
    5. reuses no word stem (first five letters of words of five or more letters) of the brief
       and context → fail ("ignores the brief"); fewer than `ENOUGH_OVERLAP` → partial;
       otherwise pass (more confident from `STRONG_OVERLAP` on).

    It does not read the criterion: every criterion of one output gets the same outcome (but
    see `simulated_split`, applied on top for Navigator criteria).
    """
    text = output.strip()
    overlap = len(_stems(text) & _stems(material))
    if not text:
        return SimulatedVerdict(outcome="fail", confidence=0.95, reason="empty", overlap=0)
    if text.startswith(SIMULATED_MARKER):
        quality = simulated_quality(text)
        if quality is None:
            why = "a simulated placeholder, not an answer"
            return SimulatedVerdict(outcome="fail", confidence=0.9, reason=why, overlap=overlap)
        outcome = simulated_outcome(quality, material)
        why = f"a simulated answer of latent quality {quality:.3f}: {outcome}"
        return SimulatedVerdict(outcome=outcome, confidence=0.75, reason=why, overlap=overlap)
    if len(text.split()) < MIN_WORDS:
        why = "too short to do the task"
        return SimulatedVerdict(outcome="fail", confidence=0.85, reason=why, overlap=overlap)
    if any(phrase in text.lower().replace("\u2019", "'") for phrase in REFUSALS):
        why = "declines the task"
        return SimulatedVerdict(outcome="fail", confidence=0.9, reason=why, overlap=overlap)
    if overlap == 0:
        why = "ignores the brief and context"
        return SimulatedVerdict(outcome="fail", confidence=0.8, reason=why, overlap=0)
    if overlap < ENOUGH_OVERLAP:
        why = f"touches the brief only lightly ({overlap} shared terms)"
        return SimulatedVerdict(outcome="partial", confidence=0.6, reason=why, overlap=overlap)
    confidence = 0.85 if overlap >= STRONG_OVERLAP else 0.7
    why = f"on topic ({overlap} shared terms)"
    return SimulatedVerdict(outcome="pass", confidence=confidence, reason=why, overlap=overlap)


def _probabilities(outcome: Outcome, confidence: float) -> dict[str, float]:
    rest = round(1 - confidence, 4)
    if outcome == "partial":
        return {"pass": round(rest / 2, 4), "partial": confidence, "fail": round(rest / 2, 4)}
    other = "fail" if outcome == "pass" else "pass"
    near = round(rest * 2 / 3, 4)
    return {outcome: confidence, "partial": near, other: round(rest - near, 4)}


def _simulated_claims(material: str, output: str) -> list[dict[str, object]]:
    """Sentences with a number are claims; found when each of their numbers is in the material."""
    known = set(_NUMBER.findall(material))
    claims = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", output):
        numbers = _NUMBER.findall(sentence)
        if numbers and sentence.strip():
            claims.append({"claim": sentence.strip(), "found": all(n in known for n in numbers)})
    return claims


_REVIEW_SCORES = {"fail": 1, "partial": 3, "pass": 4}


class SimulatedJudgeProvider(Provider):
    """Answers judge requests offline with valid JSON from `simulated_verdict`.

    Deterministic: the answer depends only on the request. Every reason starts with
    `[simulated judge]` and every response is `simulated=True`, so a simulated grade can
    never pass for a real judge's. A request that is not a judge request (no quoted output
    or no known answer format) gets a reply that does not parse, so it ends `ungraded`.
    """

    name = "simulated-judge"
    simulated = True

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """A deterministic simulated judge answer to `request`."""
        system = next((m for m in request.messages if m.role == "system"), None)
        user = next((m for m in reversed(request.messages) if m.role == "user"), None)
        kind = None
        if system is not None and isinstance(system.content, str):
            first = system.content.split("\n", 1)[0]
            kind = first.removeprefix(FORMAT_PREFIX) if first.startswith(FORMAT_PREFIX) else None
        prompt = user.content if user is not None and isinstance(user.content, str) else ""
        output = quoted_output(prompt)
        sections = _SECTION.findall(prompt)
        material = "\n".join(body for _, body in sections)
        if output is None or kind not in {"decision", "claims", "review"}:
            content = f"{SIMULATED_MARKER} not a judge request"
        else:
            split = None
            criterion = _CRITERION.search(prompt)
            if kind == "decision" and criterion and any(t == "Input" for t, _ in sections):
                split = simulated_split(material, criterion.group(1), output, request.model)
            answer = self._answer(kind, material, output, split)
            content = json.dumps(answer, ensure_ascii=False)
        return self._response(request, content)

    @staticmethod
    def _answer(
        kind: str, material: str, output: str, split: Outcome | None = None
    ) -> dict[str, object]:
        verdict = simulated_verdict(material, output)
        if split is not None:
            why = f"a seeded simulated split: this judge says {split}"
            verdict = SimulatedVerdict(
                outcome=split, confidence=0.7, reason=why, overlap=verdict.overlap
            )
        reason = f"{SIMULATED_REASON} {verdict.reason}"
        if kind == "claims":
            return {"claims": _simulated_claims(material, output)}
        if kind == "review":
            score = _REVIEW_SCORES[verdict.outcome]
            if verdict.outcome == "pass" and verdict.overlap >= STRONG_OVERLAP:
                score = 5
            return {"score": score, "reason": reason}
        return {
            "outcome": verdict.outcome,
            "probabilities": _probabilities(verdict.outcome, verdict.confidence),
            "confidence": verdict.confidence,
            "reason": reason,
        }

    def _response(self, request: ChatRequest, content: str) -> ChatResponse:
        return simulated_reply(request, content, self.name)
