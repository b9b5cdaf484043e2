"""Model providers: the OpenAI-compatible client against a real loopback HTTP server, the
request hash, the response cache, recorded replay, the simulation and the runner."""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, Reply

from bench_pipeline.core.http import RetryPolicy
from bench_pipeline.providers import (
    SIMULATED_MARKER,
    CachedProvider,
    ChatRequest,
    ChatResponse,
    OpenAICompatibleProvider,
    Provider,
    ProviderError,
    RecordedProvider,
    RecordingMissing,
    ResponseCache,
    SimulatedProvider,
    Usage,
    parse_usage,
    run_all,
)
from bench_pipeline.providers import cache as cache_module

pytestmark = [pytest.mark.unit, pytest.mark.timeout(60)]

PATH = "/api/v1/chat/completions"
CANARY = "sk-or-v1-canary-7f3e9a1b2c4d5e6f"
FAST = RetryPolicy(max_retries=4, backoff_base=0.01, max_wait=5.0)


def _request(text: str = "Should we ship the beta to all users?", **params: Any) -> ChatRequest:
    return ChatRequest(
        model=params.pop("model", "openai/gpt-4o-mini"),
        messages=[
            {"role": "system", "content": "You are a careful product manager."},
            {"role": "user", "content": text},
        ],
        **params,
    )


