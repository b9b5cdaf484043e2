"""`bench compare` in a real terminal (pexpect) against a loopback OpenAI-compatible server:
the requester's own key, typed at a hidden prompt or read from a file, is the only key sent,
never the project's; the fit ranking is printed and receipts are written; and afterwards the
canary key appears nowhere: not in the home, the warehouse, the receipts, logs, the Dagster
storage or anything the processes printed, in any encoding a server could echo it in."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import dagster as dg
import duckdb
import pexpect
import pytest
from loopback import LoopbackServer, Reply
from stages import materialize_in

from bench_pipeline.assets.scores import navigator_board_asset
from bench_pipeline.grading.decision import quoted_output
from bench_pipeline.providers.scrubbing import secret_pattern
from bench_pipeline.taskbank.v1_library import library_task, load_config, load_library

pytestmark = pytest.mark.integration
BENCH = str(Path(sys.executable).with_name("bench"))
CANARY = "sk-or-v1-canary-5f0d2c9a71e84b3b9c6e1d2f7a8b9c0d"
FILE_CANARY = "sk-or-v1-filecanary-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
PROJECT_KEY = "sk-or-v1-project-key-never-sent-000000000000000000"
JUDGE = load_config().judge_model
TASK = library_task(load_library(), "v1-loop-bug")
STRONG = {"accuracy": 5, "completeness": 5, "instructions": 5, "clarity": 5}
ECHOED = [CANARY]
"""The key of the comparison now running, which the hostile server echoes back."""


def _server_answer(sent: bytes) -> Reply:
    """Candidates answer (echoing the key back, as a hostile server might, plain and base64);
    the judge gives gpt-5.4 a stored 5 with a weak dimension and glm-5 a clean 4.5."""
    request = json.loads(sent)
    model = request["model"]
    if model == JUDGE:
        output = quoted_output(request["messages"][-1]["content"]) or ""
        mixed = "answer alpha" in output  # the judge's copy never names the lab
        dimensions = STRONG | {"clarity": 3 if mixed else 4}
        verdict = {"overall": 5 if mixed else 4.5, "dimensions": dimensions, "reason": "r"}
        content = json.dumps(verdict)
    else:
        key = ECHOED[0]
        echoed = base64.b64encode(f"Bearer {key}".encode()).decode()
        code = "alpha" if model.startswith("openai/") else "beta"
        content = f"answer {code}: pop while iterating skips. {key} {echoed}"
    body = {
        "id": "cmpl-1", "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 80, "total_tokens": 200},
    }  # fmt: skip
    return Reply(200, body=json.dumps(body))


def _env(home: Path, user_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "BENCH_SNAPSHOTS")}
    env |= {"BENCH_HOME": str(home), "HOME": str(user_home), "OPENROUTER_API_KEY": PROJECT_KEY,
            "DAGSTER_HOME": str(home / "build" / "dagster")}  # fmt: skip
    return env


def _compare(url: str, env: dict[str, str], *extra: str) -> pexpect.spawn:
    models = ["--model", "openai/gpt-5.4", "--model", "z-ai/glm-5"]
    args = ["compare", "--task", TASK.id, "--volume", "1000", "--budget", "10", *models,
            "--base-url", url, *extra]  # fmt: skip
    return pexpect.spawn(BENCH, args, env=env, encoding="utf-8", timeout=120, dimensions=(50, 200))


def _leaks(root: Path, secrets: list[str]) -> list[str]:
    """Every file under `root` holding a secret in any form `secret_pattern` knows."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            text = path.read_bytes().decode("latin-1")
            found += [f"{path}: {s[:14]}" for s in secrets if secret_pattern(s).search(text)]
    return found


def _warehouse_leaks(database: Path, secrets: list[str]) -> list[str]:
    """Every text value of every table holding a secret (DuckDB compresses strings on disk,
    so the byte search alone could miss one)."""
    found = []
    with duckdb.connect(str(database), read_only=True) as conn:
        columns = conn.execute(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns "
            "WHERE data_type = 'VARCHAR'"
        ).fetchall()
        for schema, table, column in columns:
            values = conn.execute(f'SELECT "{column}" FROM "{schema}"."{table}"').fetchall()
            for (value,) in values:
                if value is not None:
                    found += [
                        f"{table}.{column}" for s in secrets if secret_pattern(s).search(value)
                    ]
    return found


