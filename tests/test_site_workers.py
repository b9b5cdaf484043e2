"""Model pages rendered in two processes: the same bytes as one process, and a worker's
failure (an error or a kill) fails the build with nothing published changed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench_pipeline.site import build as site_build
from bench_pipeline.site import build_site
from bench_pipeline.site import workers as site_workers
from bench_pipeline.site.build import SiteBuilder
from bench_pipeline.site.reuse import RECORD
from bench_pipeline.site.swap import publish_site, versions_dir
from bench_pipeline.site.views import collect_models, load_release
from bench_pipeline.site.workers import WorkerError, render_split
from tests.synthetic import copy_downloads, synthetic_tables, write_release

pytestmark = pytest.mark.store

MODELS = 40


@pytest.fixture(autouse=True)
def _small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split even a small test site between two processes, in small chunks."""
    monkeypatch.setattr(site_workers, "MIN_PART", 5)
    monkeypatch.setattr(site_workers, "CHUNK", 3)


def _files(folder: Path) -> dict[str, bytes]:
    """Every file's bytes, but the record of the pages' inputs (it holds their mtimes)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.name != RECORD}  # fmt: skip


FORKED: list[int] = []
"""The site workers forked in this test (other tests of the session may leave children of
their own, such as servers, which are not the site's to reap)."""


@pytest.fixture(autouse=True)
def _record_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    FORKED.clear()
    fork = site_workers._fork

    def recorded(serve):
        child = fork(serve)
        FORKED.append(child.pid)
        return child

    monkeypatch.setattr(site_workers, "_fork", recorded)


def _no_children_left() -> bool:
    """Every site worker this test forked has ended and been reaped."""
    for pid in FORKED:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return True


def test_two_processes_write_the_bytes_one_process_writes(tmp_path: Path) -> None:
    releases = tmp_path / "releases"
    release = write_release(
        releases, "r-one", synthetic_tables(MODELS), created_at="2025-06-01T06:00:00Z"
    )
    built = {}
    for workers in (1, 2, 2):
        site = tmp_path / f"site-{workers}-{len(built)}"
        copy_downloads(release, site)
        result = build_site(release, site, releases, workers=workers)
        built[site] = ([p.relative_to(site) for p in result.pages], _files(site))
    (one_pages, one_files), *others = built.values()
    models = collect_models(load_release(release))
    assert sum(1 for name in one_files if name.startswith("models/")) == len(models)
    for pages, files in others:
        assert pages == one_pages  # the same pages, listed in the same order
        assert files == one_files
    assert _no_children_left()


def _failing_in_the_worker(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Make every model page a forked worker renders fail (this process renders the rest of
    the site first, so the worker takes the first chunks)."""
    page, here = SiteBuilder.render_model, os.getpid()

    def render_model(builder: SiteBuilder, item) -> None:
        if os.getpid() != here:
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise ValueError(f"bad row for {item[0].id}")
        page(builder, item)

    monkeypatch.setattr(SiteBuilder, "render_model", render_model)


@pytest.mark.parametrize("how", ["error", "kill"])
def test_a_worker_failure_fails_the_build_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    releases, site = tmp_path / "releases", tmp_path / "build" / "site"
    tables = synthetic_tables(MODELS)
    first = write_release(releases, "r-one", tables, created_at="2025-06-01T06:00:00Z")

    def build_from(release: Path):
        def build(folder: Path):
            copy_downloads(release, folder)
            return build_site(release, folder, release.parent, workers=2)

        return build

    live, _ = publish_site(site, build_from(first))
    before = _files(site)
    tables["market"][0]["input_usd_per_1m"] = "77.77"
    second = write_release(
        releases, "r-two", tables, created_at="2025-06-02T06:00:00Z", previous="r-one"
    )
    _failing_in_the_worker(monkeypatch, how)
    # New code: every model page renders again, so the victim's is in the worker's part.
    monkeypatch.setattr(site_build, "code_digest", lambda templates: "another version")
    with pytest.raises(WorkerError) as raised:
        publish_site(site, build_from(second))
    message = str(raised.value)
    if how == "kill":
        assert f"killed by signal {signal.SIGKILL}" in message
    else:
        assert "rendering models/" in message and "ValueError: bad row for" in message
    assert site.resolve() == live.resolve() and _files(site) == before
    assert not [p for p in versions_dir(site).iterdir() if p.name.startswith(".building-")]
    assert _no_children_left()


def test_a_failure_in_this_process_stops_the_workers(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    seen.mkdir()

    here = os.getpid()

    def render(item: int) -> None:
        if os.getpid() == here:
            raise RuntimeError("an item fails here")
        time.sleep(0.05)
        (seen / str(item)).write_text("x")

    with pytest.raises(RuntimeError, match="an item fails here"):
        render_split(list(range(20)), render, str, workers=2, min_part=5)
    assert _no_children_left()


def test_every_call_returns_its_result_in_order(tmp_path: Path) -> None:
    rendered = tmp_path / "rendered"
    rendered.mkdir()
    items = list(range(23))

    def render(item: int) -> list:
        (rendered / str(item)).write_text(str(os.getpid()))
        time.sleep(0.02)
        return [item, f"key {item}"]

    results = render_split(items, render, str, workers=2, min_part=5)
    assert results == [[i, f"key {i}"] for i in items]
    writers = {int(p.name): p.read_text() for p in rendered.iterdir()}
    here = [i for i in items if writers[i] == str(os.getpid())]
    assert sorted(writers) == items and 0 < len(here) < 23  # both processes took chunks
    assert _no_children_left()


def test_a_process_busy_elsewhere_takes_fewer_chunks(tmp_path: Path) -> None:
    """The worker starts at once; this process does other work, then takes what is left."""
    rendered = tmp_path / "rendered"
    rendered.mkdir()
    items = list(range(30))

    def render(item: int) -> int:
        (rendered / str(item)).write_text(str(os.getpid()))
        time.sleep(0.02)
        return item * item

    split = site_workers.Split(items, render, str, workers=2, min_part=5).start()
    time.sleep(0.4)  # the rest of the site, meanwhile
    assert split.finish() == [i * i for i in items]
    writers = {int(p.name): p.read_text() for p in rendered.iterdir()}
    here = sum(1 for i in items if writers[i] == str(os.getpid()))
    assert sorted(writers) == items and here < len(items) // 2
    assert _no_children_left()


def test_a_stopped_split_leaves_no_worker(tmp_path: Path) -> None:
    split = site_workers.Split(list(range(40)), lambda i: time.sleep(0.05), str, 2, 5).start()
    assert split.children
    split.stop()
    assert _no_children_left() and split.queue is None


_KILLED_PARENT = """
import os, signal, sys, time
from pathlib import Path
from bench_pipeline.site import workers
from bench_pipeline.site.workers import render_split

folder, parent = Path(sys.argv[1]), os.getpid()
workers.CHUNK = 1  # one item each: the worker takes one while this process waits on it


def render(item):
    if os.getpid() != parent:  # the worker: says who it is, then takes its time
        (folder / "worker").write_text(str(os.getpid()))
        time.sleep(120)
    while not (folder / "worker").exists():
        time.sleep(0.01)
    os.kill(parent, signal.SIGKILL)  # the build's process dies mid-build


render_split([0, 1], render, str, workers=2, min_part=1)
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status  # a zombie has ended


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="parent-death signal is Linux's")
def test_a_worker_dies_with_a_killed_build(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _KILLED_PARENT, str(tmp_path)], timeout=120,
                          check=False, cwd=Path(__file__).parents[1])  # fmt: skip
    assert done.returncode == -signal.SIGKILL
    worker = int((tmp_path / "worker").read_text())
    deadline = time.monotonic() + 20
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker), f"worker {worker} outlived the killed build"