def _completion(
    content: str = "Ship to 10% first.",
    *,
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> str:
    body: dict[str, Any] = {
        "id": "gen-123",
        "object": "chat.completion",
        "model": "openai/gpt-4o-mini-2024-07-18",
        "provider": "OpenAI",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": usage
        if usage is not None
        else {"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26},
        **extra,
    }
    return json.dumps(body)


def _provider(server: LoopbackServer, **kwargs: Any) -> OpenAICompatibleProvider:
    kwargs.setdefault("retry", FAST)
    kwargs.setdefault("timeout", 5.0)
    return OpenAICompatibleProvider(CANARY, base_url=server.url + "/api/v1", **kwargs)


def _complete(provider: Provider, request: ChatRequest) -> ChatResponse:
    return asyncio.run(provider.complete(request))


# --- the OpenAI-compatible client over real HTTP -------------------------------------------


@pytest.mark.integration
def test_a_plain_json_response_is_parsed_and_the_request_sent_as_built() -> None:
    request = _request(temperature=0.2, max_tokens=300, extra={"seed": 7})
    with LoopbackServer({PATH: [Reply(200, body=_completion())]}) as server:
        response = _complete(_provider(server, headers={"X-Title": "bench"}), request)
        [sent] = server.requests(PATH)

    assert sent.method == "POST"
    assert sent.headers["Authorization"] == f"Bearer {CANARY}"  # sent, and only there
    assert sent.headers["X-Title"] == "bench"
    assert json.loads(sent.body) == request.body()
    assert json.loads(sent.body)["temperature"] == 0.2
    assert "reasoning_effort" not in json.loads(sent.body)  # None is not sent
    assert response.request_hash == request.request_hash()
    assert response.model == "openai/gpt-4o-mini"
    assert response.raw["model"] == "openai/gpt-4o-mini-2024-07-18"
    assert response.content == "Ship to 10% first."
    assert response.finish_reason == "stop"
    assert response.usage == Usage(prompt_tokens=20, completion_tokens=6, per_request=True)
    assert response.provider == "OpenAI"
    assert response.retries == 0
    assert response.ttft_seconds is None
    assert response.wall_seconds > 0
    assert not response.simulated
    assert not response.from_cache


@pytest.mark.integration
@pytest.mark.faults
def test_500_then_429_with_retry_after_then_200() -> None:
    script = [
        Reply(500, body="boom"),
        Reply(429, headers={"Retry-After": "1"}, body='{"error": {"code": 429}}'),
        Reply(200, body=_completion()),
    ]
    with LoopbackServer({PATH: script}) as server:
        response = _complete(_provider(server), _request())
        gaps = server.gaps(PATH)

    assert response.content == "Ship to 10% first."
    assert response.retries == 2
    assert len(gaps) == 2
    assert gaps[0] < 0.5  # the jittered backoff after the 500
    assert gaps[1] >= 0.95  # the server's whole second after the 429
    assert response.wall_seconds >= 0.95


@pytest.mark.integration
@pytest.mark.faults
def test_a_4xx_fails_at_once_and_the_error_never_carries_the_key() -> None:
    body = json.dumps({"error": {"code": 401, "message": f"invalid key {CANARY}"}})
    with LoopbackServer({PATH: [Reply(401, body=body)]}) as server:
        with pytest.raises(ProviderError) as raised:
            _complete(_provider(server), _request())
        requests = server.requests(PATH)

    message = str(raised.value)
    assert len(requests) == 1
    assert "HTTP 401" in message
    assert "openai/gpt-4o-mini" in message
    assert "1 attempt(s)" in message
    assert CANARY not in message
    assert "[redacted]" in message


@pytest.mark.integration
@pytest.mark.faults
def test_exhausted_retries_raise_naming_the_last_status() -> None:
    script = [Reply(502), Reply(503), Reply(500)]
    policy = RetryPolicy(max_retries=2, backoff_base=0.01)
    with LoopbackServer({PATH: script}) as server:
        with pytest.raises(ProviderError) as raised:
            _complete(_provider(server, retry=policy), _request())
        assert len(server.requests(PATH)) == 3
    assert "HTTP 500" in str(raised.value)
    assert "3 attempt(s)" in str(raised.value)


@pytest.mark.integration
@pytest.mark.faults
def test_a_hanging_server_times_out_and_is_retried() -> None:
    script = [Reply(200, body=_completion(), delay=10.0), Reply(200, body=_completion("late"))]
    with LoopbackServer({PATH: script}) as server:
        response = _complete(_provider(server, timeout=0.3), _request())
    assert response.content == "late"
    assert response.retries == 1


@pytest.mark.integration
@pytest.mark.faults
def test_an_error_object_in_a_200_body_is_a_provider_error() -> None:
    body = json.dumps({"error": {"code": 400, "message": "context length exceeded"}})
    with LoopbackServer({PATH: [Reply(200, body=body)]}) as server:
        with pytest.raises(ProviderError, match="context length exceeded"):
            _complete(_provider(server), _request())
        assert len(server.requests(PATH)) == 1


@pytest.mark.integration
def test_a_truncated_answer_keeps_finish_reason_length_and_exact_tokens() -> None:
    body = json.loads(_completion("Ship to 10% of users, then wat"))
    body["choices"][0]["finish_reason"] = "length"
    body["usage"] = {"prompt_tokens": 31, "completion_tokens": 64, "total_tokens": 95,
                     "completion_tokens_details": {"reasoning_tokens": 40}}  # fmt: skip
    with LoopbackServer({PATH: [Reply(200, body=json.dumps(body))]}) as server:
        response = _complete(_provider(server), _request(max_tokens=64))
        assert json.loads(server.requests(PATH)[0].body)["max_tokens"] == 64
    assert response.finish_reason == "length"
    assert response.content == "Ship to 10% of users, then wat"  # never completed or edited
    assert response.usage == Usage(
        prompt_tokens=31, completion_tokens=64, reasoning_tokens=40, per_request=True
    )


@pytest.mark.integration
@pytest.mark.faults
def test_malformed_json_is_retried_and_then_fails_naming_the_problem() -> None:
    cut = _completion()[:40]  # a body cut off mid-object
    html = "<html><body>502 Bad Gateway</body></html>"
    with LoopbackServer({PATH: [Reply(200, body=cut), Reply(200, body=_completion("ok"))]}) as ok:
        response = _complete(_provider(ok), _request())
        assert len(ok.requests(PATH)) == 2
    assert (response.content, response.retries) == ("ok", 1)

    policy = RetryPolicy(max_retries=1, backoff_base=0.01)
    with LoopbackServer({PATH: [Reply(200, body=html)]}) as broken:
        with pytest.raises(ProviderError, match="malformed JSON reply"):
            _complete(_provider(broken, retry=policy), _request())
        assert len(broken.requests(PATH)) == 2


def _sse(payload: dict[str, Any] | str) -> str:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n"


def _chunk(**delta: Any) -> dict[str, Any]:
    finish = delta.pop("finish_reason", None)
    return {
        "id": "gen-456",
        "model": "anthropic/claude-sonnet-4",
        "provider": "Anthropic",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@pytest.mark.integration
def test_streaming_assembles_the_answer_and_measures_time_to_first_token() -> None:
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 90,
        "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 150},
        "completion_tokens_details": {"reasoning_tokens": 40},
        "cost": 0.0012,
    }
    chunks = [
        (0.0, _sse(_chunk(role="assistant", content=""))),  # no text yet: not the first token
        (0.1, ": OPENROUTER PROCESSING\n\n"),
        (0.3, _sse(_chunk(content="Ship "))),
        (0.1, _sse(_chunk(content="to 10% "))),
        (0.1, _sse(_chunk(content="first.", finish_reason="stop"))),
        (0.0, _sse({**_chunk(), "choices": [], "usage": usage})),
        (0.0, _sse("[DONE]")),
    ]
    reply = Reply(200, headers={"Content-Type": "text/event-stream"}, chunks=chunks)
    with LoopbackServer({PATH: [reply]}) as server:
        started = time.perf_counter()
        response = _complete(_provider(server, stream=True), _request(model="x/y"))
        elapsed = time.perf_counter() - started
        [sent] = server.requests(PATH)

    body = json.loads(sent.body)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert response.request_hash == _request(model="x/y").request_hash()  # stream not hashed
    assert response.content == "Ship to 10% first."
    assert response.finish_reason == "stop"
    assert response.provider == "Anthropic"
    assert response.ttft_seconds is not None
    assert 0.38 <= response.ttft_seconds < 0.38 + 0.5
    assert response.ttft_seconds + 0.18 <= response.wall_seconds <= elapsed
    assert response.usage == Usage(
        prompt_tokens=1200,
        completion_tokens=90,
        cached_tokens=1000,
        cache_write_tokens=150,
        reasoning_tokens=40,
        per_request=True,
    )
    assert response.raw["choices"][0]["message"]["content"] == "Ship to 10% first."
    assert response.raw["usage"]["cost"] == 0.0012
    assert response.raw["stream_chunks"] == 5


@pytest.mark.integration
@pytest.mark.faults
def test_a_stream_that_fails_with_503_is_retried() -> None:
    chunks = [(0.0, _sse(_chunk(content="ok", finish_reason="stop"))), (0.0, _sse("[DONE]"))]
    script = [Reply(503, body="busy"), Reply(200, chunks=chunks)]
    with LoopbackServer({PATH: script}) as server:
        response = _complete(_provider(server, stream=True), _request())
    assert response.content == "ok"
    assert response.retries == 1
    assert response.usage is None  # the stream sent no usage: unknown, not zero


@pytest.mark.integration
def test_a_server_that_ignores_stream_true_is_read_as_json_over_one_shared_client() -> None:
    json_reply = Reply(200, body=_completion(), headers={"Content-Type": "application/json"})

    async def twice(provider: OpenAICompatibleProvider) -> list[ChatResponse]:
        async with provider:
            return [await provider.complete(_request(f"case {n}")) for n in range(2)]

    with LoopbackServer({PATH: [json_reply]}) as server:
        responses = asyncio.run(twice(_provider(server, stream=True)))
    assert [r.content for r in responses] == ["Ship to 10% first."] * 2
    assert all(r.ttft_seconds is None for r in responses)


@pytest.mark.integration
def test_usage_with_cached_and_reasoning_tokens_from_a_json_response() -> None:
    usage = {
        "prompt_tokens": 5000,
        "completion_tokens": 800,
        "total_tokens": 5800,
        "prompt_tokens_details": {"cached_tokens": 4096, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 640},
    }
    with LoopbackServer({PATH: [Reply(200, body=_completion(usage=usage))]}) as server:
        response = _complete(_provider(server), _request(reasoning_effort="high"))
    assert response.usage == Usage(
        prompt_tokens=5000,
        completion_tokens=800,
        cached_tokens=4096,
        reasoning_tokens=640,
        per_request=True,
    )


def test_parse_usage_field_names_and_missing_values() -> None:
    assert parse_usage(None) is None
    assert parse_usage({"prompt_tokens": 10, "completion_tokens": None}) == Usage(
        prompt_tokens=10, per_request=True
    )
    openrouter = {
        "prompt_tokens": 194,
        "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    assert parse_usage(openrouter) == Usage(
        prompt_tokens=194, completion_tokens=2, cache_write_tokens=100, per_request=True
    )
    deepseek = {"prompt_tokens": 300, "completion_tokens": 5, "prompt_cache_hit_tokens": 256}
    assert parse_usage(deepseek).cached_tokens == 256  # type: ignore[union-attr]
    with pytest.raises(ProviderError):
        parse_usage({"prompt_tokens": -1})


@pytest.mark.integration
def test_the_api_key_never_appears_in_a_response() -> None:
    echo = {
        "debug": {"Authorization": f"Bearer {CANARY}", "note": f"called with {CANARY}"},
        "headers": [{"authorization": CANARY}],
    }
    body = _completion(f"your key is {CANARY}", **echo)
    with LoopbackServer({PATH: [Reply(200, body=body)]}) as server:
        provider = _provider(server)
        response = _complete(provider, _request())
        assert server.requests(PATH)[0].headers["Authorization"].endswith(CANARY)

    for text in (
        str(response),
        repr(response),
        response.model_dump_json(),
        json.dumps(response.raw),
        repr(provider),
    ):
        assert CANARY not in text
    assert "Authorization" not in response.raw["debug"]
    assert response.raw["debug"]["note"] == "called with [redacted]"
    assert response.content == "your key is [redacted]"


# --- the request hash ---------------------------------------------------------------------


def test_request_hash_is_sha256_of_canonical_json_and_ignores_dict_order() -> None:
    one = ChatRequest(
        model="m/1",
        messages=[{"role": "user", "content": "hi"}],
        temperature=1,
        extra={"top_p": 0.9, "provider": {"order": ["A", "B"], "allow_fallbacks": False}},
    )
    two = ChatRequest.model_validate(
        {
            "extra": {"provider": {"allow_fallbacks": False, "order": ["A", "B"]}, "top_p": 0.9},
            "messages": [{"content": "hi", "role": "user"}],
            "temperature": 1.0,
            "model": "m/1",
        }
    )
    assert one.request_hash() == two.request_hash()
    assert one.request_hash() == hashlib.sha256(one.canonical_json().encode()).hexdigest()
    assert json.loads(one.canonical_json())["model"] == "m/1"
    # A parameter left at None is not sent, so it is the same request as an absent one.
    hi = [{"role": "user", "content": "hi"}]
    plain = ChatRequest(model="m/1", messages=hi)
    unset = ChatRequest(model="m/1", messages=hi, max_tokens=None)
    assert plain.request_hash() == unset.request_hash()


def test_any_change_to_the_request_changes_the_hash() -> None:
    base = _request(temperature=0.5, max_tokens=100, reasoning_effort="low", extra={"seed": 1})
    variants = [
        _request(
            temperature=0.5,
            max_tokens=100,
            reasoning_effort="low",
            extra={"seed": 1},
            model="openai/gpt-4o",
        ),
        _request(
            "Should we ship the beta to all users? ",
            temperature=0.5,
            max_tokens=100,
            reasoning_effort="low",
            extra={"seed": 1},
        ),
        _request(temperature=0.6, max_tokens=100, reasoning_effort="low", extra={"seed": 1}),
        _request(temperature=None, max_tokens=100, reasoning_effort="low", extra={"seed": 1}),
        _request(temperature=0.5, max_tokens=101, reasoning_effort="low", extra={"seed": 1}),
        _request(temperature=0.5, max_tokens=100, reasoning_effort="high", extra={"seed": 1}),
        _request(temperature=0.5, max_tokens=100, reasoning_effort="low", extra={"seed": 2}),
        _request(
            temperature=0.5, max_tokens=100, reasoning_effort="low", extra={"seed": 1, "top_p": 1}
        ),
        base.model_copy(update={"messages": base.messages[1:]}),
        base.model_copy(update={"messages": base.messages[::-1]}),
    ]
    hashes = {base.request_hash(), *(v.request_hash() for v in variants)}
    assert len(hashes) == len(variants) + 1


def test_extra_may_not_repeat_a_request_field() -> None:
    with pytest.raises(ValueError, match="temperature"):
        _request(extra={"temperature": 0})
    with pytest.raises(ValueError, match="stream"):
        _request(extra={"stream": True})


# --- the cache ----------------------------------------------------------------------------


def _json_server(delay: float = 0.0) -> LoopbackServer:
    return LoopbackServer({PATH: [Reply(200, body=_completion(), delay=delay)]})


@pytest.mark.integration
def test_a_second_run_is_served_from_the_cache_with_zero_http_calls(tmp_path: Path) -> None:
    requests = [_request(f"case {n}") for n in range(4)]
    with _json_server() as server:
        first = asyncio.run(
            run_all(CachedProvider(_provider(server), ResponseCache(tmp_path)), requests, 2)
        )
        calls_after_first = len(server.requests(PATH))
        # A new provider and cache object over the same directory: a rerun, a backfill.
        second = asyncio.run(
            run_all(CachedProvider(_provider(server), ResponseCache(tmp_path)), requests, 2)
        )
        calls_after_second = len(server.requests(PATH))

    assert calls_after_first == 4
    assert calls_after_second == 4  # no call at all the second time
    assert not any(r.from_cache for r in first)
    assert all(r.from_cache for r in second)
    for before, after in zip(first, second, strict=True):
        assert after.model_copy(update={"from_cache": False}) == before
    assert len(ResponseCache(tmp_path)) == 4
    stored = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert stored and not any(CANARY.encode() in text for text in stored)


@pytest.mark.integration
def test_identical_concurrent_requests_make_one_call(tmp_path: Path) -> None:
    same, other = _request("same"), _request("other")
    with _json_server(delay=0.3) as server:
        provider = CachedProvider(_provider(server), ResponseCache(tmp_path))
        responses = asyncio.run(run_all(provider, [same] * 5 + [other], concurrency=6))
        calls = len(server.requests(PATH))

    assert calls == 2
    assert [r.from_cache for r in responses[:5]].count(False) == 1
    assert {r.request_hash for r in responses[:5]} == {same.request_hash()}
    assert responses[5].request_hash == other.request_hash()


@pytest.mark.integration
@pytest.mark.faults
def test_a_failed_call_is_not_cached(tmp_path: Path) -> None:
    script = [Reply(400, body="bad"), Reply(200, body=_completion())]
    with LoopbackServer({PATH: script}) as server:
        provider = CachedProvider(_provider(server), ResponseCache(tmp_path))
        with pytest.raises(ProviderError):
            _complete(provider, _request())
        assert len(ResponseCache(tmp_path)) == 0
        assert _complete(provider, _request()).content == "Ship to 10% first."
        assert len(server.requests(PATH)) == 2


def test_simulated_answers_pass_through_the_cache_but_are_never_stored(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    provider = CachedProvider(SimulatedProvider(), cache)
    response = _complete(provider, _request())
    assert response.simulated and provider.simulated
    assert len(cache) == 0


def test_the_cache_rejects_a_response_to_another_request(tmp_path: Path) -> None:
    response = _complete(SimulatedProvider(), _request("a"))
    with pytest.raises(ValueError, match="not this request"):
        ResponseCache(tmp_path).put(_request("b"), response)


def _answer(request: ChatRequest, content: str = "ok") -> ChatResponse:
    return ChatResponse(
        request_hash=request.request_hash(),
        model=request.model,
        content=content,
        finish_reason="stop",
        usage=Usage(prompt_tokens=12, completion_tokens=2),
        wall_seconds=0.05,
        provider="loopback",
    )


def test_a_torn_journal_entry_is_missing_and_the_entries_around_it_survive(
    tmp_path: Path,
) -> None:
    first, torn, after = _request("first"), _request("torn"), _request("after")
    writer = ResponseCache(tmp_path)
    writer.put(first, _answer(first))
    writer.put(torn, _answer(torn, "x" * 9000))
    # A process killed mid-write leaves the start of its entry and no end.
    journal = tmp_path / "responses.jsonl"
    journal.write_bytes(journal.read_bytes()[:-4000])
    ResponseCache(tmp_path).put(after, _answer(after))

    reader = ResponseCache(tmp_path)
    assert reader.get(first.request_hash()) == _answer(first)
    assert reader.get(after.request_hash()) == _answer(after)
    assert reader.get(torn.request_hash()) is None
    assert set(reader.hashes()) == {first.request_hash(), after.request_hash()}
    # Asked again, the torn request's new entry replaces the torn one.
    reader.put(torn, _answer(torn, "again"))
    assert ResponseCache(tmp_path).get(torn.request_hash()).content == "again"


def _append_many(root: str, label: str, count: int) -> None:
    cache = ResponseCache(root)
    for n in range(count):
        request = _request(f"{label} {n}")
        cache.put(request, _answer(request, f"{label} {n} " + "y" * 20_000))


def test_processes_appending_at_once_never_mix_their_entries(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=_append_many, args=(str(tmp_path), label, 150))
        for label in ("left", "right")
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
        assert writer.exitcode == 0

    cache = ResponseCache(tmp_path)
    assert len(cache) == 300
    for label in ("left", "right"):
        for n in range(150):
            response = cache.get(_request(f"{label} {n}").request_hash())
            assert response is not None and response.content.startswith(f"{label} {n} ")


def test_an_entry_another_process_wrote_later_is_found(tmp_path: Path) -> None:
    request = _request("written elsewhere")
    reader = ResponseCache(tmp_path)
    assert reader.get(request.request_hash()) is None  # indexed before the other write
    ResponseCache(tmp_path).put(request, _answer(request))
    assert reader.get(request.request_hash()) == _answer(request)
    assert request.request_hash() in reader


def test_the_index_reads_the_journal_in_chunks_across_entry_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tiny chunk splits every entry many times: each must still be indexed whole, once.
    writer = ResponseCache(tmp_path)
    requests = [_request(f"chunked {n}") for n in range(25)]
    for n, request in enumerate(requests):
        writer.put(request, _answer(request, "z" * (n * 37)))
    monkeypatch.setattr(cache_module, "CHUNK", 7)
    reader = ResponseCache(tmp_path)
    assert [reader.get(r.request_hash()) for r in requests] == [
        _answer(r, "z" * (n * 37)) for n, r in enumerate(requests)
    ]
    assert len(reader) == 25


def test_a_writer_finds_its_own_entries_and_indexes_them_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "PENDING_LIMIT", 3)
    cache = ResponseCache(tmp_path)
    requests = [_request(f"own {n}") for n in range(7)]
    for n, request in enumerate(requests):
        cache.put(request, _answer(request))
        assert cache.get(request.request_hash()) == _answer(request)
        # Every third entry sends the batch to the index file; the rest wait in memory.
        assert len(cache._pending) == (n + 1) % 3
    with sqlite3.connect(tmp_path / cache_module.INDEX) as db:
        assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 6
    assert len(ResponseCache(tmp_path)) == 7


def test_a_lost_or_corrupt_index_is_rebuilt_from_the_journal(tmp_path: Path) -> None:
    requests = [_request(f"indexed {n}") for n in range(5)]
    writer = ResponseCache(tmp_path)
    for request in requests:
        writer.put(request, _answer(request))
    assert len(ResponseCache(tmp_path)) == 5  # builds the index
    index = tmp_path / cache_module.INDEX
    assert index.exists()
    index.write_bytes(b"not a database at all" * 200)
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    assert all(ResponseCache(tmp_path).get(r.request_hash()) == _answer(r) for r in requests)
    index.unlink()
    assert all(ResponseCache(tmp_path).get(r.request_hash()) == _answer(r) for r in requests)


def test_a_journal_replaced_by_a_shorter_one_is_indexed_again(tmp_path: Path) -> None:
    old = [_request(f"old {n}") for n in range(3)]
    writer = ResponseCache(tmp_path)
    for request in old:
        writer.put(request, _answer(request, "o" * 500))
    assert len(ResponseCache(tmp_path)) == 3
    journal = tmp_path / "responses.jsonl"
    journal.unlink()
    new = _request("new")
    ResponseCache(tmp_path).put(new, _answer(new))
    reader = ResponseCache(tmp_path)
    assert reader.get(new.request_hash()) == _answer(new)
    assert all(reader.get(r.request_hash()) is None for r in old)
    assert set(reader.hashes()) == {new.request_hash()}


def _read_until_found(root: str, labels: tuple[str, ...], count: int) -> None:
    cache = ResponseCache(root)
    missing = {f"{label} {n}" for label in labels for n in range(count)}
    for _ in range(100_000):
        missing = {m for m in missing if cache.get(_request(m).request_hash()) is None}
        if not missing:
            return
    raise AssertionError(f"never found {len(missing)} entries")


def test_a_reader_indexing_while_processes_append_finds_every_entry(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_append_many, args=(str(tmp_path), label, 60))
        for label in ("up", "down")
    ]
    workers.append(
        context.Process(target=_read_until_found, args=(str(tmp_path), ("up", "down"), 60))
    )
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=180)
        assert worker.exitcode == 0
    assert len(ResponseCache(tmp_path)) == 120


