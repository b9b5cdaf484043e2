"""UseCaseRank: run scores, trust, plausibility flags and the per-use-case group boards.

Every board is a function of the submitted runs, the reviewers' clearances and a date
`as_of`: only runs published by then and not replaced by then are live, only clearances
made by then count, and recency is measured from then. So the board as it stood on any past
date can be rebuilt exactly, which is what the trend arrows compare against.

Run level (site/methodology/usecase-rank.md):

* Five metrics in 0–1: outcome (success 1, partial 0.5, fail 0); cost efficiency
  (cheapest cost per success on the use case ÷ this run's; 0 when failed or unpriced); speed
  (fastest wall time of a non-failed run on the use case ÷ this run's; 0 when failed);
  autonomy 1 / (1 + step-ins); first try (1, else 1 / (1 + retries)). The "cheapest" and
  "fastest" are taken over the runs that count for the board plus the run itself, so a run
  under review is measured against the same reference and never scores above 1.
  A ratio 0 / 0 (a free run against a free cheapest, an instant run) counts as 1.
* Run score = 100 × the weighted sum of the metrics, weights normalised to sum 1 (the
  defaults already do), so a reader's own weights still give a 0–100 score.
* Cost per success = cost × (1 + retries) ÷ outcome value (exact Decimal; none when the
  run failed or its cost is unknown).
* Hard flags send a run under review (public, but out of the board) until a reviewer has
  cleared every one of them with a `Clearance`. Trust = 50 + 20 (evidence log of at least
  200 characters) + 10 (no hard flag raised, cleared or not) − 5 per warning + 10 per
  counted reproduction (below), clipped to 0–100.

Gaming (untrusted submissions):

* Duplicates. Live runs with the same `content_key` (model, settings, use case and version,
  token counts, outcomes and evidence, compared modulo white space and field order:
  `runs.submissions.content_key`) are one run, and so are near copies: the same model (by
  skeleton) and settings on the same use case and version, evidence logs that are the same
  or a near copy (`evidence_overlap` at least `NEAR_COPY_SHARE`), and every token count
  within `NEAR_TOKEN_SHARE` (5%) of the other's. The earliest published (then the smallest
  run id) is the original, every other one carries the hard flag `duplicate` naming it
  (`duplicate_of`) and never counts: a clearance does not lift this flag.
* Reproductions. A run naming another in `reproduces` counts for it (+10 trust; the original
  is Verified) only when it is live and not under review, both runs' files proved a
  registered submitter (`submitter_verified`: `runs.submitters`) and the two differ
  (compared by `core.text.skeleton`, so a look-alike name is the same person), it ran the
  same model and settings on the same use case and version, succeeded, and has an evidence
  log of its own: not empty, and not a near copy (`evidence_overlap` at least 80%) of the
  original's nor of a reproduction already counted for it. Each submitter counts once per
  original. Any other claim is kept and shown with the reason it does not count
  (`reproduction_counts` false, `reproduction_reason`).
* A claimed cost beyond what any plausible rate gives (every token, input and output, at
  `ingest.tables.MAX_USD_PER_M` per million, the bound above which a source's price is
  quarantined as a unit error) raises the hard flag `implausible_cost`, whether or not the
  model has a rate.
* Look-alike model names (invisible characters, compatibility forms, letters that pass for
  Latin: `core.text.lookalike_problems`) raise the hard flag `lookalike_model_name`, and the
  board shows the name escaped (`core.text.escaped`), never as the model it imitates.

Group level: group = model name + settings. Runs that count (live, not under review) are
weighted by trust/100 × 0.5^(age/90 days); score = weighted mean with a 90% interval
(`stats.weighted_ci90`: none when n_eff ≤ 1). A group needs 5 counted runs for a rank.
Reruns (`rerun_of`, on another group) are head-to-head pairs for a Bradley–Terry rating
(see `bradley_terry`); a group in 20 or more pairs is scored 0.7 × its weighted score + 0.3
× 100 × its mean win probability against every other rated group.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Literal, get_args

import polars as pl
from polars.datatypes import DataTypeClass

from bench_pipeline.core.money import MAX_STORED_USD, exact
from bench_pipeline.core.stats import weighted_ci90
from bench_pipeline.core.text import escaped, lookalike_problems, normalise, skeleton
from bench_pipeline.grading.outcomes import RUN_OUTCOME_CREDIT, RunOutcome
from bench_pipeline.ingest.tables import MAX_USD_PER_M
from bench_pipeline.runs.costing import format_usd
from bench_pipeline.scores.bradley_terry import bradley_terry, mean_win_probability
from bench_pipeline.scores.ranking import Eligible, RankRule

Autonomy = Literal["autonomous", "lightly_guided", "heavily_guided"]
Trend = Literal["up", "down", "same", "new"]

COST_MISMATCH = "cost_mismatch"
IMPLAUSIBLE_COST = "implausible_cost"
AUTONOMY_MISMATCH = "autonomy_mismatch"
EVIDENCE_HASH_MISMATCH = "evidence_hash_mismatch"
IMPLAUSIBLE_THROUGHPUT = "implausible_throughput"
STEP_INS_EXCEED_TURNS = "step_ins_exceed_turns"
RETRIES_VS_FIRST_TRY = "retries_vs_first_try"
LOOKALIKE_MODEL_NAME = "lookalike_model_name"
DUPLICATE = "duplicate"
HARD_FLAGS: tuple[str, ...] = (
    COST_MISMATCH,
    IMPLAUSIBLE_COST,
    AUTONOMY_MISMATCH,
    EVIDENCE_HASH_MISMATCH,
    IMPLAUSIBLE_THROUGHPUT,
    STEP_INS_EXCEED_TURNS,
    RETRIES_VS_FIRST_TRY,
    LOOKALIKE_MODEL_NAME,
    DUPLICATE,
)
"""Every hard flag, in the order they are reported."""
UNCLEARABLE_FLAGS = frozenset({DUPLICATE})
"""Flags a clearance does not lift (a duplicate counts once, as its original)."""
REPRODUCTION_TRUST = 10.0

COST_TOLERANCE = Decimal("0.25")
"""A claimed cost further than this fraction from the computed one is a `cost_mismatch`."""
MAX_OUTPUT_TOKENS_PER_SECOND = 1_000
NEAR_COPY_SHARE = 0.8
"""Two evidence logs sharing at least this share of lines are one log (`evidence_overlap`)."""
NEAR_TOKEN_SHARE = 0.05
"""Token counts this close (relative to the larger) are the same count, for duplicates."""
SUBSTANTIAL_EVIDENCE_CHARS = 200
HALF_LIFE_DAYS = 90.0
MIN_RUNS_FOR_RANK = 5
MIN_PAIRS_FOR_BLEND = 20
BLEND_SCORE_SHARE = 0.7
TREND_LOOKBACK = timedelta(days=7)
GROUP_RANK = RankRule(
    "rank", "score", ("use_case", "simulated"),
    Eligible("runs", MIN_RUNS_FOR_RANK, at_least=True), computed_by_release=False,
)  # fmt: skip
"""How a board ranks its groups: by score, within each use case, real submissions and the
offline demo's simulated runs apart (the page shows them as two boards), groups with
`MIN_RUNS_FOR_RANK` counted runs. The release checks the published ranks with this rule."""

_OUTCOMES = frozenset(get_args(RunOutcome))
_AUTONOMY = frozenset(get_args(Autonomy))


@dataclass(frozen=True)
class MetricWeights:
    """Weights of the five run metrics (the published defaults; readers may pick others)."""

    outcome: float = 0.40
    cost_efficiency: float = 0.15
    speed: float = 0.15
    autonomy: float = 0.15
    first_try: float = 0.15

    def __post_init__(self) -> None:
        values = self.as_tuple()
        if any(not math.isfinite(v) or v < 0 for v in values) or sum(values) <= 0:
            raise ValueError(f"weights must be finite, non-negative, not all zero: {values}")

    def as_tuple(self) -> tuple[float, float, float, float, float]:
        return (self.outcome, self.cost_efficiency, self.speed, self.autonomy, self.first_try)


DEFAULT_WEIGHTS = MetricWeights()


@dataclass(frozen=True, kw_only=True)
class UseCaseRun:
    """One submitted run: one attempt by one model (with its settings) at one use case.

    Attributes:
        run_id: Unique run id.
        use_case: The use case (task) the run attempted.
        model: Model name (or model combination) as grouped on the board.
        settings: Settings that make a separate group, e.g. "thinking off"; "" for none.
        outcome: `success` (100% of the rubric), `partial` or `fail`.
        first_try: Whether it succeeded on the first try (as submitted).
        retries: Retries taken.
        step_ins: Human (or scripted) messages after the initial prompt.
        turns: Turns of the session, as submitted.
        claimed_autonomy: The autonomy level the submission claims, if any.
        wall_time_s: Wall time in seconds.
        output_tokens: Output tokens over the run, if known (for the throughput check).
        cost_usd: Cost computed from tokens and dated rates (`costing.cost_of_all`); None
            when the model is unpriced.
        claimed_cost_usd: Cost the submission claims, if any.
        evidence_log: The evidence log.
        evidence_sha256: The SHA-256 (hex) the submission gives for its evidence log.
        warnings: Cost warnings from pricing (`model_unpriced`, `long_context_unpriced`).
        run_at: When the run was made (recency is measured from here).
        published_at: When it went public.
        replaced_at: When a newer submission replaced it, if it was.
        rerun_of: The run this one reruns on another model, for head-to-head pairs.
        reproduces: The run this one claims to reproduce (checked by the board).
        submitter: Who submitted it, as given (None: not named).
        use_case_version: The version of the use case that was run.
        content_key: What makes two submissions the same run (`runs.submissions`); None
            when unknown (never an exact duplicate).
        submitter_verified: Whether the run's file proved a registered submitter
            (`runs.submitters`); only such runs reproduce one another.
        token_counts: Token totals (input, output, cached, cache-write, reasoning), for the
            near-duplicate rule and the plausible-cost bound; None when unknown.
    """

    run_id: str
    use_case: str
    model: str
    settings: str = ""
    outcome: RunOutcome
    first_try: bool
    retries: int = 0
    step_ins: int = 0
    turns: int = 1
    claimed_autonomy: Autonomy | None = None
    wall_time_s: float
    output_tokens: int | None = None
    cost_usd: Decimal | None
    claimed_cost_usd: Decimal | None = None
    evidence_log: str = ""
    evidence_sha256: str | None = None
    warnings: tuple[str, ...] = ()
    run_at: datetime
    published_at: datetime
    replaced_at: datetime | None = None
    rerun_of: str | None = None
    reproduces: str | None = None
    submitter: str | None = None
    use_case_version: str | None = None
    content_key: str | None = None
    submitter_verified: bool = False
    token_counts: tuple[int, ...] | None = None
    simulated: bool = False
    """One of the offline demo's made-up runs: scored, grouped and ranked apart from real
    submissions, never a reference (the cheapest, the fastest) for one."""

    def __post_init__(self) -> None:
        if self.outcome not in _OUTCOMES:
            raise ValueError(f"run {self.run_id}: unknown outcome {self.outcome!r}")
        if self.claimed_autonomy is not None and self.claimed_autonomy not in _AUTONOMY:
            raise ValueError(f"run {self.run_id}: unknown autonomy {self.claimed_autonomy!r}")
        for name in ("retries", "step_ins", "turns"):
            if getattr(self, name) < 0:
                raise ValueError(f"run {self.run_id}: {name} must not be negative")
        if self.output_tokens is not None and self.output_tokens < 0:
            raise ValueError(f"run {self.run_id}: output_tokens must not be negative")
        if self.token_counts is not None and any(n < 0 for n in self.token_counts):
            raise ValueError(f"run {self.run_id}: token counts must not be negative")
        if not math.isfinite(self.wall_time_s) or self.wall_time_s < 0:
            raise ValueError(f"run {self.run_id}: wall_time_s must be finite and >= 0")
        for name in ("cost_usd", "claimed_cost_usd"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, Decimal) or value < 0):
                raise ValueError(f"run {self.run_id}: {name} must be a non-negative Decimal")
        if self.rerun_of == self.run_id:
            raise ValueError(f"run {self.run_id} cannot be a rerun of itself")

    @property
    def shown_model(self) -> str:
        """The model name as the board shows it: escaped when it is a look-alike."""
        return escaped(self.model) if lookalike_problems(self.model) else self.model

    @property
    def group(self) -> str:
        """Model name + settings: different settings are ranked separately."""
        return group_name(self.shown_model, self.settings)


@dataclass(frozen=True)
class Clearance:
    """A reviewer cleared one hard flag of one run (a record of its own: runs never change)."""

    run_id: str
    flag: str
    cleared_at: datetime
    reviewer: str = ""

    def __post_init__(self) -> None:
        if self.flag not in HARD_FLAGS:
            raise ValueError(f"not a hard flag: {self.flag!r}")


def group_name(model: str, settings: str = "") -> str:
    """The board's group label: `model` alone, or `model · settings`."""
    return f"{model} · {settings}" if settings else model


