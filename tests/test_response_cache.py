"""The response cache's faster write path: entries read back exactly as the old sorted-key
encoding read back, old journals stay readable, a request hashes once, and a writer killed
mid-run loses nothing it acknowledged while the next run works."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import multiprocessing
import os
import pickle
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loopback import LoopbackServer, Reply, chat_completions

from bench_pipeline.providers import (
    CachedProvider,
    ChatRequest,
    ChatResponse,
    OpenAICompatibleProvider,
    ResponseCache,
    Usage,
    run_all,
)
from bench_pipeline.providers import cache as cache_module

pytestmark = [pytest.mark.unit, pytest.mark.timeout(120)]

PATH = "/v1/chat/completions"


def _request(text: str, **params: Any) -> ChatRequest:
    return ChatRequest(model="bench/model", messages=[{"role": "user", "content": text}], **params)


def _old_entry(request: ChatRequest, response: ChatResponse) -> bytes:
    """A journal entry as `ResponseCache.put` wrote it before it used pydantic's JSON (the
    oracle): `model_dump` then `json.dumps` with sorted keys."""

    def dumps(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    stored = response.model_copy(update={"from_cache": False}).model_dump(mode="json")
    return (
        f'\n{{"hash":"{request.request_hash()}","request":{dumps(request.model_dump(mode="json"))},'
        f'"response":{dumps(stored)}}}\n'
    ).encode()


def _read_old(entry: bytes) -> ChatResponse:
    return ChatResponse.model_validate(json.loads(entry)["response"])


_TEXT = st.text(
    st.characters(blacklist_categories=["Cs"]),  # lone surrogates cannot be UTF-8 at all
    max_size=40,
) | st.sampled_from(["line\nbreak", "cr\r\nlf", "\u2028\u2029", '"}}\n{"hash":"', "\\", "\x00"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()  # NaN and infinities too: both encodings store them as null
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=25,
)


@st.composite
def _exchanges(draw: st.DrawFn) -> tuple[ChatRequest, ChatResponse]:
    request = _request(
        draw(_TEXT),
        temperature=draw(st.none() | st.floats(0, 2)),
        max_tokens=draw(st.none() | st.integers(1, 10**6)),
        extra=draw(st.dictionaries(st.sampled_from(["seed", "top_p", "provider"]), _JSON)),
    )
    usage = draw(
        st.none()
        | st.builds(
            Usage,
            prompt_tokens=st.integers(0, 10**9),
            completion_tokens=st.integers(0, 10**9),
            per_request=st.booleans(),
        )
    )
    response = ChatResponse(
        request_hash=request.request_hash(),
        model=request.model,
        content=draw(_TEXT),
        finish_reason=draw(st.none() | st.sampled_from(["stop", "length"])),
        usage=usage,
        wall_seconds=draw(st.floats(0, 1e6)),
        ttft_seconds=draw(st.none() | st.floats(0, 10)),
        retries=draw(st.integers(0, 5)),
        provider=draw(_TEXT),
        from_cache=draw(st.booleans()),
        raw=draw(st.dictionaries(_TEXT, _JSON, max_size=5)),
    )
    return request, response


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(exchange=_exchanges())
def test_an_entry_reads_back_exactly_as_the_old_encoding_did(
    exchange: tuple[ChatRequest, ChatResponse], tmp_path_factory: pytest.TempPathFactory
) -> None:
    request, response = exchange
    root = tmp_path_factory.mktemp("cache")
    ResponseCache(root).put(request, response)

    old = _old_entry(request, response)
    assert ResponseCache(root).get(request.request_hash()) == _read_old(old)
    journal = (root / cache_module.JOURNAL).read_bytes()
    assert journal.count(b"\n") == 2  # one entry, one line, whatever the text held
    stored = json.loads(journal)
    assert list(stored) == ["hash", "request", "response"]
    assert stored["request"] == json.loads(old)["request"]


def test_a_journal_written_the_old_way_is_still_read(tmp_path: Path) -> None:
    exchanges = [(r, _answer(r)) for r in (_request(f"old {n}") for n in range(5))]
    (tmp_path / cache_module.JOURNAL).write_bytes(b"".join(_old_entry(*e) for e in exchanges))
    cache = ResponseCache(tmp_path)
    new = _request("new")
    cache.put(new, _answer(new))  # appended after the old entries

    reader = ResponseCache(tmp_path)
    for request, response in exchanges:
        assert reader.get(request.request_hash()) == response
    assert reader.get(new.request_hash()) == _answer(new)
    assert len(reader) == 6


def test_a_request_hashes_once_and_a_changed_copy_hashes_afresh() -> None:
    request = _request("hash me", extra={"seed": 1})
    canonical = hashlib.sha256(request.canonical_json().encode()).hexdigest()
    assert request.request_hash() == canonical
    # The run plan makes repeats with `model_copy(update=...)`: each must hash as built.
    repeat = request.model_copy(update={"extra": {"seed": 2}})
    assert repeat.request_hash() == _request("hash me", extra={"seed": 2}).request_hash()
    assert repeat.request_hash() != canonical
    assert request.model_copy().request_hash() == canonical
    for same in (copy.deepcopy(request), pickle.loads(pickle.dumps(request))):
        assert same.request_hash() == canonical and same == request
    # A hashed request still equals (and dumps like) one never hashed.
    fresh = _request("hash me", extra={"seed": 1})
    assert fresh == request and request.model_dump() == fresh.model_dump()
    assert "_hash" not in request.model_dump_json()


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


# --- processes -----------------------------------------------------------------------------


def _append_and_acknowledge(root: str, acks: str, size: int) -> None:
    """Append entries for ever, noting each one's number once `put` has returned."""
    cache = ResponseCache(root)
    done = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for n in range(1_000_000):
        request = _request(f"kill {n}")
        cache.put(request, _answer(request, f"{n} " + "k" * size))
        os.write(done, f"{n}\n".encode())


