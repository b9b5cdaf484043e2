"""A real `dagster dev` on a free loopback port answers GraphQL with the whole asset graph."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bench_pipeline.core import settings
from bench_pipeline.ingest.catalog import source_definitions

pytestmark = pytest.mark.integration
STAGES = ("raw", "staging", "validated", "live")
QUERY = "{ assetNodes { assetKey { path } groupName description } }"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_dagster_dev_serves_every_source_asset(tmp_path: Path) -> None:
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = os.environ | {"DAGSTER_HOME": str(dagster_home), "BENCH_HOME": str(tmp_path)}
    port = free_port()
    dagster = Path(sys.executable).with_name("dagster")
    process = subprocess.Popen(
        [str(dagster), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=settings.REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # so that TERM reaches the webserver and the code server
    )
    try:
        nodes = None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and process.poll() is None:
            try:
                response = httpx.post(
                    f"http://127.0.0.1:{port}/graphql", json={"query": QUERY}, timeout=10
                )
                nodes = response.json()["data"]["assetNodes"]
                if nodes:
                    break
            except (httpx.HTTPError, KeyError, TypeError, ValueError):
                pass
            time.sleep(2)
        assert nodes, "dagster dev did not answer with an asset graph"
        keys = {"/".join(node["assetKey"]["path"]) for node in nodes}
        for source in source_definitions():
            for stage in STAGES:
                assert f"{source}/{stage}" in keys
        assert "registry/models" in keys
        assert all(node["description"] for node in nodes)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