def autonomy_level(step_ins: int) -> Autonomy:
    """0 step-ins: autonomous; 1–3: lightly guided; 4 or more: heavily guided."""
    if step_ins == 0:
        return "autonomous"
    return "lightly_guided" if step_ins <= 3 else "heavily_guided"


def hard_flags(run: UseCaseRun) -> tuple[str, ...]:
    """The plausibility checks a run fails, in `HARD_FLAGS` order.

    * `cost_mismatch`: a claimed cost more than 25% away from the computed one (exactly
      25% passes; a positive claim against a computed 0 fails). Not checked without both.
    * `implausible_cost`: a claimed cost above `plausible_cost_bound` (every input and
      output token at the dearest price taken as real), with a rate for the model or
      without; or above `core.money.MAX_STORED_USD` (more than any money column holds),
      whatever the token counts. Not checked without a claim.
    * `autonomy_mismatch`: the claimed level is not the one its step-ins give.
    * `evidence_hash_mismatch`: the given SHA-256 is not the log's (UTF-8; hex compared
      case-insensitively). Not checked when no hash is given.
    * `implausible_throughput`: more than 1,000 output tokens per second of wall time
      (exactly 1,000 passes; any output in zero time fails).
    * `step_ins_exceed_turns`: more step-ins than turns.
    * `retries_vs_first_try`: first try means it succeeded on the first attempt, so only
      combinations that contradict each other: a first-try run with retries, or a success
      with no retry that says it was not first try. An honest failed or partial run (not
      first try, no retry) is not flagged: it stays in its group, where the board shows it.
    """
    flags = []
    computed, claimed = run.cost_usd, run.claimed_cost_usd
    if (
        computed is not None
        and claimed is not None
        and abs(claimed - computed) > (COST_TOLERANCE * computed)
    ):
        flags.append(COST_MISMATCH)
    bound = plausible_cost_bound(run)
    limit = MAX_STORED_USD if bound is None else min(bound, MAX_STORED_USD)
    if claimed is not None and claimed > limit:
        flags.append(IMPLAUSIBLE_COST)
    if run.claimed_autonomy is not None and run.claimed_autonomy != autonomy_level(run.step_ins):
        flags.append(AUTONOMY_MISMATCH)
    if run.evidence_sha256 is not None:
        actual = hashlib.sha256(run.evidence_log.encode("utf-8")).hexdigest()
        if run.evidence_sha256.strip().lower() != actual:
            flags.append(EVIDENCE_HASH_MISMATCH)
    if run.output_tokens is not None and run.output_tokens > (
        MAX_OUTPUT_TOKENS_PER_SECOND * run.wall_time_s
    ):
        flags.append(IMPLAUSIBLE_THROUGHPUT)
    if run.step_ins > run.turns:
        flags.append(STEP_INS_EXCEED_TURNS)
    if _first_try_contradicted(run):
        flags.append(RETRIES_VS_FIRST_TRY)
    if lookalike_problems(run.model):
        flags.append(LOOKALIKE_MODEL_NAME)
    return tuple(flags)


