"""`get_with_retries` against a real HTTP server on the loopback interface."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest
from loopback import LoopbackServer, Reply

from bench_pipeline.core.http import FetchError, get_with_retries, retry_after_seconds

pytestmark = pytest.mark.timeout(60)

PATH = "/api/v1/models"
PAYLOAD = b'{"data": []}'


def _get(server: LoopbackServer, *, timeout: float = 5.0, **kwargs) -> httpx.Response:
    with httpx.Client(timeout=timeout) as client:
        return get_with_retries(client, server.url + PATH, **kwargs)


@pytest.mark.faults
@pytest.mark.integration
def test_500_then_429_then_200_succeeds_after_waiting_the_retry_after_delay() -> None:
    script = [
        Reply(500, body="boom"),
        Reply(429, headers={"Retry-After": "1"}, body="slow down"),
        Reply(200, body=PAYLOAD),
    ]
    with LoopbackServer({PATH: script}) as server:
        response = _get(server, max_retries=4, backoff_base=0.01)
        gaps = server.gaps(PATH)

    assert response.status_code == 200
    assert response.content == PAYLOAD
    assert len(server.requests(PATH)) == 3
    # After the 500 only the (tiny) backoff; after the 429 the server's whole second.
    assert gaps[0] < 0.5
    assert gaps[1] >= 0.95


@pytest.mark.faults
@pytest.mark.integration
def test_retry_after_as_an_http_date_is_honoured() -> None:
    # HTTP dates have whole seconds: the retry must not come before that second.
    not_before = int(time.time()) + 2
    when = format_datetime(datetime.fromtimestamp(not_before, UTC), usegmt=True)
    script = [Reply(503, headers={"Retry-After": when}), Reply(200, body=PAYLOAD)]
    with LoopbackServer({PATH: script}) as server:
        response = _get(server, max_retries=2, backoff_base=0.01)
        requests = server.requests(PATH)

    assert response.status_code == 200
    assert len(requests) == 2
    assert requests[1].wall >= not_before - 0.05
    assert requests[1].at - requests[0].at < 3.0


def test_retry_after_parsing_of_seconds_and_dates() -> None:
    now = datetime(2026, 9, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(" 7 ") == 7.0
    assert retry_after_seconds("Tue, 01 Sep 2026 12:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Tue, 01 Sep 2026 11:59:00 GMT", now=now) == 0.0  # in the past
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


@pytest.mark.faults
@pytest.mark.integration
def test_404_is_not_retried() -> None:
    with LoopbackServer({PATH: [Reply(404, body="no such model")]}) as server:
        with pytest.raises(FetchError) as raised:
            _get(server, max_retries=4, backoff_base=0.01)
        requests = server.requests(PATH)

    assert len(requests) == 1
    assert "HTTP 404" in str(raised.value)
    assert "1 attempt(s)" in str(raised.value)


@pytest.mark.faults
@pytest.mark.integration
def test_exhausted_retries_raise_fetch_error_naming_url_and_last_status() -> None:
    script = [Reply(500), Reply(502), Reply(503)]
    with LoopbackServer({PATH: script}) as server:
        url = server.url + PATH
        with pytest.raises(FetchError) as raised:
            _get(server, max_retries=2, backoff_base=0.01)
        requests = server.requests(PATH)

    message = str(raised.value)
    assert len(requests) == 3
    assert url in message
    assert "HTTP 503" in message  # the last status, not the first
    assert "3 attempt(s)" in message


@pytest.mark.faults
@pytest.mark.integration
def test_a_hanging_server_times_out_and_fails_after_the_retries() -> None:
    with LoopbackServer({PATH: [Reply(200, body=PAYLOAD, delay=10.0)]}) as server:
        with pytest.raises(FetchError) as raised:
            _get(server, timeout=0.3, max_retries=1, backoff_base=0.01)
        requests = server.requests(PATH)

    assert len(requests) == 2
    assert "Timeout" in str(raised.value)
    assert "2 attempt(s)" in str(raised.value)
    # Each attempt waited for the client timeout, not for the server's 10 s.
    assert requests[1].at - requests[0].at < 2.0


@pytest.mark.faults
@pytest.mark.integration
def test_refused_connection_is_a_fetch_error() -> None:
    with LoopbackServer({}) as server:
        url = server.url + PATH
    # The server is closed now: nothing listens on its port.
    with httpx.Client(timeout=1.0) as client, pytest.raises(FetchError) as raised:
        get_with_retries(client, url, max_retries=1, backoff_base=0.01)
    assert "ConnectError" in str(raised.value)
