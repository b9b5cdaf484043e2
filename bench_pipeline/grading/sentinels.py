"""Sentinels: outputs whose right grade we already know, graded blind beside the real ones.

A known-bad sentinel is an answer that plainly ignores the brief (an off-topic paragraph or
a refusal), picked deterministically per case version and input; any judge should fail it.
A known-good sentinel is an answer prepared by a person for one case version; any judge
should pass it. Prepared answers are tied to the case version they were written for, so
editing a case silently retires its answer instead of checking judges against a stale one.

In a grading cycle, sentinels are shuffled in with the real items (deterministically, from
the cycle id) and graded by exactly the same calls: the prompt is built from the case and
the output only, so nothing in a request tells a sentinel from a run. A judge that passes a
known-bad or fails a known-good is flagged, and all of its grades in that cycle are held
from publication.

A sentinel's verdict is read over the whole item, not per criterion (a refusal may well
"respect the length limit"): `fail` when any criterion failed, `pass` when every graded
criterion passed, else `partial`.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bench_pipeline.grading.decision import (
    DEFAULT_ATTEMPTS,
    BoundedProvider,
    GradeRecord,
    grade_rubric,
)
from bench_pipeline.grading.judges import JudgeModel
from bench_pipeline.grading.outcomes import Outcome
from bench_pipeline.providers.base import Provider
from bench_pipeline.taskbank.models import MAIN_INPUT, Case, JudgeCheck, content_hash

SentinelKind = Literal["known_good", "known_bad"]

KNOWN_BAD_TEXTS: tuple[str, ...] = (
    "Sourdough needs patience: feed the mother dough twice a day, keep it warm, fold it gently "
    "each half hour, then bake it in a very hot lidded pot till the crust crackles.",
    "The coastal cycling path runs along the old railway line for thirty kilometres, past "
    "lighthouses, a ruined abbey and several sandy coves, ideal for a picnic.",
    "Tomatoes grow best against a sunny wall. Pinch out the side shoots each week, water the "
    "roots rather than the foliage, and pick the fruit as soon as it turns fully red.",
    "Our choir rehearses on Thursday evenings in the village hall. Newcomers are welcome, no "
    "audition is required, and tea and biscuits are served halfway through.",
    "I'm sorry, but I can't help with this one. Please consult a professional who can look "
    "at your circumstances in more depth.",
)
"""Answers that ignore any brief in the bank (one is a refusal). None may share a word with
a case: a test checks the bank."""


class PreparedAnswer(BaseModel):
    """A known-good answer a person wrote for one case version and input."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_key: str
    input_id: str
    case_version: str
    """The version it was written against; it is not used for any other."""
    text: str


