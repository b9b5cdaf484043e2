"""What the pipeline runs itself: executable setups × the PM and Navigator case versions.

A model-run partition is one setup, keyed by its readable name (`setup_partition_key`:
`<model record>@<harness>`, e.g. `gpt-5.4-medium@api-bare`); inside it the work items are
every current PM and Navigator case version × its prompts (one, or one per Navigator input)
× its repeats (three for a noisy case). So the Dagster bookkeeping grows with the setups,
not with the bank: a new case version is new work inside each setup's partition, which
`bench run` launches only when it has runs to make. Use cases are not run here: agents run
them elsewhere and submit the runs.

Each run row keeps its case key (`partition_key`: `<setup id>:<suite>:<case>@<version>`),
so old results stay with the case version they ran against. Each work item has a stable
`run_id` (a hash of setup, case version, input and repeat), which is what makes a batch
resumable: a run id already stored is never run again. Repeats differ by a `seed` parameter
in the request, so each repeat is its own request (and cache entry) instead of three copies
of one answer.
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
    """The case key stored with each run: `<setup id>:<suite>:<case id>@<version>`, e.g.
    `s0a1b…:pm:pm-delay-update@3f2c…`."""
    return f"{setup_id}{_SEP}{case.suite}{_SEP}{case.id}@{case.version}"


def setup_partition_key(setup: Setup) -> str:
    """The setup's model-run partition: `<model record id>@<harness id>`."""
    return f"{setup.model.id}@{setup.harness.id}"


def setups_by_partition(catalog: SetupCatalog) -> dict[str, Setup]:
    """Every executable setup by its partition key.

    Raises:
        ValueError: Two executable setups share a model record id and a harness id.
    """
    found: dict[str, Setup] = {}
    for setup in catalog.setups:
        if not setup.executable:
            continue
        key = setup_partition_key(setup)
        if key in found:
            raise ValueError(f"two setups are both named {key!r}: model record ids must differ")
        found[key] = setup
    return found


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
    """Every model-run partition of the current bank and setups, in a stable order."""
    if not executable_cases(bank):
        return []
    return list(setups_by_partition(catalog))


def repeats_of(case: Case) -> int:
    return NOISY_REPEATS if case.noisy else 1


def work_items(
    keys: Iterable[str],
    bank: TaskBank,
    catalog: SetupCatalog,
    suites: Collection[str] = EXECUTED_SUITES,
    cases: Collection[str] = (),
) -> list[WorkItem]:
    """The work items of the given partitions (of their current case versions in `suites`,
    and only `cases`, as `<suite>:<case id>`, when given), in key order.

    Raises:
        ValueError: A key names no executable setup of the config (its runs stay stored; it
            cannot be run again).
    """
    setups = setups_by_partition(catalog)
    chosen = [
        case
        for case in executable_cases(bank)
        if case.suite in suites and (not cases or f"{case.suite}{_SEP}{case.id}" in cases)
    ]
    items: list[WorkItem] = []
    for key in keys:
        setup = setups.get(key)
        if setup is None:
            raise ValueError(f"partition {key}: no setup of that name among the executable ones")
        items.extend(
            WorkItem(setup, case, prompt, repeat)
            for case in chosen
            for prompt in case.prompts()
            for repeat in range(repeats_of(case))
        )
    return items


def by_partition(items: Sequence[WorkItem]) -> dict[str, list[WorkItem]]:
    grouped: dict[str, list[WorkItem]] = {}
    for item in items:
        grouped.setdefault(item.partition_key, []).append(item)
    return grouped