def test_hand_kept_entry_files_are_read_and_checked(tmp_path: Path) -> None:
    kept, wrong = _request("kept"), _request("wrong")
    cache = ResponseCache(tmp_path)
    for request, answer in ((kept, _answer(kept)), (wrong, _answer(kept))):
        path = cache.path_for(request.request_hash())
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"request": request.model_dump(mode="json"), "response": answer.model_dump()}
        path.write_text(json.dumps(entry))
    assert cache.get(kept.request_hash()) == _answer(kept)
    with pytest.raises(ValueError, match="holds the response to"):
        cache.get(wrong.request_hash())


# --- recorded replay ----------------------------------------------------------------------


@pytest.mark.integration
def test_recorded_replay_hits_and_fails_clearly_on_a_miss(tmp_path: Path) -> None:
    recorded = _request("recorded case")
    with _json_server() as server:
        live = _complete(CachedProvider(_provider(server), ResponseCache(tmp_path)), recorded)

    replay = RecordedProvider(ResponseCache(tmp_path))
    hit = _complete(replay, recorded)
    assert hit.from_cache
    assert hit.model_copy(update={"from_cache": False}) == live

    missing = _request("never recorded", model="google/gemini-2.5-pro")
    with pytest.raises(RecordingMissing) as raised:
        _complete(replay, missing)
    assert missing.request_hash() in str(raised.value)
    assert "google/gemini-2.5-pro" in str(raised.value)


