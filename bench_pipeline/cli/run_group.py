"""One `bench run` as one group of Dagster runs, under a run named for the command.

A `bench run` plans as it goes (what changed after the fetch decides what is recomputed, and
each stretch of model-run partitions is a run of its own, since a Dagster run holds one
partition range), so it executes several Dagster runs. Each carries Dagster's run-group tags
(`dagster/root_run_id`, `dagster/parent_run_id`) naming one parent run of the job
`bench_run`, created when the command starts: the UI shows the parent and its runs as one run
group, the parent's status is the command's (started, then succeeded or failed), and its log
ends with every step's time and the total. The parent carries the run lock's pid tag like its
runs, so a later `bench run` marks it failed when the command died (`cli.run_lock`).

The parent's job is not one of the code location's jobs (nothing launches it from the UI);
its one op stands for the command, so the UI can draw the run from the snapshot stored with it.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import dagster as dg

from bench_pipeline.cli.run_lock import BENCH_RUN_TAG, COMMAND_TAG

# Dagster's documented run-group tags (the constants live in a private module)
ROOT_RUN_ID_TAG = "dagster/root_run_id"
PARENT_RUN_ID_TAG = "dagster/parent_run_id"
COMMAND_JOB = "bench_run"
"""The job name of the parent run of every `bench run`."""


@functools.cache
def command_job() -> dg.JobDefinition:
    """The parent run's job: one op standing for the whole command."""

    @dg.op(name="bench_run", description="The `bench run` command; its runs are this group.")
    def command() -> None:
        """Never executed: `bench run` executes the group's other runs."""

    @dg.job(
        name=COMMAND_JOB,
        description="One `bench run`: the Dagster runs it executed are this run's group.",
    )
    def bench_run() -> None:
        command()

    return bench_run


class CommandRun:
    """The parent run of one `bench run` in `instance`."""

    def __init__(self, instance: dg.DagsterInstance, command: str, tags: Mapping[str, str]):
        self.instance = instance
        self.run_id = str(uuid.uuid4())
        self.command = command
        self.run = instance.create_run_for_job(
            command_job(),
            run_id=self.run_id,
            tags={**tags, **self.group_tags(root=True)},
            status=dg.DagsterRunStatus.NOT_STARTED,
        )
        self._event(dg.DagsterEventType.RUN_START, f"{command}: started")

    def group_tags(self, root: bool = False) -> dict[str, str]:
        """The tags of every run of the group (`root`: of the parent itself)."""
        tags = {BENCH_RUN_TAG: self.run_id, COMMAND_TAG: self.command}
        if not root:
            tags |= {ROOT_RUN_ID_TAG: self.run_id, PARENT_RUN_ID_TAG: self.run_id}
        return tags

    @contextmanager
    def members(self) -> Iterator[None]:
        """While open, every run the instance creates is one of this group: the command's
        run is its root and parent. `execute_in_process` stores the run-group tags it is given
        but not the run's own root and parent fields, which Dagster reads to find a run's group
        from the run (the UI's run group panel): they are passed where the run is created."""
        create = self.instance.create_run_for_job

        def create_in_group(*args, **kwargs) -> dg.DagsterRun:
            grouped = {"root_run_id": self.run_id, "parent_run_id": self.run_id}
            return create(*args, **(kwargs | grouped))

        setattr(self.instance, "create_run_for_job", create_in_group)  # noqa: B010
        try:
            yield
        finally:
            delattr(self.instance, "create_run_for_job")

    def finish(self, success: bool, steps: Mapping[str, float], total: float, why: str) -> None:
        """Record every step's time and the total in the parent's log, then end it as the
        command ended (`why`: the failure, for a failed command)."""
        lines = [f"{self.command}: {len(steps)} steps in {total:.1f} s"]
        lines += [f"{step}: {seconds:.1f} s" for step, seconds in steps.items()]
        self.instance.report_engine_event("\n".join(lines), self.run)
        if success:
            self._event(dg.DagsterEventType.RUN_SUCCESS, f"{self.command}: succeeded")
        else:
            self.instance.report_run_failed(self.run, message=f"{self.command} failed: {why}")

    def _event(self, kind: dg.DagsterEventType, message: str) -> None:
        event = dg.DagsterEvent(event_type_value=kind.value, job_name=COMMAND_JOB, message=message)
        self.instance.report_dagster_event(event, run_id=self.run_id)
