"""`bench run` against a second `bench run` and a SIGKILL during the site step, in one
BENCH_HOME that already holds a complete warehouse, release and site.

One whole pipeline run exercises three faults, each asserted on its own: a second `bench run`
started while the first runs refuses at once, naming the first; the first, killed while it
builds the site, leaves the previous site whole (every page, and every hash the downloads
page lists matching its file); the next `bench run` marks the dead run's Dagster run failed,
records it in `run_failure_log`, publishes that failure in a new release, and a whole site
again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from faults_pipeline import count_faults
from stages import bench_env, materialize_recorded

from bench_pipeline.assets.release import publish_downloads
from bench_pipeline.cli.run_group import COMMAND_JOB
from bench_pipeline.cli.run_lock import PID_TAG, lock_path
from bench_pipeline.site import build_site, latest_release
from bench_pipeline.site.swap import publish_site, versions_dir

pytestmark = [pytest.mark.faults, pytest.mark.integration]
COMMAND = [sys.executable, "-m", "bench_pipeline.cli", "run"]
LISTED = re.compile(r'<a href="([^"]+)" title="SHA-256 ([0-9a-f]{64})"')


def _site_files(site: Path) -> dict[str, str]:
    root = site.resolve()
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _listed_hashes_match(site: Path) -> int:
    """Every file the downloads page lists exists with the listed SHA-256; returns how many."""
    page = (site / "downloads.html").read_text()
    listed = LISTED.findall(page)
    assert listed, "the downloads page lists no files"
    for href, digest in listed:
        path = site / href.replace("%20", " ")
        assert path.is_file(), href
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, href
    return len(listed)


def _wait_for(condition, seconds: float, what: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, f"bench run ended (rc {process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} within {seconds}s"
        time.sleep(0.01)


@pytest.mark.timeout(1800)
def test_second_bench_run_refuses_a_killed_one_is_failed_and_the_site_stays_whole(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    releases = home / "build" / "releases"
    database = materialize_recorded(home)  # the sources ingested and a release, by the assets
    release = latest_release(releases)
    site = home / "build" / "site"

    def build(folder: Path):
        publish_downloads(release, folder / "data")
        return build_site(release, folder, releases)

    publish_site(site, build)
    before = _site_files(site)
    listed = _listed_hashes_match(site)
    pages = sum(name.startswith("models/") for name in before)

    env = bench_env(home)
    log = (tmp_path / "first.out").open("w")
    first = subprocess.Popen(COMMAND, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        holder = lock_path(home)
        _wait_for(
            lambda: holder.is_file() and f'"pid": {first.pid}' in holder.read_text(),
            120, "run lock", first,
        )  # fmt: skip
        started = time.monotonic()
        second = subprocess.run(
            COMMAND, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        refused_after = time.monotonic() - started
        assert first.poll() is None, "the second run waited for the first to end"
        assert second.returncode == 3, second.stdout + second.stderr
        assert "bench run refused: another `bench run` is already running" in second.stdout
        assert f"pid {first.pid}" in second.stdout

        building = versions_dir(site)
        _wait_for(
            lambda: any(p.name.startswith(".building-") for p in building.iterdir()),
            1500, "site step", first,
        )  # fmt: skip
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        log.close()

    # The previous site, whole: the same files, and the hashes it lists are its files'.
    assert _site_files(site) == before
    assert _listed_hashes_match(site) == listed

    third = subprocess.run(
        COMMAND, env=env, capture_output=True, text=True, timeout=1200, check=False
    )
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    assert "left unfinished by a process that died, marked failed" in third.stdout

    import dagster as dg

    with dg.DagsterInstance.from_config(str(home / "build" / "dagster")) as instance:
        theirs = [
            r.dagster_run
            for r in instance.get_run_records()
            if r.dagster_run.tags.get(PID_TAG) == str(first.pid)
        ]
    assert theirs, "the killed run's Dagster runs were not tagged with its pid"
    assert {run.status for run in theirs} <= {
        dg.DagsterRunStatus.SUCCESS,
        dg.DagsterRunStatus.FAILURE,
    }
    # the run the kill cut short, and the command's own run (the group's parent), both failed
    failed = [run for run in theirs if run.status == dg.DagsterRunStatus.FAILURE]
    assert [run.job_name for run in failed].count(COMMAND_JOB) == 1
    dead = [run.run_id for run in failed if run.job_name != COMMAND_JOB]
    assert len(dead) == 1 and len(failed) == 2
    with duckdb.connect(str(database), read_only=True) as conn:
        logged = conn.execute(
            "SELECT dagster_run_id, message FROM run_failure_log WHERE dagster_run_id = ?", dead
        ).fetchall()
    assert len(logged) == 1 and "marked failed by a later `bench run`" in logged[0][1]

    # a failed run is news to readers: the rerun publishes it in a new release and site
    published = (releases / "latest").read_text()
    assert published != release.name
    failures = (releases / published / "data" / "pipeline_failures.csv").read_text()
    assert dead[0] in failures, f"release {published} does not list the failed run"
    assert published in (site / "downloads.html").read_text()

    after = _site_files(site)
    assert sum(name.startswith("models/") for name in after) == pages
    assert _listed_hashes_match(site) == listed
    versions = [p for p in versions_dir(site).iterdir() if not p.name.startswith(".")]
    assert len(versions) == 2  # the live one and the one before
    count_faults(3)  # the second run, the kill in the site step, the run it left STARTED
    print(
        json.dumps(
            {"second_run_refused_after_s": round(refused_after, 2), "pages": pages, "files": listed}
        )
    )


@pytest.mark.timeout(900)
def test_a_failed_bench_run_reaches_the_run_failure_log(tmp_path: Path) -> None:
    """`bench run` executes in process, where Dagster's run-failure sensor never looks: the
    run itself records its failure, naming the step and the error."""
    import shutil

    from bench_pipeline.core import settings

    tasks = tmp_path / "tasks"
    shutil.copytree(settings.tasks_dir(), tasks)
    broken = sorted(tasks.rglob("*.toml"))[0]
    broken.write_text("this is = = not TOML\n")
    home = tmp_path / "home"
    env = bench_env(home) | {"BENCH_TASKS": str(tasks)}
    result = subprocess.run(COMMAND, env=env, capture_output=True, text=True, timeout=800)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    failed_run = result.stdout.split(", Dagster run ")[1].split(")")[0]
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        logged = conn.execute(
            "SELECT dagster_run_id, job_name, message FROM run_failure_log"
        ).fetchall()
    assert len(logged) == 1
    run_id, job, message = logged[0]
    assert (run_id, job) == (failed_run, "prepare_inputs")
    assert broken.name in message, message
    count_faults(1)


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 20 MB tmpfs (root only; cleaned up): the demo needs far more, so it fills."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.timeout(1500)
def test_a_full_disk_ends_in_the_failure_summary_not_tracebacks(small_disk: Path) -> None:
    """BENCH_HOME on a disk that fills during the run: `bench run` ends in its usual
    summary, the failure saying the disk is full, and prints no traceback; once there is room
    the next run completes."""
    done = subprocess.run(
        COMMAND,
        env=bench_env(small_disk),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1, said[-3000:]
    assert f"no space left on the disk of BENCH_HOME={small_disk}" in failed[0]
    assert "Steps after it were not run" in done.stdout or "The run stopped there" in done.stdout
    # room made on the same disk: the next run completes from where the home was left
    subprocess.run(["mount", "-o", "remount,size=3g", str(small_disk)], check=True)
    again = subprocess.run(
        COMMAND, env=bench_env(small_disk), capture_output=True, text=True, timeout=900
    )
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert again.stdout.rstrip().endswith("OK")