# --- the simulation -----------------------------------------------------------------------


def test_simulation_is_deterministic_and_labelled() -> None:
    request = _request(reasoning_effort="medium")
    one = _complete(SimulatedProvider(), request)
    two = _complete(SimulatedProvider(), _request(reasoning_effort="medium"))
    assert one == two
    assert one.content.startswith(SIMULATED_MARKER)
    assert one.simulated and one.provider == "simulated"
    assert one.request_hash == request.request_hash()
    assert one.usage is not None and one.usage.per_request
    assert one.usage.prompt_tokens > 0
    assert 0 < one.usage.reasoning_tokens < one.usage.completion_tokens

    others = [
        _request(reasoning_effort="high"),
        _request(reasoning_effort="medium", model="other/model"),
        _request("A different brief", reasoning_effort="medium"),
    ]
    for other in others:
        answer = _complete(SimulatedProvider(), other)
        assert answer.content != one.content
        assert answer.request_hash != one.request_hash


def test_simulation_respects_max_tokens() -> None:
    response = _complete(SimulatedProvider(), _request(max_tokens=5))
    assert response.usage is not None
    assert response.usage.completion_tokens == 5
    assert response.finish_reason == "length"
    assert response.content.startswith(SIMULATED_MARKER)


# --- the runner ---------------------------------------------------------------------------


