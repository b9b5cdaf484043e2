"""Deterministic made-up answers, for running the pipeline without a network or a budget.

Everything is derived from the request hash: the same request always gets the identical
response, and any change to the request (model, a message, a parameter) gets a different one.
The content starts with `[simulated]` so it can never pass for a model's output, and the
response carries `simulated=True`. Token counts are plausible estimates, not a tokenizer's:
about four characters per token, reasoning tokens only when an effort is set (counted inside
`completion_tokens`, as OpenAI-compatible APIs do), capped by `max_tokens` (then the answer is
cut and `finish_reason` is `length`). Times are computed, not waited for.
"""

from __future__ import annotations

import json
import math
import random

from bench_pipeline.providers.base import ChatRequest, ChatResponse, Message, Provider, Usage

SIMULATED_MARKER = "[simulated]"
CHARS_PER_TOKEN = 4
TOKENS_PER_SECOND = 60.0
FIRST_TOKEN_SECONDS = 0.35
REASONING_TOKENS = {"minimal": 64, "low": 256, "medium": 1024, "high": 4096}

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
        content = (
            f"{SIMULATED_MARKER} Simulated answer from {request.model} "
            f"(request {request_hash[:12]}) to: {topic!r}. "
            f"{rng.choice(_OPENINGS)} " + " ".join(sentences)
        )

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
