"""The live endpoint client over loopback: one model's failure does not sink the run."""

import json

import pytest
from loopback import LoopbackServer, Reply

from bench_pipeline.core.http import FetchError
from bench_pipeline.core.settings import REPO_ROOT
from bench_pipeline.ingest import engine
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.resources.sources import FETCH_FAILURES, LiveHttpClient

pytestmark = [pytest.mark.integration, pytest.mark.faults]
SNAPSHOT = REPO_ROOT / "sources" / "snapshots" / "openrouter_endpoints"
GPT4O = (SNAPSHOT / "fener_openai_gpt-4o_endpoints_2026-08-31.json").read_bytes()
MODELS = {"data": [{"id": "openai/gpt-4o"}, {"id": "x/missing", "canonical_slug": "x/missing-1"}]}


def client(server: LoopbackServer) -> LiveHttpClient:
    return LiveHttpClient(base_url=server.url, max_retries=1, backoff_base_seconds=0.01)


def test_a_missing_model_is_recorded_and_the_rest_is_ingested(warehouse) -> None:
    definition = source_definitions()["openrouter_endpoints"]
    routes = {
        "/api/v1/models": [Reply(200, json.dumps(MODELS).encode())],
        "/api/v1/models/openai/gpt-4o/endpoints": [Reply(200, GPT4O)],
        "/api/v1/models/x/missing-1/endpoints": [Reply(404, b"not found")],
    }
    with LoopbackServer(routes) as server:
        files = client(server).fetch(definition)
    names = sorted(f.name for f in files)
    assert names == [FETCH_FAILURES, "openai__gpt-4o.json"]
    failures = next(f for f in files if f.name == FETCH_FAILURES).content.decode()
    assert failures.startswith("x/missing-1\t") and "404" in failures
    with warehouse.connect() as conn:
        run = engine.fetch_and_store(conn, definition, lambda: files, warehouse.raw_root, "live")
        run = engine.stage(conn, run, definition, PARSERS["openrouter_endpoints"])
        run = engine.validate(conn, run, definition)
        run = engine.publish(conn, run, definition)
        assert run.status == "accepted" and run.rows_valid == {"openrouter_endpoints": 2}


def test_every_model_failing_is_a_fetch_failure() -> None:
    definition = source_definitions()["openrouter_endpoints"]
    routes = {
        "/api/v1/models": [Reply(200, json.dumps(MODELS).encode())],
        "/api/v1/models/openai/gpt-4o/endpoints": [Reply(500, b"boom")],
        "/api/v1/models/x/missing-1/endpoints": [Reply(404, b"not found")],
    }
    with LoopbackServer(routes) as server, pytest.raises(FetchError, match="every endpoint"):
        client(server).fetch(definition)


def test_endpoint_requests_run_concurrently_under_the_limit_in_list_order() -> None:
    definition = source_definitions()["openrouter_endpoints"]
    slugs = [f"lab/model-{n:02d}" for n in range(12)]
    routes: dict[str, list[Reply]] = {
        "/api/v1/models": [Reply(200, json.dumps({"data": [{"id": s} for s in slugs]}).encode())]
    }
    for slug in slugs:  # every answer is held, so requests that overlap are seen overlapping
        routes[f"/api/v1/models/{slug}/endpoints"] = [Reply(200, GPT4O, delay=0.3)]
    routes["/api/v1/models/lab/model-05/endpoints"] = [Reply(404, b"gone", delay=0.3)]
    with LoopbackServer(routes) as server:
        live = LiveHttpClient(
            base_url=server.url, max_retries=0, backoff_base_seconds=0.01, max_concurrency=4
        )
        files = live.fetch(definition)
        arrivals = sorted(
            r.at for s in slugs for r in server.requests(f"/api/v1/models/{s}/endpoints")
        )
    assert [f.name for f in files] == [
        *(f"{s.replace('/', '__')}.json" for s in slugs if s != "lab/model-05"),
        FETCH_FAILURES,
    ]
    assert files[-1].content.decode().startswith("lab/model-05\t")
    # Most requests in any 0.3 s window: the limit, reached but never passed.
    in_flight = max(sum(1 for b in arrivals if a <= b < a + 0.29) for a in arrivals)
    assert in_flight == 4