class _Counting(Provider):
    """Answers after a short pause, counting how many calls are in flight at once."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.in_flight = 0
        self.most = 0
        self.fail_on = fail_on
        self.inner = SimulatedProvider()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.02)
            if self.fail_on and self.fail_on in str(request.messages[-1].content):
                raise ProviderError("scripted failure")
            return await self.inner.complete(request)
        finally:
            self.in_flight -= 1


def test_run_all_bounds_concurrency_and_keeps_request_order() -> None:
    provider = _Counting()
    requests = [_request(f"case {n}") for n in range(10)]
    responses = asyncio.run(run_all(provider, requests, concurrency=3))
    assert provider.most == 3
    assert [r.request_hash for r in responses] == [r.request_hash() for r in requests]


def test_run_all_raises_the_first_failure() -> None:
    requests = [_request(f"case {n}") for n in range(5)]
    with pytest.raises(ProviderError, match="scripted failure"):
        asyncio.run(run_all(_Counting(fail_on="case 2"), requests, concurrency=2))
    with pytest.raises(ValueError):
        asyncio.run(run_all(_Counting(), requests, concurrency=0))


# --- the shared retry decision ------------------------------------------------------------


def test_retry_policy_decides_like_the_source_fetcher() -> None:
    policy = RetryPolicy(max_retries=2, backoff_base=0.1, max_wait=3.0)
    assert policy.delay(0, status=404) is None
    assert policy.delay(0, status=400) is None
    assert policy.delay(2, status=503) is None  # retries spent
    assert policy.delay(0, status=429, retry_after="2") == 2.0
    assert policy.delay(0, status=429, retry_after="120") == 3.0  # capped
    assert 0 <= policy.delay(1, status=500) <= 0.2  # type: ignore[operator]
    assert 0 <= policy.delay(0) <= 0.1  # type: ignore[operator]  # transport error


@pytest.mark.integration
def test_an_answer_with_a_lone_surrogate_is_stored_and_served_again(tmp_path: Path) -> None:
    """`\\ud800` escapes in a reply decode to half a character: it becomes U+FFFD, so the
    answer is cached and read back instead of failing its storage and being lost."""
    body = _completion("ship \\ud800 now", reasoning="half \\udfff").replace("\\\\", "\\")
    assert "\\ud800" in body and json.loads(body)["choices"][0]["message"]["content"][5] == "\ud800"
    request = _request("surrogate")
    with LoopbackServer({PATH: [Reply(200, body=body)]}) as server:
        first = _complete(CachedProvider(_provider(server), ResponseCache(tmp_path)), request)
        again = _complete(CachedProvider(_provider(server), ResponseCache(tmp_path)), request)
        calls = len(server.requests(PATH))
    assert first.content == "ship \ufffd now" and first.raw["reasoning"] == "half \ufffd"
    assert again.from_cache and again.content == first.content and calls == 1


@pytest.mark.unit
def test_lone_surrogates_are_replaced_and_clean_values_kept_as_they_are() -> None:
    from bench_pipeline.core.text import without_lone_surrogates

    clean = {"a": ["é ok", 1, None], "b": {"c": "plain"}}
    assert without_lone_surrogates(clean) is clean
    odd = {"a": ["x\ud83d", 1], "\udc00k": "pair \U0001f600 kept"}
    assert without_lone_surrogates(odd) == {"a": ["x\ufffd", 1], "\ufffdk": "pair \U0001f600 kept"}
    assert odd["a"][0] == "x\ud83d"  # the input is not changed in place
    json.dumps(without_lone_surrogates(odd), ensure_ascii=False).encode()  # UTF-8 can hold it
