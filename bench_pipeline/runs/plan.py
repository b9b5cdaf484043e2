"""What the pipeline runs itself: executable setups × the PM and Navigator case versions.

A partition is one setup on one case version (its key names both, so a case edit makes new
partitions and old results stay with the version they ran against). Inside a partition the
work items are the case's prompts (one, or one per Navigator input) × its repeats (three for
a noisy case). Use cases are not run here: agents run them elsewhere and submit the runs.

Each work item has a stable `run_id` (a hash of setup, case version, input and repeat), which
is what makes a batch resumable: a run id already stored is never run again. Repeats differ
by a `seed` parameter in the request, so each repeat is its own request (and cache entry)
instead of three copies of one answer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from bench_pipeline.providers.base import ChatRequest
from bench_pipeline.taskbank import NOISY_REPEATS, Case, Prompt, TaskBank, content_hash
from bench_pipeline.taskbank.setups import Setup, SetupCatalog

EXECUTED_SUITES = ("pm", "navigator")
MAX_TOKENS = 16_000
"""Completion budget of every executed request (reasoning included). Recorded with each run:
an answer cut at this budget is flagged incomplete, never edited."""
_SEP = ":"


def partition_key(setup_id: str, case: Case) -> str:
    """`<setup id>:<suite>:<case id>@<version>`, e.g. `s0a1b…:pm:pm-delay-update@3f2c…`."""
    return f"{setup_id}{_SEP}{case.suite}{_SEP}{case.id}@{case.version}"


@dataclass(frozen=True)
class PartitionRef:
    setup_id: str
    suite: str
    case_id: str
    version: str


def parse_partition_key(key: str) -> PartitionRef:
    """The parts of a key made by `partition_key`.

    Raises:
        ValueError: Not such a key.
    """
    try:
        setup_id, suite, rest = key.split(_SEP)
        case_id, version = rest.split("@")
    except ValueError:
        raise ValueError(f"not a model-run partition key: {key!r}") from None
    return PartitionRef(setup_id, suite, case_id, version)


@dataclass(frozen=True)
class WorkItem:
    """One run to make: a setup's answer to one prompt of one case version, one repeat."""

    setup: Setup
    case: Case
    prompt: Prompt
    repeat: int

    @property
    def partition_key(self) -> str:
        return partition_key(self.setup.setup_id, self.case)

    @property
    def run_id(self) -> str:
        """`r` + 16 hex digits over setup, suite, case, version, input and repeat."""
        return "r" + content_hash(
            {
                "setup": self.setup.setup_id,
                "suite": self.case.suite,
                "case": self.case.id,
                "version": self.case.version,
                "input": self.prompt.input_id,
                "repeat": self.repeat,
            }
        )

    def request(self) -> ChatRequest:
        """The chat request; a repeat beyond the first carries `seed` = its repeat number."""
        request = self.setup.chat_request(self.prompt.text, max_tokens=MAX_TOKENS)
        if self.repeat == 0:
            return request
        return request.model_copy(update={"extra": {**request.extra, "seed": self.repeat}})


def executable_cases(bank: TaskBank) -> list[Case]:
    return [case for suite in EXECUTED_SUITES for case in bank.suite(suite)]


def planned_partitions(bank: TaskBank, catalog: SetupCatalog) -> list[str]:
    """Every partition key of the current bank and setups, in a stable order."""
    setups = [s for s in catalog.setups if s.executable]
    return [partition_key(s.setup_id, c) for s in setups for c in executable_cases(bank)]


def ranges_of(keys: Sequence[str], setup_ids: Collection[str]) -> list[tuple[str, str]]:
    """The first and last key of each unbroken stretch of `keys` (in their registered order)
    whose setup is one of `setup_ids`: what one run per stretch covers, and nothing else.

    Raises:
        ValueError: A key is not a model-run partition key.
    """
    stretches: list[tuple[str, str]] = []
    start: str | None = None
    previous = ""  # set before any stretch can close
    for key in keys:
        if parse_partition_key(key).setup_id in setup_ids:
            start = start or key
        elif start is not None:
            stretches.append((start, previous))
            start = None
        previous = key
    if start is not None:
        stretches.append((start, previous))
    return stretches


def repeats_of(case: Case) -> int:
    return NOISY_REPEATS if case.noisy else 1


def work_items(keys: Iterable[str], bank: TaskBank, catalog: SetupCatalog) -> list[WorkItem]:
    """The work items of the given partitions, in key order.

    Raises:
        ValueError: A key names a setup or a case version that is no longer in the config
            (its runs stay stored; it cannot be run again).
    """
    items: list[WorkItem] = []
    for key in keys:
        ref = parse_partition_key(key)
        try:
            setup = catalog.get(ref.setup_id)
            case = bank.get(ref.suite, ref.case_id)
        except KeyError as missing:
            raise ValueError(f"partition {key}: {missing.args[0]}") from None
        if case.version != ref.version:
            raise ValueError(
                f"partition {key}: case {ref.case_id} is now version {case.version}; "
                "the old version cannot be run again"
            )
        items.extend(
            WorkItem(setup, case, prompt, repeat)
            for prompt in case.prompts()
            for repeat in range(repeats_of(case))
        )
    return items


def by_partition(items: Sequence[WorkItem]) -> dict[str, list[WorkItem]]:
    grouped: dict[str, list[WorkItem]] = {}
    for item in items:
        grouped.setdefault(item.partition_key, []).append(item)
    return grouped