def plausible_cost_bound(run: UseCaseRun) -> Decimal | None:
    """The dearest cost a run's tokens can have: input + output tokens (cached, cache-write
    and reasoning tokens are among them) × `MAX_USD_PER_M` ÷ 1,000,000; None when its token
    counts are unknown."""
    if run.token_counts is None:
        return None
    input_tokens, output_tokens = run.token_counts[0], run.token_counts[1]
    with exact():
        return Decimal(input_tokens + output_tokens) * MAX_USD_PER_M / 1_000_000


def _first_try_contradicted(run: UseCaseRun) -> bool:
    """Whether `first_try` and `retries` contradict each other (see `hard_flags`)."""
    if run.first_try:
        return run.retries > 0
    return run.outcome == "success" and run.retries == 0


def trust(run: UseCaseRun, flags: Sequence[str], reproductions: int = 0) -> float:
    """Trust % from the plausibility checks and the counted reproductions (see the module
    docstring), clipped to 0–100."""
    value = 50.0
    if len(run.evidence_log) >= SUBSTANTIAL_EVIDENCE_CHARS:
        value += 20.0
    if not flags:
        value += 10.0
    value -= 5.0 * len(set(run.warnings))
    value += REPRODUCTION_TRUST * reproductions
    return min(100.0, max(0.0, value))


