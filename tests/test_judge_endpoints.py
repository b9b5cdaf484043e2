"""Judges served at their own endpoints: a local llama.cpp-style server (sent no key) beside a
hosted one (sent the key its record names, never the OpenRouter key), routed by model behind
the one judge provider."""

import asyncio
from pathlib import Path

import pytest
from loopback import LoopbackServer, chat_completions

from bench_pipeline.providers import ChatRequest, ProviderError, ResponseCache
from bench_pipeline.resources.models import ProviderChooser, load_judges

pytestmark = pytest.mark.unit

PATH = "/v1/chat/completions"
KEY = "hosted-judge-endpoint-test-key"
PROJECT_KEY = "sk-or-v1-judge-endpoint-test"


def _judges_file(folder: Path, local_url: str, hosted_url: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "judges.toml").write_text(
        f"""
[[judge]]
api_id = "local/qwen-judge"
company = "Local"
family = "qwen"
local = true
base_url = "{local_url}"

[[judge]]
api_id = "hosted/judge"
company = "Hosted"
family = "hosted"
base_url = "{hosted_url}"
api_key_env = "HOSTED_JUDGE_KEY"
""",
        encoding="utf-8",
    )
    return folder


def _ask(provider, model: str):
    request = ChatRequest(model=model, messages=[{"role": "user", "content": "grade this"}])
    return asyncio.run(provider.complete(request))


@pytest.mark.integration
def test_each_judge_is_called_at_its_own_endpoint_with_its_own_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        LoopbackServer({PATH: chat_completions()}) as local,
        LoopbackServer({PATH: chat_completions()}) as hosted,
    ):
        monkeypatch.setenv(
            "BENCH_SETUPS",
            str(_judges_file(tmp_path / "setups", local.url + "/v1", hosted.url + "/v1")),
        )
        monkeypatch.setenv("OPENROUTER_API_KEY", PROJECT_KEY)  # sent to neither server
        monkeypatch.setenv("HOSTED_JUDGE_KEY", KEY)
        chooser = ProviderChooser("live", ResponseCache(tmp_path / "cache"))
        provider, pool = chooser.judges()

        async def both():
            try:
                return [
                    await provider.complete(
                        ChatRequest(
                            model=judge.api_id, messages=[{"role": "user", "content": "grade this"}]
                        )
                    )
                    for judge in pool
                ]
            finally:
                await chooser.aclose()

        answers = asyncio.run(both())
        sent_local, sent_hosted = local.requests(PATH), hosted.requests(PATH)

    assert [j.api_id for j in pool] == ["local/qwen-judge", "hosted/judge"]
    assert [a.model for a in answers] == ["local/qwen-judge", "hosted/judge"]
    assert not any(a.simulated for a in answers)
    assert len(sent_local) == len(sent_hosted) == 1
    assert "Authorization" not in sent_local[0].headers
    assert sent_hosted[0].headers.get("Authorization") == f"Bearer {KEY}"
    with pytest.raises(ProviderError, match="no endpoint serves 'other/model'"):
        _ask(provider, "other/model")


def test_a_local_judge_without_its_server_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "judges.toml"
    path.write_text('[[judge]]\napi_id = "x/y"\ncompany = "X"\nfamily = "y"\nlocal = true\n')
    with pytest.raises(ValueError, match=r"judges\.toml: judge 1: .*base URL of its server"):
        load_judges(path)
    path.write_text(
        '[[judge]]\napi_id = "x/y"\ncompany = "X"\nfamily = "y"\nbase_url = "ftp://x"\n'
    )
    with pytest.raises(ValueError, match=r"judge 1: .*must start with http"):
        load_judges(path)