def test_bench_compare_runs_on_the_requesters_key_only_and_leaves_no_trace(
    tmp_path: Path,
) -> None:
    home, user_home, outside = tmp_path / "home", tmp_path / "user", tmp_path / "elsewhere"
    for folder in (home, user_home, outside):
        folder.mkdir()
    env = _env(home, user_home)
    printed = []
    with LoopbackServer({"/v1/chat/completions": _server_answer}) as server:
        url = server.url + "/v1"
        # 1. The key typed at the hidden prompt.
        child = _compare(url, env)
        child.expect("Your own API key for this comparison \\(hidden; never stored\\): ")
        child.sendline(CANARY)
        child.expect("fit ranking at 1,000 calls a month within \\$10:")
        child.expect(pexpect.EOF)
        printed.append(child.before)
        child.close()
        assert child.exitstatus == 0, child.before
        screen = printed[0]
        first, second = screen.index("1. z-ai/glm-5"), screen.index("2. openai/gpt-5.4")
        assert first < second  # a clean 4.5 ranks above a stored 5 shown as 4
        assert "overall shown 4.00/5 (mixed)" in screen and "overall shown 4.50/5" in screen
        assert "receipts: " in screen

        # 2. The key from a file the requester names (outside the home).
        key_file = outside / "my-key.txt"
        key_file.write_text(FILE_CANARY + "\n", encoding="utf-8")
        ECHOED[0] = FILE_CANARY
        child = _compare(url, env, "--key-file", str(key_file))
        child.expect("fit ranking")
        child.expect(pexpect.EOF)
        printed.append(child.before)
        child.close()
        assert child.exitstatus == 0, child.before
        key_file.unlink()

        # 3. The project's own key is refused, at the prompt as from a file.
        ECHOED[0] = PROJECT_KEY
        child = _compare(url, env)
        child.expect("never stored\\): ")
        child.sendline(PROJECT_KEY)
        child.expect(pexpect.EOF)
        printed.append(child.before)
        child.close()
        assert child.exitstatus == 2 and "that is the project's key" in child.before

        sent = [r.headers.get("Authorization") for r in server.requests("/v1/chat/completions")]
    # Both keys were used, for candidates and judge alike, and the project's key never.
    assert set(sent) == {f"Bearer {CANARY}", f"Bearer {FILE_CANARY}"}
    calls = 2 * load_config().calls_per_task
    assert sent.count(f"Bearer {CANARY}") == 2 * calls  # each answer, then its judge call

    # Receipts: one per call, the fit ranking, nothing of the judge's guidance.
    receipts = sorted((home / "build" / "v1-compare").glob("*/receipts/*.json"))
    assert len(receipts) == 2 * calls
    one = json.loads(receipts[0].read_text())
    assert one["graded_by"]["judge_model"] == JUDGE
    assert one["graded_by"]["rubric_version"] == "rubric-v1"
    assert set(one["scores"]["dimensions"]) == set(STRONG)
    assert one["costs"]["judge_cost_usd"] is not None
    assert all(TASK.guidance not in p.read_text() for p in receipts)
    assert "[redacted]" in one["output"]  # the echoed key was scrubbed before writing

    # The stored comparison scores on the board like any v1 result, in a Dagster run.
    (home / "build" / "dagster").mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(temp_dir=str(home / "build" / "dagster")) as instance:
        materialize_in(home, [navigator_board_asset], instance=instance)
    database = home / "warehouse" / "bench.duckdb"
    with duckdb.connect(str(database), read_only=True) as conn:
        shown = conn.execute(
            "SELECT model, label, stored_overall, displayed_overall FROM navigator_v1_results "
            "WHERE task = ? ORDER BY model, call", [TASK.id],
        ).fetchall()  # fmt: skip
        sources = conn.execute("SELECT key_source FROM v1_comparisons ORDER BY 1").fetchall()
    assert ("openai/gpt-5.4", "mixed", 5.0, 4.0) in shown
    assert sources == [("file",), ("prompt",)]

    secrets = [CANARY, FILE_CANARY, PROJECT_KEY]
    assert _warehouse_leaks(home / "warehouse" / "bench.duckdb", secrets) == []
    assert _leaks(home, secrets) == []  # warehouse, receipts, logs, Dagster storage
    assert _leaks(user_home, secrets) == []
    assert _warehouse_leaks(database, secrets) == []
    output = "\n".join(printed)
    assert not any(secret_pattern(s).search(output) for s in secrets)


def test_a_refused_key_or_a_failed_call_stores_nothing_and_prints_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that rejects the key, echoing it in its error body: the comparison stops
    with the reason (the key scrubbed from it), and nothing is stored or written."""
    import io

    from bench_pipeline.cli.compare import compare

    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    echo = json.dumps({"error": {"message": f"invalid key {CANARY}", "code": 401}})
    with LoopbackServer({"/v1/chat/completions": [Reply(401, body=echo)]}) as server:
        out = io.StringIO()
        code = compare(TASK.id, 1000, "10", ["openai/gpt-5.4"], None, server.url + "/v1", out,
                       ask=lambda _prompt: CANARY)  # fmt: skip
    assert code == 2 and "not run: " in out.getvalue() and "nothing was stored" in out.getvalue()
    assert "HTTP 401" in out.getvalue() and CANARY not in out.getvalue()
    database = tmp_path / "warehouse" / "bench.duckdb"
    with duckdb.connect(str(database), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM v1_comparisons").fetchall() == [(0,)]
    assert not (tmp_path / "build" / "v1-compare").exists()
    for bad in ("", "two words"):
        out = io.StringIO()
        assert compare(TASK.id, 1000, "10", ["m"], None, "http://127.0.0.1:9/v1", out,
                       ask=lambda _prompt, bad=bad: bad) == 2  # fmt: skip
        assert "key (prompt): empty, or not a single line" in out.getvalue()
    out = io.StringIO()
    assert compare("v1-nope", 1000, "10", ["m"], None, "http://127.0.0.1:9/v1", out) == 2
    assert "task: no v1 task 'v1-nope'" in out.getvalue()
    assert _leaks(tmp_path, [CANARY]) == []
