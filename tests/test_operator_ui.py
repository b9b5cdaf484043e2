"""`make ui`, exactly as a person types it in a fresh clone's shell (the virtualenv's `bin`
not on PATH), serves the Dagster UI on the port given, and its GraphQL lists the assets."""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from bench_pipeline.core import settings

pytestmark = pytest.mark.integration
QUERY = "{ assetNodes { assetKey { path } } }"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def shell_path() -> str:
    """PATH as a fresh shell has it: without this virtualenv's `bin`."""
    venv_bin = str(settings.REPO_ROOT / ".venv" / "bin")
    entries = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    return os.pathsep.join(e for e in entries if e and os.path.realpath(e) != venv_bin)


def test_make_ui_serves_graphql_on_the_port_given(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "VIRTUAL_ENV")}
    env |= {"PATH": shell_path(), "BENCH_HOME": str(tmp_path)}
    port = free_port()
    log = tmp_path / "make-ui.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            ["make", "ui", f"PORT={port}"],
            cwd=settings.REPO_ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # TERM to the group reaches make, dagster and its servers
        )
    try:
        nodes = None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and process.poll() is None and not nodes:
            try:
                answer = httpx.post(
                    f"http://127.0.0.1:{port}/graphql", json={"query": QUERY}, timeout=10
                )
                nodes = answer.json()["data"]["assetNodes"]
            except (httpx.HTTPError, KeyError, TypeError, ValueError):
                time.sleep(2)
        output = log.read_text(errors="replace")
        assert process.poll() is None, f"make ui exited {process.returncode}:\n{output[-3000:]}"
        assert nodes, f"no asset graph from GraphQL on port {port}:\n{output[-3000:]}"
        keys = {"/".join(node["assetKey"]["path"]) for node in nodes}
        assert "registry/models" in keys and "grading/reviews" in keys
        assert "FileNotFoundError" not in output
    finally:
        stop(process)


def stop(process: subprocess.Popen) -> None:
    """TERM to the process group (make, dagster dev, its servers), KILL if it lingers."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return  # make and everything it started have exited
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
