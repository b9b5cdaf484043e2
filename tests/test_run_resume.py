"""A batch of model runs SIGKILLed midway and restarted makes exactly the missing calls and
counts every cost once: real Dagster runs in a subprocess, real HTTP to a loopback server
speaking the chat-completions protocol, a real DuckDB file surviving the kill."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from loopback import LoopbackServer, chat_completions
from stages import bench_env

from bench_pipeline.core.warehouse import connect
from bench_pipeline.providers import ResponseCache
from bench_pipeline.runs.plan import executable_cases, repeats_of
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
PATH = "/v1/chat/completions"
CANARY_KEY = "sk-canary-resume-0123456789"


def _setups(folder: Path, base_url: str) -> Path:
    folder.mkdir()
    (folder / "models.toml").write_text(
        f"""
[[model]]
id = "loopback-model"
api_id = "test/loopback-1"
company = "Test Co"
context_limit = 8192
pricing_date = 2026-01-01
base_url = "{base_url}"
api_key_env = "LOOPBACK_MODEL_KEY"
"""
    )
    (folder / "harnesses.toml").write_text('[[harness]]\nid = "api-bare"\nenvironment = "api"\n')
    # 11 prompt tokens at $1/M + 7 completion tokens at $2/M = $0.000025 a run, exactly.
    (folder / "pricing.toml").write_text(
        '[[rate]]\napi_id = "test/loopback-1"\neffective_date = 2026-01-01\n'
        'input = "1"\noutput = "2"\n'
    )
    return folder


def _cached_hashes(home: Path) -> set[str]:
    return set(ResponseCache(home / "cache" / "responses").hashes())


def _sent_hashes(server: LoopbackServer, skip: int = 0) -> list[str]:
    """Request hashes as `ChatRequest.request_hash` computes them: sha256 of canonical JSON."""
    hashes = []
    for request in server.requests(PATH)[skip:]:
        body = json.loads(request.body)
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        hashes.append(hashlib.sha256(canonical.encode()).hexdigest())
    return hashes


def test_a_killed_batch_resumes_with_exactly_the_missing_calls(tmp_path: Path) -> None:
    bank = load_bank()
    planned = sum(len(c.prompts()) * repeats_of(c) for c in executable_cases(bank))
    home = tmp_path / "home"
    with LoopbackServer({PATH: chat_completions(delay=0.15)}) as server:
        env = bench_env(home) | {
            "BENCH_SETUPS": str(_setups(tmp_path / "setups", server.url + "/v1")),
            "BENCH_MODEL_MODE": "live",
            "LOOPBACK_MODEL_KEY": CANARY_KEY,
        }
        command = [sys.executable, str(REPO / "tests" / "run_batch_driver.py")]
        first = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 180
        while len(server.requests(PATH)) < planned // 3:
            assert first.poll() is None, first.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the batch never got going"
            time.sleep(0.02)
        # Another writer gets the warehouse while models answer: the batch holds it only to
        # write each flush of rows.
        with connect(home / "warehouse" / "bench.duckdb", wait_seconds=10) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS other_writer AS SELECT 1 AS x")
        assert first.poll() is None, "the batch must still be running"
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        first.stderr.close()
        time.sleep(0.5)  # let requests in flight at the kill reach the server
        calls_before = len(server.requests(PATH))
        cached_at_kill = _cached_hashes(home)
        assert 0 < len(cached_at_kill) < planned, "the kill must come midway"

        second = subprocess.run(command, env=env, cwd=REPO, capture_output=True, timeout=600)
        assert second.returncode == 0, second.stderr.decode()[-3000:]

        resumed = _sent_hashes(server, skip=calls_before)
        # Exactly the missing calls: one per answer not stored before the kill, none again.
        assert len(resumed) == planned - len(cached_at_kill)
        assert not set(resumed) & cached_at_kill
        assert len(set(resumed)) == len(resumed)
        assert set(_sent_hashes(server)) == _cached_hashes(home)
        assert len(_cached_hashes(home)) == planned
        # The key its record names reaches the server, but is never stored anywhere.
        assert all(r.headers.get("Authorization") == f"Bearer {CANARY_KEY}"
                   for r in server.requests(PATH))  # fmt: skip

    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        runs, distinct, total, simulated = conn.execute(
            "SELECT count(*), count(DISTINCT run_id), sum(cost_usd), "
            "count(*) FILTER (WHERE simulated) FROM model_runs"
        ).fetchall()[0]
        failures = conn.execute("SELECT count(*) FROM run_failures").fetchall()[0][0]
    assert (runs, distinct, simulated, failures) == (planned, planned, 0, 0)
    assert total == Decimal("0.000025") * planned  # every run costed once, none twice
    stored = [p.read_bytes() for p in (home / "cache" / "responses").rglob("*") if p.is_file()]
    assert stored and not any(CANARY_KEY.encode() in text for text in stored)
