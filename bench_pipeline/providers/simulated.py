"""Deterministic made-up answers, for running the pipeline without a network or a budget.

Everything is derived from the request hash: the same request always gets the identical
response, and any change to the request (model, a message, a parameter) gets a different one.
The content starts with `[simulated]` so it can never pass for a model's output, and the
response carries `simulated=True`. Token counts are plausible estimates, not a tokenizer's:
about four characters per token, reasoning tokens only when an effort is set (counted inside
`completion_tokens`, as OpenAI-compatible APIs do), capped by `max_tokens` (then the answer is
cut and `finish_reason` is `length`). Times are computed, not waited for.

So that the offline demo's boards have something to show, answers are not all alike: each
setup (model and reasoning effort) has a latent skill drawn once from `SIMULATION_SEED`, and
each answer carries a quality (the skill plus request-level noise) in its first words,
`[simulated] quality 0.734.`. The offline graders read it back (`simulated_quality`) and
grade an item pass, partial or fail by comparing it with the item's own difficulty
(`simulated_outcome`), so better setups pass more items, and still everything is labelled
simulated. A prompt asking for an HTML prototype gets a self-contained page after that first
line (`simulated_pages`), so the browser grading opens real pages.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from typing import Literal

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Message, Provider, Usage
from bench_pipeline.providers.simulated_pages import simulated_page, wants_prototype

SIMULATED_MARKER = "[simulated]"
CHARS_PER_TOKEN = 4
TOKENS_PER_SECOND = 60.0
FIRST_TOKEN_SECONDS = 0.35
REASONING_TOKENS = {"minimal": 64, "low": 256, "medium": 1024, "high": 4096}
SIMULATION_SEED = 20_261_201
SKILL_RANGE = (0.2, 0.9)
"""Latent skills are spread evenly over this range (by a hash of the setup and the seed)."""
QUALITY_NOISE = 0.12
"""Standard deviation of an answer's quality around its setup's skill."""
PARTIAL_BAND = 0.08
"""An answer within this much below an item's difficulty earns partial credit."""
_QUALITY = re.compile(r"^\[simulated\] quality (?P<q>[01]\.\d{3})\.")

_OPENINGS = (
    "Recommendation:",
    "Short answer:",
    "Summary:",
    "Decision:",
    "Assessment:",
)
_SUBJECTS = (
    "the supplied evidence",
    "the rollout plan",
    "the customer interviews",
    "the latest metrics",
    "the stated constraints",
    "the open risks",
    "the pricing change",
    "the support backlog",
)
_VERBS = ("suggests", "does not yet show", "supports", "argues against", "leaves open")
_OBJECTS = (
    "a staged launch behind a flag",
    "holding the decision for one more week of data",
    "narrowing the scope to the first segment",
    "a clear owner for each follow-up",
    "re-checking the baseline before committing",
    "telling customers what changes and when",
)


def _text_of(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    return json.dumps(message.content, sort_keys=True)


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def unit_hash(*parts: object) -> float:
    """A deterministic number in [0, 1) from `parts` (SHA-256, not Python's salted hash)."""
    digest = hashlib.sha256("\0".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def simulated_reply(request: ChatRequest, content: str, provider: str) -> ChatResponse:
    """A simulated grader's answer (judge, vision model): instant, tokens counted from the
    text sent (about 4 characters a token; an image part counts nothing), labelled simulated.

    Args:
        request: What was asked.
        content: The answer.
        provider: The simulated provider's name.
    """
    request_hash = request.request_hash()
    sent = sum(
        len(part)
        for m in request.messages
        for part in (
            [m.content]
            if isinstance(m.content, str)
            else [p.get("text", "") for p in m.content if p.get("type") == "text"]
        )
    )
    return ChatResponse(
        request_hash=request_hash,
        model=request.model,
        content=content,
        finish_reason="stop",
        usage=Usage(
            prompt_tokens=math.ceil(sent / 4),
            completion_tokens=math.ceil(len(content) / 4),
            per_request=True,
        ),
        wall_seconds=0.0,
        provider=provider,
        simulated=True,
        raw={"simulated": True, "request_hash": request_hash, "model": request.model},
    )


def latent_skill(model: str, effort: str | None = None, seed: int = SIMULATION_SEED) -> float:
    """The simulated setup's skill in `SKILL_RANGE`: fixed by the seed, model and effort."""
    low, high = SKILL_RANGE
    return low + (high - low) * unit_hash(seed, model, effort or "")


def simulated_quality(text: str) -> float | None:
    """The quality a simulated answer carries, or None for any other text."""
    match = _QUALITY.match(text.strip())
    return float(match.group("q")) if match else None


def simulated_outcome(
    quality: float, item: str, seed: int = SIMULATION_SEED
) -> Literal["pass", "partial", "fail"]:
    """What an answer of `quality` earns on the item keyed `item` (a check, a criterion):
    pass at or above the item's difficulty (uniform in 0.1–0.9 from the key), partial within
    `PARTIAL_BAND` below it, else fail."""
    difficulty = 0.1 + 0.8 * unit_hash(seed, "difficulty", item)
    if quality >= difficulty:
        return "pass"
    return "partial" if quality >= difficulty - PARTIAL_BAND else "fail"


class SimulatedProvider(Provider):
    """Answers without a network; see the module docstring."""

    name = "simulated"
    simulated = True

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """A deterministic simulated answer to `request`."""
        request_hash = request.request_hash()
        rng = random.Random(int(request_hash, 16))
        user_texts = [_text_of(m) for m in request.messages if m.role == "user"]
        topic = " ".join((user_texts[-1] if user_texts else "").split())[:80]
        sentences = [
            f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}."
            for _ in range(rng.randint(3, 8))
        ]
        quality = latent_skill(request.model, request.reasoning_effort) + rng.gauss(
            0.0, QUALITY_NOISE
        )
        quality = min(1.0, max(0.0, quality))
        head = (
            f"{SIMULATED_MARKER} quality {quality:.3f}. Simulated answer from {request.model} "
            f"(request {request_hash[:12]}) to: {topic!r}."
        )
        if user_texts and wants_prototype(user_texts[-1]):
            content = f"{head}\n{simulated_page(user_texts[-1], round(quality, 3), rng)}"
        else:
            content = f"{head} {rng.choice(_OPENINGS)} " + " ".join(sentences)

        prompt_tokens = 3 + sum(4 + _tokens(_text_of(m)) for m in request.messages)
        reasoning = 0
        if request.reasoning_effort is not None:
            base = REASONING_TOKENS.get(request.reasoning_effort, REASONING_TOKENS["medium"])
            reasoning = round(base * rng.uniform(0.5, 1.5))
        answer = _tokens(content)
        finish_reason = "stop"
        if request.max_tokens is not None and reasoning + answer > request.max_tokens:
            reasoning = min(reasoning, request.max_tokens)
            answer = request.max_tokens - reasoning
            content = content[: max(len(SIMULATED_MARKER), answer * CHARS_PER_TOKEN)]
            finish_reason = "length"
        completion_tokens = reasoning + answer
        usage = Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning_tokens=reasoning,
            per_request=True,
        )
        ttft = round(FIRST_TOKEN_SECONDS + reasoning / TOKENS_PER_SECOND, 3)
        return ChatResponse(
            request_hash=request_hash,
            model=request.model,
            content=content,
            finish_reason=finish_reason,
            usage=usage,
            wall_seconds=round(ttft + answer / TOKENS_PER_SECOND, 3),
            ttft_seconds=ttft,
            retries=0,
            provider=self.name,
            simulated=True,
            raw={"simulated": True, "request_hash": request_hash, "model": request.model},
        )