@pytest.mark.integration
@pytest.mark.parametrize("size", [100, 3_000_000])
def test_a_writer_killed_mid_run_loses_nothing_it_acknowledged(tmp_path: Path, size: int) -> None:
    # Small entries: the kill lands between or after appends. 3 MB entries: it usually lands
    # inside one `write`, which Linux may then leave short (a torn entry).
    root, acks = tmp_path / "cache", tmp_path / "acks"
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=_append_and_acknowledge, args=(str(root), str(acks), size))
    writer.start()
    deadline = time.monotonic() + 60
    while (not acks.exists() or acks.read_bytes().count(b"\n") < 5) and writer.is_alive():
        assert time.monotonic() < deadline, "the writer never acknowledged 5 entries"
        time.sleep(0.01)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join(timeout=30)
    assert writer.exitcode == -signal.SIGKILL

    acknowledged = [int(line) for line in acks.read_text().split()]
    reader = ResponseCache(root)
    for n in acknowledged:
        response = reader.get(_request(f"kill {n}").request_hash())
        assert response is not None and response.content.startswith(f"{n} "), n
    # Nothing beyond the one append the kill interrupted, whole or torn.
    stored = set(reader.hashes())
    assert len(stored) - len(acknowledged) in (0, 1)

    # The next run works: it asks again for the interrupted entry and appends after the tail.
    following = acknowledged[-1] + 1
    again = ResponseCache(root)
    request = _request(f"kill {following}")
    again.put(request, _answer(request, "asked again"))
    assert ResponseCache(root).get(request.request_hash()) == _answer(request, "asked again")
    assert len(ResponseCache(root)) == len(acknowledged) + 1


def _run_pipeline(url: str, root: str, texts: list[str], out: str) -> None:
    async def go() -> list[ChatResponse]:
        async with OpenAICompatibleProvider(None, base_url=url, timeout=10) as provider:
            cached = CachedProvider(provider, ResponseCache(root))
            return await run_all(cached, [_request(t) for t in texts], 8)

    responses = asyncio.run(go())
    Path(out).write_text(json.dumps([r.model_dump(mode="json") for r in responses]))