def evidence_lines(log: str) -> frozenset[str]:
    """The non-empty lines of an evidence log as compared: normalised (`core.text`), white
    space collapsed."""
    lines = (" ".join(normalise(line).split()) for line in log.splitlines())
    return frozenset(line for line in lines if line)


def evidence_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of the smaller log's distinct lines (`evidence_lines`) found in the other:
    1.0 for the same log, however it was padded; 0.0 when either has no line."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _near_copy(a: frozenset[str], b: frozenset[str]) -> bool:
    return evidence_overlap(a, b) >= NEAR_COPY_SHARE


def _same_setup(run: UseCaseRun) -> tuple[str, str, str, str | None]:
    """Model (by skeleton), settings, use case and version, as the duplicate rule compares."""
    settings = " ".join(normalise(run.settings).split())
    return (" ".join(skeleton(run.model).split()), settings, run.use_case, run.use_case_version)


def _tokens_close(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> bool:
    """Every token count within `NEAR_TOKEN_SHARE` of the other's (both known)."""
    if a is None or b is None or len(a) != len(b):
        return False
    return all(abs(x - y) <= NEAR_TOKEN_SHARE * max(x, y) for x, y in zip(a, b, strict=True))


def duplicates(live: Sequence[UseCaseRun]) -> dict[str, str]:
    """Run id → the original it duplicates (see the module docstring), for every duplicate."""
    first: dict[str, UseCaseRun] = {}
    originals: dict[tuple[str, str, str, str | None], list[UseCaseRun]] = defaultdict(list)
    lines: dict[str, frozenset[str]] = {}
    found = {}
    for run in sorted(live, key=lambda r: (r.published_at, r.run_id)):
        original = first.get(run.content_key) if run.content_key is not None else None
        if original is None:
            lines[run.run_id] = evidence_lines(run.evidence_log)
            original = next(
                (
                    earlier
                    for earlier in originals[_same_setup(run)]
                    if _tokens_close(run.token_counts, earlier.token_counts)
                    and _near_copy(lines[run.run_id], lines[earlier.run_id])
                ),
                None,
            )
        if original is not None:
            found[run.run_id] = original.run_id
            continue
        if run.content_key is not None:
            first[run.content_key] = run
        originals[_same_setup(run)].append(run)
    return found


@dataclass(frozen=True)
class Reproduction:
    """The verdict on one run's claim to reproduce another."""

    run_id: str
    original: str
    counts: bool
    reason: str
    """Why it counts, or why not, in words a reader can check."""


def _person(name: str | None) -> str:
    """A submitter as compared: its skeleton, white space collapsed."""
    return " ".join(skeleton(name or "").split())


def reproductions(
    live: Sequence[UseCaseRun], under_review: Mapping[str, bool], duplicate_of: Mapping[str, str]
) -> dict[str, Reproduction]:
    """Run id → the verdict on its `reproduces` claim, for every live run making one."""
    by_id = {r.run_id: r for r in live}
    verdicts: dict[str, Reproduction] = {}
    counted_by: dict[str, set[str]] = defaultdict(set)
    counted: dict[str, list[str]] = defaultdict(list)
    for run in sorted(live, key=lambda r: (r.published_at, r.run_id)):
        if run.reproduces is None:
            continue
        original = by_id.get(run.reproduces)
        reason = None
        if original is None:
            reason = f"no live run {run.reproduces} to reproduce"
        elif run.run_id in duplicate_of:
            reason = f"it is a duplicate of {duplicate_of[run.run_id]}"
        elif run.reproduces in duplicate_of:
            reason = f"{run.reproduces} is a duplicate of {duplicate_of[run.reproduces]}"
        elif under_review[run.run_id]:
            reason = "it is under review"
        elif not _person(run.submitter) or not _person(original.submitter):
            reason = "both runs must name their submitter"
        elif not (run.submitter_verified and original.submitter_verified):
            reason = "both runs must be signed by registered submitters"
        elif _person(run.submitter) == _person(original.submitter):
            reason = "a self-reproduction: the same submitter ran both"
        elif (run.model, run.settings) != (original.model, original.settings):
            reason = (
                f"another model or settings: {run.group!r}, the original ran {original.group!r}"
            )
        elif (run.use_case, run.use_case_version) != (original.use_case, original.use_case_version):
            reason = (
                f"another use case version: {run.use_case}@{run.use_case_version}, the "
                f"original ran {original.use_case}@{original.use_case_version}"
            )
        elif run.outcome != "success":
            reason = f"the reproduction did not succeed (outcome {run.outcome})"
        elif _person(run.submitter) in counted_by[original.run_id]:
            reason = "this submitter already reproduced it (each counts once)"
        else:
            reason = _copied_evidence(run, original, [by_id[r] for r in counted[original.run_id]])
            if reason is None:
                counted_by[original.run_id].add(_person(run.submitter))
                counted[original.run_id].append(run.run_id)
        verdicts[run.run_id] = Reproduction(
            run.run_id,
            run.reproduces,
            reason is None,
            "an independent reproduction" if reason is None else "does not count: " + reason,
        )
    return verdicts


def _copied_evidence(
    run: UseCaseRun, original: UseCaseRun, counted: Sequence[UseCaseRun]
) -> str | None:
    """Why `run`'s evidence log is not its own (empty, or a near copy of the original's or
    of a reproduction already counted for it), or None."""
    own = evidence_lines(run.evidence_log)
    if not own:
        return "it has no evidence log of its own"
    for other in (original, *counted):
        share = evidence_overlap(own, evidence_lines(other.evidence_log))
        if share >= NEAR_COPY_SHARE:
            whose = "the original's" if other is original else f"{other.run_id}'s"
            return f"its evidence log is a near copy of {whose} ({share:.0%} of lines shared)"
    return None


def recency(run_at: datetime, as_of: datetime) -> float:
    """0.5^(age in days / 90), the age in whole UTC days (a run of `as_of`'s own day is new,
    as is one dated after it). Whole days, so a board rebuilt later the same day, or in a
    second home, from the same runs gives the same figures to the last digit."""
    age_days = max(0, (_utc_day(as_of) - _utc_day(run_at)).days)
    return 0.5 ** (age_days / HALF_LIFE_DAYS)


def _utc_day(moment: datetime) -> date:
    return (moment.astimezone(UTC) if moment.tzinfo else moment).date()


def cost_per_success(run: UseCaseRun) -> Decimal | None:
    """Spend over all attempts ÷ outcome value: cost × (1 + retries) ÷ (1 or 0.5)."""
    if run.outcome == "fail" or run.cost_usd is None:
        return None
    with exact():
        spend = run.cost_usd * (1 + run.retries)
        return spend if run.outcome == "success" else spend * 2


def _ratio(best: float, own: float) -> float:
    """Return best ÷ own for a "lower is better" quantity, with 0 ÷ 0 = 1, clipped to 0–1."""
    return 1.0 if own == 0 else min(1.0, best / own)


def _cost_ratio(best: Decimal, own: Decimal) -> float:
    """`_ratio` for exact costs: divided as Decimals, then made a float."""
    if own == 0:
        return 1.0
    with exact():
        return min(1.0, float(best / own))


@dataclass(frozen=True)
class UseCaseRunScore:
    """One row of `usecase_runs`."""

    run_id: str
    use_case: str
    group: str
    model: str
    settings: str
    outcome: RunOutcome
    score: float
    metric_outcome: float
    metric_cost_efficiency: float
    metric_speed: float
    metric_autonomy: float
    metric_first_try: float
    cost_usd: Decimal | None
    cost_per_success_usd: Decimal | None
    trust: float
    weight: float
    """trust/100 × recency: the run's weight in its group's score."""
    flags: tuple[str, ...]
    """Hard flags raised (cleared ones included: clearing does not unraise them)."""
    cleared_flags: tuple[str, ...]
    warnings: tuple[str, ...]
    under_review: bool
    verified: bool
    """At least one reproduction counted for it."""
    rerun_of: str | None
    published_at: datetime
    duplicate_of: str | None
    """The original this run duplicates (it then never counts)."""
    reproduces: str | None
    """The run this one claims to reproduce."""
    reproduction_counts: bool | None
    """Whether that claim counts (None when it makes none)."""
    reproduction_reason: str | None
    model_name_problem: str | None
    """Why the model name is a look-alike, when it is."""
    simulated: bool


@dataclass(frozen=True)
class UseCaseGroupScore:
    """One row of `usecase_groups`."""

    use_case: str
    group: str
    model: str
    settings: str
    score: float | None
    """The board's score: the weighted score, blended with Bradley–Terry from 20 pairs."""
    weighted_score: float | None
    ci_low: float | None
    ci_high: float | None
    """The 90% interval of `weighted_score` (None when n_eff ≤ 1)."""
    n_eff: float | None
    runs: int
    passes: int
    partials: int
    fails: int
    pass_rate: float | None
    under_review_runs: int
    bt_pairs: int
    bt_win_probability: float | None
    blended: bool
    rank: int | None
    trend: Trend | None
    simulated: bool


@dataclass(frozen=True)
class UseCaseBoard:
    """Run scores and group boards of every use case, as of one date."""

    as_of: datetime
    runs: tuple[UseCaseRunScore, ...]
    groups: tuple[UseCaseGroupScore, ...]

    @property
    def usecase_runs(self) -> pl.DataFrame:
        rows = [
            {
                **{k: v for k, v in row.__dict__.items() if k not in _JOINED},
                "cost_usd": format_usd(row.cost_usd),
                "cost_per_success_usd": format_usd(row.cost_per_success_usd),
                **{name: ",".join(getattr(row, name)) for name in _JOINED},
            }
            for row in self.runs
        ]
        return pl.DataFrame(rows, schema=_RUN_SCHEMA, orient="row")

    @property
    def usecase_groups(self) -> pl.DataFrame:
        return pl.DataFrame([g.__dict__ for g in self.groups], schema=_GROUP_SCHEMA, orient="row")


_JOINED = ("flags", "cleared_flags", "warnings")
_RUN_SCHEMA: dict[str, pl.DataType | DataTypeClass] = {
    "run_id": pl.String,
    "use_case": pl.String,
    "group": pl.String,
    "model": pl.String,
    "settings": pl.String,
    "outcome": pl.String,
    "score": pl.Float64,
    "metric_outcome": pl.Float64,
    "metric_cost_efficiency": pl.Float64,
    "metric_speed": pl.Float64,
    "metric_autonomy": pl.Float64,
    "metric_first_try": pl.Float64,
    "cost_usd": pl.String,
    "cost_per_success_usd": pl.String,
    "trust": pl.Float64,
    "weight": pl.Float64,
    "under_review": pl.Boolean,
    "verified": pl.Boolean,
    "rerun_of": pl.String,
    "published_at": pl.Datetime("us", "UTC"),
    "flags": pl.String,
    "cleared_flags": pl.String,
    "warnings": pl.String,
    "duplicate_of": pl.String,
    "reproduces": pl.String,
    "reproduction_counts": pl.Boolean,
    "reproduction_reason": pl.String,
    "model_name_problem": pl.String,
    "simulated": pl.Boolean,
}
_GROUP_SCHEMA = {
    "use_case": pl.String,
    "group": pl.String,
    "model": pl.String,
    "settings": pl.String,
    "score": pl.Float64,
    "weighted_score": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n_eff": pl.Float64,
    "runs": pl.Int64,
    "passes": pl.Int64,
    "partials": pl.Int64,
    "fails": pl.Int64,
    "pass_rate": pl.Float64,
    "under_review_runs": pl.Int64,
    "bt_pairs": pl.Int64,
    "bt_win_probability": pl.Float64,
    "blended": pl.Boolean,
    "rank": pl.Int64,
    "trend": pl.String,
    "simulated": pl.Boolean,
}


# The board ----------------------------------------------------------------------------------


def _live(run: UseCaseRun, as_of: datetime) -> bool:
    return run.published_at <= as_of and (run.replaced_at is None or run.replaced_at > as_of)


def _score_runs(
    live: Sequence[UseCaseRun],
    clearances: Sequence[Clearance],
    as_of: datetime,
    weights: MetricWeights,
) -> list[UseCaseRunScore]:
    cleared: dict[str, set[str]] = defaultdict(set)
    for clearance in clearances:
        if clearance.cleared_at <= as_of and clearance.flag not in UNCLEARABLE_FLAGS:
            cleared[clearance.run_id].add(clearance.flag)
    duplicate_of = duplicates(live)
    flags = {
        run.run_id: hard_flags(run) + ((DUPLICATE,) if run.run_id in duplicate_of else ())
        for run in live
    }
    under_review = {r.run_id: not set(flags[r.run_id]) <= cleared[r.run_id] for r in live}
    claims = reproductions(live, under_review, duplicate_of)
    reproduced: dict[str, int] = defaultdict(int)
    for verdict in claims.values():
        reproduced[verdict.original] += verdict.counts
    counted = [r for r in live if not under_review[r.run_id]]
    cheapest: dict[str, Decimal] = {}
    fastest: dict[str, float] = {}
    for run in counted:
        cps = cost_per_success(run)
        if cps is not None and (run.use_case not in cheapest or cps < cheapest[run.use_case]):
            cheapest[run.use_case] = cps
        if run.outcome != "fail":
            fastest[run.use_case] = min(fastest.get(run.use_case, math.inf), run.wall_time_s)

    total_weight = math.fsum(weights.as_tuple())
    rows = []
    for run in live:
        cps = cost_per_success(run)
        failed = run.outcome == "fail"
        if failed or cps is None:
            cost_efficiency = 0.0
        else:
            cost_efficiency = _cost_ratio(min(cheapest.get(run.use_case, cps), cps), cps)
        speed = (
            0.0
            if failed
            else _ratio(min(fastest.get(run.use_case, math.inf), run.wall_time_s), run.wall_time_s)
        )
        metrics = (
            RUN_OUTCOME_CREDIT[run.outcome],
            cost_efficiency,
            speed,
            1.0 / (1 + run.step_ins),
            1.0 if run.first_try else 1.0 / (1 + run.retries),
        )
        score = (
            100.0
            * math.fsum(w * m for w, m in zip(weights.as_tuple(), metrics, strict=True))
            / total_weight
        )
        run_flags = flags[run.run_id]
        run_trust = trust(run, run_flags, reproduced[run.run_id])
        claim = claims.get(run.run_id)
        problems = lookalike_problems(run.model)
        rows.append(
            UseCaseRunScore(
                run_id=run.run_id,
                use_case=run.use_case,
                group=run.group,
                model=run.shown_model,
                settings=run.settings,
                outcome=run.outcome,
                score=min(100.0, max(0.0, score)),
                metric_outcome=metrics[0],
                metric_cost_efficiency=metrics[1],
                metric_speed=metrics[2],
                metric_autonomy=metrics[3],
                metric_first_try=metrics[4],
                cost_usd=run.cost_usd,
                cost_per_success_usd=cps,
                trust=run_trust,
                weight=run_trust / 100.0 * recency(run.run_at, as_of),
                flags=run_flags,
                cleared_flags=tuple(f for f in run_flags if f in cleared[run.run_id]),
                warnings=tuple(dict.fromkeys(run.warnings)),
                under_review=under_review[run.run_id],
                verified=reproduced[run.run_id] > 0,
                rerun_of=run.rerun_of,
                published_at=run.published_at,
                duplicate_of=duplicate_of.get(run.run_id),
                reproduces=run.reproduces,
                reproduction_counts=None if claim is None else claim.counts,
                reproduction_reason=None if claim is None else claim.reason,
                model_name_problem="; ".join(problems) or None,
                simulated=run.simulated,
            )
        )
    rows.sort(key=lambda r: (r.use_case, r.group, r.run_id))
    return rows


def _head_to_head(rows: Sequence[UseCaseRunScore]) -> list[tuple[str, str, float]]:
    """Rerun pairs of one use case between counted runs of two different groups."""
    by_id = {r.run_id: r for r in rows if not r.under_review}
    pairs = []
    for rerun in by_id.values():
        original = by_id.get(rerun.rerun_of) if rerun.rerun_of else None
        if original is None or original.group == rerun.group:
            continue
        if rerun.score > original.score:
            result = 1.0
        elif rerun.score < original.score:
            result = 0.0
        else:
            result = 0.5
        pairs.append((rerun.group, original.group, result))
    return pairs


def _groups(rows: Sequence[UseCaseRunScore]) -> list[UseCaseGroupScore]:
    """The group rows of one use case, real or simulated (rank and trend left None)."""
    by_group: dict[str, list[UseCaseRunScore]] = defaultdict(list)
    for row in rows:
        by_group[row.group].append(row)
    pairs = _head_to_head(rows)
    pair_counts: dict[str, int] = defaultdict(int)
    for a, b, _ in pairs:
        pair_counts[a] += 1
        pair_counts[b] += 1
    win_probability = mean_win_probability(bradley_terry(pairs)) if pairs else {}

    groups: list[UseCaseGroupScore] = []
    for group, members in sorted(by_group.items()):
        counted = [r for r in members if not r.under_review]
        scores = [r.score for r in counted]
        weights = [r.weight for r in counted]
        weighted = low = high = n_eff = None
        if counted and math.fsum(weights) > 0:
            weighted, low, high = weighted_ci90(scores, weights)
            n_eff = math.fsum(weights) ** 2 / math.fsum(w * w for w in weights)
        probability = win_probability.get(group)
        blended = (
            weighted is not None
            and probability is not None
            and pair_counts[group] >= MIN_PAIRS_FOR_BLEND
        )
        score = weighted
        if blended and weighted is not None and probability is not None:
            score = BLEND_SCORE_SHARE * weighted + (1 - BLEND_SCORE_SHARE) * 100.0 * probability
        outcomes = [r.outcome for r in counted]
        groups.append(
            UseCaseGroupScore(
                use_case=members[0].use_case,
                group=group,
                model=members[0].model,
                settings=members[0].settings,
                score=score,
                weighted_score=weighted,
                ci_low=low,
                ci_high=high,
                n_eff=n_eff,
                runs=len(counted),
                passes=outcomes.count("success"),
                partials=outcomes.count("partial"),
                fails=outcomes.count("fail"),
                pass_rate=outcomes.count("success") / len(counted) if counted else None,
                under_review_runs=len(members) - len(counted),
                bt_pairs=pair_counts[group],
                bt_win_probability=probability,
                blended=blended,
                rank=None,
                trend=None,
                simulated=members[0].simulated,
            )
        )
    return groups


def _board_at(
    runs: Sequence[UseCaseRun],
    clearances: Sequence[Clearance],
    as_of: datetime,
    weights: MetricWeights,
) -> tuple[list[UseCaseRunScore], list[UseCaseGroupScore]]:
    """Every live run scored and every group ranked (`GROUP_RANK`), as of `as_of`. Real runs
    and simulated ones are scored apart: neither is a reference, a duplicate or a
    reproduction for the other."""
    rows: list[UseCaseRunScore] = []
    groups: list[UseCaseGroupScore] = []
    for simulated in (False, True):
        live = [r for r in runs if r.simulated == simulated and _live(r, as_of)]
        scored = _score_runs(live, clearances, as_of, weights)
        by_use_case: dict[str, list[UseCaseRunScore]] = defaultdict(list)
        for row in scored:
            by_use_case[row.use_case].append(row)
        rows += scored
        groups += [g for use_case in sorted(by_use_case) for g in _groups(by_use_case[use_case])]
    ranks = GROUP_RANK.ranks([g.__dict__ for g in groups])
    return rows, [replace(g, rank=rank) for g, rank in zip(groups, ranks, strict=True)]


def trend(rank_now: int | None, rank_then: int | None, ranked_then: bool) -> Trend | None:
    """The arrow beside a group: its rank now against its rank on the board a week ago.

    None when the group has no rank now, or when nothing on that use case was ranked then
    (no ranked history); `new` when others were ranked then but not this group; else
    `up` (a smaller rank number), `down` or `same`.
    """
    if rank_now is None or not ranked_then:
        return None
    if rank_then is None:
        return "new"
    if rank_now < rank_then:
        return "up"
    return "down" if rank_now > rank_then else "same"


def usecase_board(
    runs: Iterable[UseCaseRun],
    clearances: Iterable[Clearance] = (),
    *,
    as_of: datetime,
    weights: MetricWeights = DEFAULT_WEIGHTS,
) -> UseCaseBoard:
    """Score every live run and build every use case's group board as of `as_of`.

    The trend compares each rank with the board rebuilt, by this same function's rules,
    as of `as_of − 7 days` (runs published by then and not replaced by then, clearances
    made by then, recency measured from then).

    Args:
        runs: Every submitted run, whatever its dates (the live ones are picked here).
        clearances: Every clearance made so far.
        as_of: The date the board stands at. All datetimes must be alike (all
            timezone-aware, or all naive UTC).
        weights: The five metric weights (the published defaults unless a reader changes
            them).

    Returns:
        The board: `usecase_runs` lists every live run, under review or not; `usecase_groups`
        every group with a live run, ranked ones first within each use case.

    Raises:
        ValueError: On a repeated run id.
    """
    run_list = list(runs)
    ids = [r.run_id for r in run_list]
    if len(set(ids)) != len(ids):
        raise ValueError("a run id appears twice")
    clearance_list = list(clearances)
    rows, groups = _board_at(run_list, clearance_list, as_of, weights)
    _, past = _board_at(run_list, clearance_list, as_of - TREND_LOOKBACK, weights)
    past_rank = {(g.use_case, g.simulated, g.group): g.rank for g in past}
    ranked_then = {(g.use_case, g.simulated) for g in past if g.rank is not None}
    with_trend = [
        replace(
            g,
            trend=trend(
                g.rank,
                past_rank.get((g.use_case, g.simulated, g.group)),
                (g.use_case, g.simulated) in ranked_then,
            ),
        )
        for g in groups
    ]
    with_trend.sort(
        key=lambda g: (
            g.use_case, g.simulated, g.rank is None, g.rank or 0, -(g.score or 0.0), g.group
        )
    )  # fmt: skip
    return UseCaseBoard(as_of=as_of, runs=tuple(rows), groups=tuple(with_trend))


__all__ = [
    "DEFAULT_WEIGHTS",
    "HARD_FLAGS",
    "Autonomy",
    "Clearance",
    "MetricWeights",
    "Reproduction",
    "Trend",
    "UseCaseBoard",
    "UseCaseGroupScore",
    "UseCaseRun",
    "UseCaseRunScore",
    "autonomy_level",
    "bradley_terry",
    "cost_per_success",
    "duplicates",
    "evidence_lines",
    "evidence_overlap",
    "group_name",
    "hard_flags",
    "mean_win_probability",
    "plausible_cost_bound",
    "recency",
    "reproductions",
    "trend",
    "trust",
    "usecase_board",
]
