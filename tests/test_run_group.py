"""One `bench run` is one run group in the Dagster instance: a parent run of the job
`bench_run`, named for the command, whose runs name it as their root and parent
(`bench_pipeline.cli.run_group`); the parent ends as the command ends, with every step's time,
and a later `bench run` marks it failed when the command died."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.cli.run_group import COMMAND_JOB, CommandRun
from bench_pipeline.cli.run_lock import (
    BENCH_RUN_TAG,
    COMMAND_TAG,
    HOST_TAG,
    PID_TAG,
    fail_dead_runs,
)

pytestmark = pytest.mark.assets


@dg.op
def _wait() -> int:
    return 1


@dg.job
def _wave() -> None:
    _wait()


def _holder(pid: int) -> dict[str, str]:
    return {PID_TAG: str(pid), HOST_TAG: socket.gethostname()}


def test_the_runs_of_one_command_are_one_group_under_its_parent(tmp_path: Path) -> None:
    with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
        parent = CommandRun(instance, "bench run", _holder(os.getpid()))
        assert instance.get_run_by_id(parent.run_id).status == dg.DagsterRunStatus.STARTED
        with parent.members():
            waves = [
                _wave.execute_in_process(
                    instance=instance, tags=_holder(os.getpid()) | parent.group_tags()
                )
                for _ in range(3)
            ]
        assert "create_run_for_job" not in vars(instance)  # the instance is as it was
        parent.finish(True, {"fetch": 1.25, "grade": 30.0}, 31.4, "")

        root, group = instance.get_run_group(waves[1].run_id)
        assert root == parent.run_id
        assert {run.run_id for run in group} == {parent.run_id} | {w.run_id for w in waves}
        command = instance.get_run_by_id(parent.run_id)
        assert command.job_name == COMMAND_JOB and command.status == dg.DagsterRunStatus.SUCCESS
        assert {run.tags[BENCH_RUN_TAG] for run in group} == {parent.run_id}
        assert {run.tags[COMMAND_TAG] for run in group} == {"bench run"}
        # the parent's log ends with every step's time and the total
        text = "\n".join(entry.message for entry in instance.all_logs(parent.run_id))
        assert "bench run: 2 steps in 31.4 s" in text
        assert "fetch: 1.2 s" in text and "grade: 30.0 s" in text
        # each wave has its step's start and end, so its time
        for wave in waves:
            kinds = [
                r.event_log_entry.dagster_event.event_type
                for r in instance.get_records_for_run(wave.run_id).records
                if r.event_log_entry.dagster_event is not None
            ]
            assert dg.DagsterEventType.STEP_START in kinds
            assert dg.DagsterEventType.STEP_SUCCESS in kinds


def test_a_failed_command_fails_its_parent_with_the_reason(tmp_path: Path) -> None:
    with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
        parent = CommandRun(instance, "bench run --sources live", _holder(os.getpid()))
        parent.finish(False, {}, 2.0, "tasks/task_bank: not TOML")
        command = instance.get_run_by_id(parent.run_id)
        assert command.status == dg.DagsterRunStatus.FAILURE
        text = "\n".join(entry.message for entry in instance.all_logs(parent.run_id))
        assert "bench run --sources live failed: tasks/task_bank: not TOML" in text


def test_a_dead_commands_parent_is_marked_failed_by_the_next_run(tmp_path: Path) -> None:
    dead = 2**22 + 12345  # above the default pid_max: no process has it
    with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
        parent = CommandRun(instance, "bench run", _holder(dead))
        logged: list[tuple[str, str]] = []
        failed = fail_dead_runs(instance, lambda run_id, job, message: logged.append((run_id, job)))
        assert failed == [parent.run_id] and logged == [(parent.run_id, COMMAND_JOB)]
        assert instance.get_run_by_id(parent.run_id).status == dg.DagsterRunStatus.FAILURE


def assert_one_run_group(instance: dg.DagsterInstance, output: str) -> None:
    """The instance holds one `bench run` (a home's first) as one run group: a parent run of
    `bench_run` that ended in success, and its runs, each of which Dagster finds the group
    from; each step the command printed with its time is in the parent's log with its time."""
    runs = instance.get_runs()
    parents = [run for run in runs if run.job_name == COMMAND_JOB]
    assert len(parents) == 1, [run.job_name for run in runs]
    parent = parents[0]
    assert parent.status == dg.DagsterRunStatus.SUCCESS
    assert len(runs) >= 3, [run.job_name for run in runs]
    for run in runs:
        root, group = instance.get_run_group(run.run_id)
        assert root == parent.run_id and len(group) == len(runs)
        assert run.tags[BENCH_RUN_TAG] == parent.run_id and run.tags[COMMAND_TAG] == "bench run"
    printed = re.findall(r"^  \[\d+/\d+\] (\S+) \((\d+\.\d s|\d+ min \d\d s)\)$", output, re.M)
    assert len(printed) > 50, output[-3000:]
    log = "\n".join(entry.message for entry in instance.all_logs(parent.run_id))
    assert f"bench run: {len(printed)} steps in " in log
    for step, _ in printed:
        assert re.search(rf"^{re.escape(step)}: \d+\.\d s$", log, re.M), step