@pytest.mark.integration
def test_two_processes_answering_at_once_then_a_rerun_served_wholly_from_the_cache(
    tmp_path: Path,
) -> None:
    left = [f"left {n}" for n in range(60)]
    right = [f"right {n}" for n in range(60)]
    root = tmp_path / "cache"
    context = multiprocessing.get_context("spawn")
    with LoopbackServer({PATH: chat_completions(delay=0.005)}) as server:
        url = server.url + "/v1"
        workers = [
            context.Process(target=_run_pipeline, args=(url, str(root), texts, str(tmp_path / n)))
            for n, texts in (("left.json", left), ("right.json", right))
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=90)
            assert worker.exitcode == 0
        first_calls = len(server.requests(PATH))
        _run_pipeline(url, str(root), left + right, str(tmp_path / "rerun.json"))
        calls_after_rerun = len(server.requests(PATH))

    assert first_calls == 120
    assert calls_after_rerun == 120  # the rerun asked the server nothing
    answered = [
        ChatResponse.model_validate(r)
        for name in ("left.json", "right.json")
        for r in json.loads((tmp_path / name).read_text())
    ]
    rerun = [
        ChatResponse.model_validate(r) for r in json.loads((tmp_path / "rerun.json").read_text())
    ]
    assert not any(r.from_cache for r in answered) and all(r.from_cache for r in rerun)
    assert [r.model_copy(update={"from_cache": False}) for r in rerun] == answered
    journal = (root / cache_module.JOURNAL).read_bytes()
    assert journal.count(b'{"hash":"') == 120  # every answer stored exactly once


def _index_rows(root: Path) -> list[tuple[bytes, int, int]]:
    with sqlite3.connect(root / cache_module.INDEX) as db:
        return sorted(db.execute("SELECT hash, offset, length FROM entries"))


@pytest.mark.parametrize("interleaved", [False, True])
def test_a_writer_indexes_its_own_batch_as_reading_the_journal_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interleaved: bool
) -> None:
    # A writer's batch goes to the index from memory when the journal since the index's mark
    # is exactly its own entries; another writer's entries (or a repeat) in between make it
    # read the journal instead. Either way the index is the one a rebuild from the journal
    # makes (the oracle).
    monkeypatch.setattr(cache_module, "PENDING_LIMIT", 4)
    writer, other = ResponseCache(tmp_path), ResponseCache(tmp_path)
    requests = [_request(f"batch {n}", max_tokens=n + 1) for n in range(23)]
    for n, request in enumerate(requests):
        (other if interleaved and n % 5 == 2 else writer).put(request, _answer(request, "b" * n))
    writer.put(requests[0], _answer(requests[0], "a later answer replaces the first"))
    writer._catch_up()
    other._catch_up()
    indexed = _index_rows(tmp_path)

    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp_path / cache_module.INDEX}{suffix}").unlink(missing_ok=True)
    rebuilt = ResponseCache(tmp_path)
    assert len(rebuilt) == 23
    assert indexed == _index_rows(tmp_path)
    assert rebuilt.get(requests[0].request_hash()).content.startswith("a later")
    for n, request in enumerate(requests[1:], start=1):
        assert rebuilt.get(request.request_hash()) == _answer(request, "b" * n)


@pytest.mark.integration
@pytest.mark.parametrize("echoed", [True, False])
def test_without_a_key_header_like_keys_are_still_dropped(echoed: bool) -> None:
    # A local server (no API key) that echoes a proxy's headers: the provider skips the
    # scrubbing copy only when no header-like key is anywhere in the body.
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "debug": {"note": "proxied", "echo": [{"X-Api-Key": "abc"}] if echoed else []},
    }
    with LoopbackServer({PATH: [Reply(200, body=json.dumps(body))]}) as server:
        provider = OpenAICompatibleProvider(None, base_url=server.url + "/v1", timeout=5)
        response = asyncio.run(provider.complete(_request("echo")))
    assert response.raw["debug"] == {"note": "proxied", "echo": [{}] if echoed else []}
    assert "abc" not in response.model_dump_json()