DEMO_KNOWN_GOOD: tuple[PreparedAnswer, ...] = (
    PreparedAnswer(
        case_key="pm/pm-delay-update",
        input_id=MAIN_INPUT,
        case_version="7aa33b5487f5954e",
        text=(
            "Bulk export will ship late: the new date is 4 June, not the 14 May we promised "
            "customers. The 4 June date is an engineering estimate with medium confidence, "
            "not a commitment.\n\n"
            "Why: exports over 50,000 rows time out, and the fix moves export to a background "
            "job.\n\n"
            "What to tell customers: the feature is coming on 4 June (estimated); until then, "
            "support can run an export for them on request, with a turnaround of one working "
            "day. Please contact Orbis, Kettle & Co and Marlow Health directly this week, as "
            "they were promised the feature by name.\n\n"
            "I will confirm the date, or flag any change, in next week's update."
        ),
    ),
    PreparedAnswer(
        case_key="pm/pm-interview-synthesis",
        input_id=MAIN_INPUT,
        case_version="bb60e4399ee2c477",
        text=(
            "Offline mode: synthesis for the decision meeting\n\n"
            "What the evidence says. The need is concentrated in bridge and rail inspectors. "
            "Rosa (bridges) loses signal under decks most days, Mei (rail) loses it in "
            'tunnels and said she would "pay extra" for offline, and Tom (rail) once lost a '
            "morning's notes when the app crashed without signal. Usage agrees: 18% of "
            "sessions start with no connection, 61% of those from bridge and rail accounts, "
            "and sessions without connection last three times longer.\n\n"
            "Where it disagrees. Karim and Jonas (housing) have never needed offline and ask "
            "for faster photo upload and better search. Aisha (bridges) works around signal "
            "with a hotspot; her pain is sync conflicts. Six interviews cannot tell us how "
            "widespread the need is; the usage figures are the better guide there.\n\n"
            "Recommendation. Start offline mode next quarter, scoped to capture and safe "
            "local storage for bridge and rail accounts (22% of paying accounts), and fix "
            "sync conflicts as part of it. Before committing, check whether the crash-loss "
            "problem can be fixed sooner on its own."
        ),
    ),
    PreparedAnswer(
        case_key="pm/pm-price-change-memo",
        input_id=MAIN_INPUT,
        case_version="8ad1d139265632de",
        text=(
            "Recommendation: a smaller test, not a full launch on 1 July.\n\n"
            "The guardrail is binding: Team plan monthly logo churn must stay below 3.0%; it "
            "is 2.1% today. The Solo-plan precedent ($6 to $8) saw churn rise from 2.4% to "
            "3.6% for two months before settling at 2.7%. A similar jump on Team would breach "
            "the guardrail. That precedent is confounded, though: a competitor launched a "
            "free tier in the same month, so it does not show what the price rise alone did. "
            'The survey (38% of 212 admins would "review alternatives") says intent, not '
            "behaviour.\n\n"
            "Proposal: raise the price to $15 for new Team workspaces only for eight weeks. "
            "Measure monthly logo churn, trial-to-paid conversion and upgrades to enterprise. "
            "Stop if churn in the test group reaches 2.8%. Decide on existing customers after "
            "the test."
        ),
    ),
    PreparedAnswer(
        case_key="navigator/nav-writing-plain-rewrite",
        input_id="insurance",
        case_version="24a202676019c88e",
        text=(
            "This policy does not cover flood damage if your home or building is in a "
            "designated flood zone, unless you bought extra flood cover before the policy "
            "started."
        ),
    ),
    PreparedAnswer(
        case_key="navigator/nav-writing-plain-rewrite",
        input_id="it-notice",
        case_version="24a202676019c88e",
        text=(
            "In plain words: users must change their password every three months, and the "
            "policy does not allow using any of your previous five passwords again."
        ),
    ),
    PreparedAnswer(
        case_key="navigator/nav-support-reply",
        input_id="late-delivery",
        case_version="a005e04edfeaa1a1",
        text=(
            "I'm really sorry. This is the third time your order has been late, and you "
            "needed it for Saturday, so I understand why you are fed up. The courier has "
            "confirmed the delay, and your order will now be delivered on Monday. To make up "
            "for it, your next order will ship free; the free shipping will be applied "
            "automatically at checkout. If anything changes with Monday's delivery, I will "
            "tell you straight away."
        ),
    ),
)
"""Prepared known-good answers for the demo bank (a real bank brings its own)."""


class Sentinel(BaseModel):
    """A sentinel output for one case input, and what a judge should make of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_key: str
    case_version: str
    input_id: str
    kind: SentinelKind
    source: Literal["prepared", "generated"]
    text: str

    @property
    def item_id(self) -> str:
        """A stable id for the sentinel as a cycle item (never shown to a judge)."""
        return "sentinel-" + content_hash(self.model_dump(mode="json"))


def judged_inputs(case: Case) -> tuple[str, ...]:
    """The outputs of `case` an LLM grader decides: the one output of a PM or use case, or
    each navigator input with a judge check."""
    if case.suite != "navigator":
        return (MAIN_INPUT,)
    return tuple(i.id for i in case.inputs if isinstance(i.check, JudgeCheck))


def known_bad(case: Case, input_id: str) -> Sentinel:
    """The generated known-bad sentinel for one input: an answer that ignores the brief."""
    digest = hashlib.sha256(f"{case.version}\0{input_id}".encode()).hexdigest()
    text = KNOWN_BAD_TEXTS[int(digest[:8], 16) % len(KNOWN_BAD_TEXTS)]
    return Sentinel(
        case_key=case.key,
        case_version=case.version,
        input_id=input_id,
        kind="known_bad",
        source="generated",
        text=text,
    )


def sentinels_for(
    case: Case, prepared: Iterable[PreparedAnswer] = DEMO_KNOWN_GOOD
) -> tuple[Sentinel, ...]:
    """Every sentinel for `case`: a known-bad per judged input, and a known-good where an
    answer was prepared for this exact case version."""
    good = {
        (p.case_key, p.input_id): p.text
        for p in prepared
        if p.case_key == case.key and p.case_version == case.version
    }
    sentinels: list[Sentinel] = []
    for input_id in judged_inputs(case):
        sentinels.append(known_bad(case, input_id))
        if (case.key, input_id) in good:
            sentinels.append(
                Sentinel(
                    case_key=case.key,
                    case_version=case.version,
                    input_id=input_id,
                    kind="known_good",
                    source="prepared",
                    text=good[(case.key, input_id)],
                )
            )
    return tuple(sentinels)


class CycleItem(BaseModel):
    """One output to grade in a cycle: a run's output, or a sentinel."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    """The run id for a real item; `Sentinel.item_id` for a sentinel."""
    case_key: str
    input_id: str = MAIN_INPUT
    output: str
    sentinel: SentinelKind | None = None

    @classmethod
    def of_sentinel(cls, sentinel: Sentinel) -> CycleItem:
        return cls(
            item_id=sentinel.item_id,
            case_key=sentinel.case_key,
            input_id=sentinel.input_id,
            output=sentinel.text,
            sentinel=sentinel.kind,
        )


