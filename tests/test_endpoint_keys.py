"""A key per endpoint: each record names the environment variable holding its key
(`api_key_env`), the OpenRouter key goes only to OpenRouter, and a record without a key
setting is sent none. Keys never reach run config, metadata, logs or the warehouse.

Two loopback servers stand in for two hosted endpoints; the model runs go through the real
path (`bench run`'s prepare and model-run jobs in a Dagster instance under BENCH_HOME)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from loopback import LoopbackServer, Reply, chat_completions
from stages import bench_env

from bench_pipeline.providers import ChatRequest, ResponseCache
from bench_pipeline.providers.keys import OPENROUTER_KEY_VARIABLE, is_openrouter, key_variable
from bench_pipeline.resources.models import ProviderChooser, endpoint_key
from bench_pipeline.runs.plan import work_items
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import SetupError, load_setups

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent
PATH = "/v1/chat/completions"
PROJECT_KEY = "sk-or-v1-project-canary-0f9e8d7c6b5a"
ALPHA_KEY = "alpha-server-canary-1a2b3c4d5e6f"
BETA_KEY = "beta-server-canary-6f5e4d3c2b1a"
ENV = {OPENROUTER_KEY_VARIABLE: PROJECT_KEY, "ALPHA_KEY": ALPHA_KEY, "BETA_KEY": BETA_KEY}


def _records(alpha_url: str, beta_url: str) -> str:
    """`alpha` at one server with its key, `beta` and `plain` at the other: `beta` with its
    own key, `plain` with no key setting."""
    common = 'company = "Test Co"\ncontext_limit = 8192\npricing_date = 2026-01-01\n'
    return (
        f'[[model]]\nid = "alpha"\napi_id = "test/alpha"\n{common}'
        f'base_url = "{alpha_url}"\napi_key_env = "ALPHA_KEY"\n\n'
        f'[[model]]\nid = "beta"\napi_id = "test/beta"\n{common}'
        f'base_url = "{beta_url}"\napi_key_env = "BETA_KEY"\n\n'
        f'[[model]]\nid = "plain"\napi_id = "test/plain"\n{common}base_url = "{beta_url}"\n'
    )


def _setups(folder: Path, models: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.toml").write_text(models, encoding="utf-8")
    (folder / "harnesses.toml").write_text('[[harness]]\nid = "api-bare"\nenvironment = "api"\n')
    (folder / "pricing.toml").write_text(
        "".join(
            f'[[rate]]\napi_id = "test/{name}"\neffective_date = 2026-01-01\n'
            'input = "1"\noutput = "2"\n\n'
            for name in ("alpha", "beta", "plain")
        )
    )
    return folder


def _parrot(key: str, model: str | None = None):
    """A server that answers, and repeats `key` back in the answer to `model` (every model
    when None): what a misbehaving server does with the key it was sent."""
    plain = chat_completions()

    def answer(sent: bytes) -> Reply:
        if model is not None and json.loads(sent)["model"] != model:
            return plain(sent)
        body = json.loads(plain(sent).payload())
        body["choices"][0]["message"]["content"] = f"you sent me Bearer {key}"
        return Reply(200, body=json.dumps(body), headers={"Content-Type": "application/json"})

    return answer


def _authorizations(server: LoopbackServer) -> dict[str, set[str | None]]:
    """The Authorization headers a server received, by the model asked."""
    seen: dict[str, set[str | None]] = {}
    for request in server.requests(PATH):
        model = json.loads(request.body)["model"]
        seen.setdefault(model, set()).add(request.headers.get("Authorization"))
    return seen


# --- the rule --------------------------------------------------------------------------------


def test_the_openrouter_key_goes_only_to_openrouters_own_address() -> None:
    assert key_variable(None, None) == OPENROUTER_KEY_VARIABLE  # no base_url: OpenRouter
    assert key_variable("https://openrouter.ai/api/v1", None) == OPENROUTER_KEY_VARIABLE
    for elsewhere in (
        "http://127.0.0.1:8080/v1",
        "https://api.example.com/v1",
        "http://openrouter.ai/api/v1",  # not over TLS
        "https://openrouter.ai.example.com/v1",
        "https://example.com/openrouter.ai/v1",
    ):
        assert not is_openrouter(elsewhere)
        assert key_variable(elsewhere, None) is None, elsewhere
        assert key_variable(elsewhere, "MY_SERVER_KEY") == "MY_SERVER_KEY"
        with pytest.raises(ValueError, match="OPENROUTER_API_KEY is sent only to OpenRouter"):
            key_variable(elsewhere, OPENROUTER_KEY_VARIABLE)


def test_a_record_naming_the_project_key_for_another_server_is_refused(tmp_path: Path) -> None:
    models = _records("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1").replace(
        '"BETA_KEY"', '"OPENROUTER_API_KEY"'
    )
    with pytest.raises(SetupError) as caught:
        load_setups(_setups(tmp_path / "setups", models))
    message = str(caught.value)
    assert "models.toml" in message and "beta" in message and "api_key_env" in message
    assert "sent only to OpenRouter" in message
    # A key pasted where the variable's name belongs is refused too, and not echoed back.
    pasted = _records("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1").replace(
        '"ALPHA_KEY"', f'"{ALPHA_KEY}"'
    )
    with pytest.raises(SetupError, match=r"alpha.*api_key_env.*name of an environment variable"):
        load_setups(_setups(tmp_path / "pasted", pasted))


def test_naming_the_key_variable_keeps_the_setup_id(tmp_path: Path) -> None:
    """Which key pays for a call changes neither its answer nor its price."""
    with_keys = load_setups(_setups(tmp_path / "a", _records("http://h:1/v1", "http://h:2/v1")))
    without = _records("http://h:1/v1", "http://h:2/v1")
    without = without.replace('api_key_env = "ALPHA_KEY"\n', "")
    without = without.replace('api_key_env = "BETA_KEY"\n', "")
    bare = load_setups(_setups(tmp_path / "b", without))
    assert [s.setup_id for s in with_keys.setups] == [s.setup_id for s in bare.setups]


def test_an_unset_key_variable_is_named_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _setups(tmp_path / "setups", _records("http://h:1/v1", "http://h:2/v1"))
    monkeypatch.setenv("BENCH_SETUPS", str(folder))
    monkeypatch.delenv("ALPHA_KEY", raising=False)
    monkeypatch.setenv(OPENROUTER_KEY_VARIABLE, PROJECT_KEY)
    catalog = load_setups(folder)
    alpha, plain = (
        work_items([f"{m}@api-bare"], load_bank(), catalog)[0] for m in ("alpha", "plain")
    )
    chooser = ProviderChooser("live", ResponseCache(tmp_path / "cache"))
    where = re.escape(str(folder / "models.toml"))
    expected = rf"{where}: model alpha: .*api_key_env.*ALPHA_KEY is not set"
    with pytest.raises(ValueError, match=expected):
        chooser(alpha)
    assert endpoint_key(catalog.models["plain"], "models.toml: model plain") is None
    monkeypatch.setenv("ALPHA_KEY", ALPHA_KEY)
    assert endpoint_key(catalog.models["alpha"], "models.toml: model alpha") == ALPHA_KEY
    assert chooser(alpha) is not chooser(plain)


# --- judges at their own endpoints -------------------------------------------------------------


@pytest.mark.integration
def test_each_judge_server_receives_only_its_own_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        LoopbackServer({PATH: chat_completions()}) as alpha,
        LoopbackServer({PATH: chat_completions()}) as beta,
    ):
        folder = tmp_path / "setups"
        folder.mkdir()
        judge = 'company = "{c}"\nfamily = "{f}"\nbase_url = "{u}"\n'
        (folder / "judges.toml").write_text(
            '[[judge]]\napi_id = "j/alpha"\napi_key_env = "ALPHA_KEY"\n'
            + judge.format(c="A", f="a", u=alpha.url + "/v1")
            + '[[judge]]\napi_id = "j/beta"\napi_key_env = "BETA_KEY"\n'
            + judge.format(c="B", f="b", u=beta.url + "/v1")
            + '[[judge]]\napi_id = "j/plain"\n'
            + judge.format(c="C", f="c", u=beta.url + "/v1")
        )
        monkeypatch.setenv("BENCH_SETUPS", str(folder))
        for name, value in ENV.items():
            monkeypatch.setenv(name, value)
        chooser = ProviderChooser("live", ResponseCache(tmp_path / "cache"))
        provider, pool = chooser.judges()

        async def ask_each() -> None:
            try:
                for j in pool:
                    message = {"role": "user", "content": "grade this"}
                    await provider.complete(ChatRequest(model=j.api_id, messages=[message]))
            finally:
                await chooser.aclose()

        asyncio.run(ask_each())
        assert _authorizations(alpha) == {"j/alpha": {f"Bearer {ALPHA_KEY}"}}
        assert _authorizations(beta) == {"j/beta": {f"Bearer {BETA_KEY}"}, "j/plain": {None}}


# --- model runs through bench run's jobs, then every trace searched for the keys ------------


def _dagster_text(dagster_home: Path) -> str:
    """Every run's config and tags, and every event of its log (messages, metadata, errors)
    as Dagster stores them."""
    parts = []
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        for run in instance.get_runs():
            parts.append(json.dumps([run.run_config, run.tags], default=str))
            parts.extend(dg.serialize_value(e) for e in instance.all_logs(run.run_id))
    assert parts, "no Dagster run was recorded"
    return "\n".join(parts)


def _warehouse_text(database: Path) -> str:
    with duckdb.connect(str(database), read_only=True) as conn:
        tables = conn.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
        return repr([conn.execute(f'SELECT * FROM "{s}"."{t}"').fetchall() for s, t in tables])


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_each_model_server_receives_only_its_own_key_and_no_key_is_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with (
        LoopbackServer({PATH: _parrot(ALPHA_KEY)}) as alpha,
        LoopbackServer({PATH: _parrot(BETA_KEY, model="test/beta")}) as beta,
    ):
        folder = _setups(tmp_path / "setups", _records(alpha.url + "/v1", beta.url + "/v1"))
        env = bench_env(home) | ENV | {"BENCH_SETUPS": str(folder), "BENCH_MODEL_MODE": "live"}
        driver = [sys.executable, str(REPO / "tests" / "run_batch_driver.py")]
        done = subprocess.run(driver, env=env, cwd=REPO, capture_output=True, timeout=800)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        seen_alpha, seen_beta = _authorizations(alpha), _authorizations(beta)

    # Each server received its own key and nothing else; `plain` (no key setting) none.
    assert seen_alpha == {"test/alpha": {f"Bearer {ALPHA_KEY}"}}
    assert seen_beta == {"test/beta": {f"Bearer {BETA_KEY}"}, "test/plain": {None}}

    # No key in the run config, tags, event log or metadata, nor in anything else written.
    dagster_text = _dagster_text(home / "build" / "dagster")
    assert "model_runs" in dagster_text and "ASSET_MATERIALIZATION" in dagster_text
    warehouse_text = _warehouse_text(home / "warehouse" / "bench.duckdb")
    assert "[redacted]" in warehouse_text  # the parrots' answers were stored, scrubbed
    files = [p for p in home.rglob("*") if p.is_file()]
    outputs = [dagster_text, warehouse_text, done.stdout.decode(), done.stderr.decode()]
    for key in (PROJECT_KEY, ALPHA_KEY, BETA_KEY):
        assert not any(key in text for text in outputs), key
        assert not [p for p in files if key.encode() in p.read_bytes()], key
