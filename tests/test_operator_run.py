"""An operator's day through real processes in one fresh BENCH_HOME: `bench run` ends by
saying what changed and where to look; `bench scores` prints a readable leaderboard; a
practice review leaves the next `bench run` green; `bench status` reports the release, the site
and every source; a failed `bench run` names its step and error. No Dagster warning reaches
the terminal."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pexpect
import pytest
from stages import bench_env

from bench_pipeline.core import settings
from bench_pipeline.ingest.catalog import source_definitions
from tests.test_run_group import assert_one_run_group

pytestmark = pytest.mark.integration
BENCH = str(Path(sys.executable).with_name("bench"))
DAGSTER_WARNING = re.compile(r"\w+Warning:")


def bench(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BENCH, *args],
        env=env or bench_env(home),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


def quiet(result: subprocess.CompletedProcess) -> None:
    """Nothing on stderr a person would read as a warning or a crash."""
    assert not DAGSTER_WARNING.search(result.stderr), result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("home")
    result = bench(home, "run")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return home, result.stdout + "\n" + result.stderr


def test_bench_run_ends_with_what_changed(first_run: tuple[Path, str]) -> None:
    home, output = first_run
    summary = output[output.index("\nSources: ") :]
    sources = len(source_definitions())
    assert f"Sources: {sources} accepted, 0 rejected, 0 unchanged" in summary
    release = (home / "build" / "releases" / "latest").read_text().strip()
    assert f"Release: {release} (new, " in summary
    assert f"Site: {home / 'build' / 'site'} (read it with `bench serve`" in summary
    assert f"Analyst copy: {home / 'build' / 'warehouse' / 'bench.duckdb'}" in summary
    assert summary.rstrip().endswith("OK")
    # money at the site's rounding, and how long the run and its slowest steps took
    assert re.search(r"\nModel runs: .*; cost \$[\d,]+\.\d\d, ", summary), summary
    assert re.search(r"\nTime: .* in all \(\d+ steps\); slowest: \w+ [\d.]+ s", summary)
    assert re.search(r"\n  \[1/\d+\] \w+ \([\d.]+ s\)\n", output)
    assert "Tables:" not in output and "FAILED" not in output
    assert not DAGSTER_WARNING.search(output), output[-2000:]


def test_one_bench_run_is_one_run_group_with_step_times(first_run: tuple[Path, str]) -> None:
    """The Dagster runs of the `bench run` are one run group under a run named for it."""
    import dagster as dg

    home, output = first_run
    with dg.DagsterInstance.from_config(str(home / "build" / "dagster")) as instance:
        assert_one_run_group(instance, output)


def _published_board(home: Path) -> list[tuple[int, str, float, float]]:
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        return conn.execute(
            "SELECT p.rank, s.label, p.overall, p.margin95 FROM pm_setups p "
            "JOIN setups s USING (setup_id) WHERE p.rank IS NOT NULL ORDER BY p.rank"
        ).fetchall()


def test_bench_scores_prints_a_readable_leaderboard(first_run: tuple[Path, str]) -> None:
    home, _ = first_run
    result = bench(home, "scores", "pm")
    assert result.returncode == 0, result.stderr
    quiet(result)
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["rank", "setup", "score", "95%", "interval", "runs", "status"]
    board = _published_board(home)
    assert board and len(lines) < len(board) + 10, result.stdout
    for (rank, label, overall, margin), line in zip(board, lines[3:], strict=False):
        expected = f"{overall:.1f} [{overall - margin:.1f}, {overall + margin:.1f}]"
        assert line.split(label)[0].strip() == str(rank), line
        assert expected in " ".join(line.split(label)[1].split()), line
    assert not re.search(r"\bs[0-9a-f]{16}\b", result.stdout), "setups shown by hash"
    assert not re.search(r"\d\.\d{3}", result.stdout), "unrounded numbers"

    runs = bench(home, "scores", "pm", "--runs")
    assert runs.returncode == 0 and "pm_runs:" in runs.stdout and "pm_runs:" not in result.stdout
    for board_name in ("navigator", "usecase"):
        other = bench(home, "scores", board_name, "--as-of", "2026-11-20")
        assert other.returncode == 0, other.stderr
        assert "as of 2026-11-20 00:00 UTC" in other.stdout

    bad = bench(home, "scores", "pm", "--as-of", "yesterday")
    assert bad.returncode == 2
    assert "argument --as-of: 'yesterday' is not a date" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_a_practice_review_leaves_the_next_run_green(first_run: tuple[Path, str]) -> None:
    home, _ = first_run
    child = pexpect.spawn(
        BENCH,
        ["review", "--reviewer", "Ada Reviewer", "--include-simulated"],
        env=bench_env(home),
        encoding="utf-8",
        timeout=120,
        dimensions=(50, 200),
    )
    child.expect("Score 1-5")
    child.sendline("5")
    for question in ("What did it understand", "What did it miss", "decisive reason"):
        child.expect(question)
        child.sendline("Practising.\n.")
    if child.expect(["Critical failure committed", "Submit\\?"]) == 0:
        child.sendline("")
        child.expect("Submit\\?")
    child.sendline("y")
    child.expect("Stored (practice )?review")
    child.expect("Next output")
    child.sendline("n")
    child.expect(pexpect.EOF)

    again = bench(home, "run")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert again.stdout.rstrip().endswith("OK")
    sources = len(source_definitions())
    assert f"Sources: 0 accepted, 0 rejected, {sources} unchanged" in again.stdout
    status = bench(home, "status")
    assert status.returncode == 0, status.stderr
    quiet(status)
    assert "calibration_gate" not in status.stdout
    release = (home / "build" / "releases" / "latest").read_text().strip()
    assert f"Latest release: {release}, made " in status.stdout
    assert f"Site: {home / 'build' / 'site'} (built " in status.stdout
    for source in source_definitions():
        assert re.search(
            rf"  {source} +last run accepted .*: "
            r"STALE \(data \d+ days old, allowed [^)]*\)(, refresh due)?; \d+ quarantined",
            status.stdout,
        )


def test_a_failed_run_leads_with_the_step_the_file_and_the_field(tmp_path: Path) -> None:
    """A task file with a wrong field: after the step lines, the report's first lines name the
    step, the file and the field, then how to rerun and where Dagster's log went; the
    terminal gets no Dagster log or stack."""
    tasks = tmp_path / "tasks"
    shutil.copytree(settings.tasks_dir(), tasks)
    broken = tasks / "pm" / "pm-delay-update.toml"
    broken.write_text(broken.read_text().replace('measures = "model"', 'measures = "nobody"'))
    home = tmp_path / "home"
    result = bench(home, "run", env=bench_env(home) | {"BENCH_TASKS": str(tasks)})
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    report = result.stdout.split("\n\n", 1)[1].splitlines()  # after the header and steps
    assert report[0].startswith("FAILED at step runs__task_bank: TaskBankError: "), report[:6]
    assert re.fullmatch(r"  \(job prepare_inputs, Dagster run [\w-]+\)", report[1]), report[1]
    assert report[2:4] == [f"  file:   {broken}", "  field:  measures"], report[:6]
    assert "  fix:    correct that, then run `bench run` again" in report
    (log_line,) = [line for line in report if line.startswith("  log:    ")]
    log = Path(log_line.split()[1])
    assert log.parent == home / "build" / "logs" and "Stack Trace" in log.read_text()
    assert "Stack Trace" not in result.stdout + result.stderr
    assert "STEP_FAILURE" not in result.stdout + result.stderr
    assert re.search(r"\n  \[\d+/\d+\] FAILED runs__task_bank \([\d.]+ s\)\n", result.stdout)
    assert "Release: none yet (the run stopped before it)" in result.stdout
    assert re.search(
        r"\nSources: \d+ accepted, 0 rejected, 0 unchanged, \d+ not reached", result.stdout
    )
    quiet(result)