def _order_key(cycle_id: str, item: CycleItem) -> str:
    return hashlib.sha256(f"{cycle_id}\0{item.item_id}".encode()).hexdigest()


def mix_cycle(
    cycle_id: str, items: Iterable[CycleItem], sentinels: Iterable[Sentinel]
) -> tuple[CycleItem, ...]:
    """Real items and sentinels in one deterministic order: sorted by a hash of the cycle id
    and item id, so the order does not depend on how the inputs were listed, and a new
    cycle id reshuffles it.

    Raises:
        ValueError: Two items share an id.
    """
    mixed = [*items, *(CycleItem.of_sentinel(s) for s in sentinels)]
    ids = [i.item_id for i in mixed]
    if len(set(ids)) != len(ids):
        raise ValueError("cycle items must have distinct ids")
    return tuple(sorted(mixed, key=lambda item: _order_key(cycle_id, item)))


def item_verdict(grades: Iterable[GradeRecord]) -> Outcome | None:
    """The whole item's verdict (see the module docstring); None when nothing was graded."""
    outcomes = [g.outcome for g in grades if g.outcome != "ungraded"]
    if not outcomes:
        return None
    if "fail" in outcomes:
        return "fail"
    return "pass" if all(o == "pass" for o in outcomes) else "partial"


class JudgedItem(BaseModel):
    """One judge's grades of one cycle item."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cycle_id: str
    item: CycleItem
    judge_api_id: str
    grades: tuple[GradeRecord, ...]

    @property
    def verdict(self) -> Outcome | None:
        return item_verdict(self.grades)


async def grade_cycle(
    provider: Provider,
    judge: JudgeModel,
    cases: Mapping[str, Case],
    cycle_id: str,
    items: Sequence[CycleItem],
    attempts: int = DEFAULT_ATTEMPTS,
    *,
    concurrency: int = 4,
) -> tuple[JudgedItem, ...]:
    """`judge` grades every item (real or sentinel, by the same calls) on its rubric.

    Args:
        provider: Serves the judge's requests.
        judge: The judge model asked.
        cases: Case key → case, for every item.
        cycle_id: The grading cycle, recorded on every judged item.
        items: The cycle's items, real runs and sentinels mixed.
        attempts: Tries per question until a reply parses.
        concurrency: Judge requests in flight at once, over the whole cycle.
    """
    bounded = BoundedProvider(provider, concurrency)

    async def one(item: CycleItem) -> JudgedItem:
        grades = await grade_rubric(
            bounded, judge, cases[item.case_key], item.output, attempts, input_id=item.input_id
        )
        return JudgedItem(cycle_id=cycle_id, item=item, judge_api_id=judge.api_id, grades=grades)

    return tuple(await asyncio.gather(*(one(item) for item in items)))


class Misgrade(BaseModel):
    """A sentinel a judge got wrong."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cycle_id: str
    judge_api_id: str
    item_id: str
    sentinel: SentinelKind
    verdict: Outcome


def _one_cycle(judged: Sequence[JudgedItem]) -> None:
    cycles = {j.cycle_id for j in judged}
    if len(cycles) > 1:
        raise ValueError(f"grades from several cycles: {', '.join(sorted(cycles))}")


def sentinel_misgrades(sentinel_grades: Iterable[JudgedItem]) -> tuple[Misgrade, ...]:
    """Every known-bad passed and known-good failed (real items are ignored)."""
    judged = list(sentinel_grades)
    _one_cycle(judged)
    wrong = {"known_bad": "pass", "known_good": "fail"}
    return tuple(
        Misgrade(
            cycle_id=j.cycle_id,
            judge_api_id=j.judge_api_id,
            item_id=j.item.item_id,
            sentinel=j.item.sentinel,
            verdict=j.verdict,
        )
        for j in judged
        if j.item.sentinel is not None
        and j.verdict is not None
        and j.verdict == wrong[j.item.sentinel]
    )


def flag_judges(sentinel_grades: Iterable[JudgedItem]) -> set[str]:
    """Judge API ids that passed a known-bad or failed a known-good in this cycle.

    Raises:
        ValueError: The grades come from more than one cycle (flags are per cycle).
    """
    return {m.judge_api_id for m in sentinel_misgrades(sentinel_grades)}


def held_runs(judged: Iterable[JudgedItem], flagged: Collection[str]) -> set[str]:
    """Run ids (real items) graded in this cycle by a flagged judge: held from publication.

    Raises:
        ValueError: The grades come from more than one cycle.
    """
    items = list(judged)
    _one_cycle(items)
    return {j.item.item_id for j in items if j.item.sentinel is None and j.judge_api_id in flagged}
