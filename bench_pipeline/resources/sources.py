"""Source clients: the recorded-snapshot client (the default, offline) and the live HTTP client.

Both return the payload as named raw files, exactly as the source serves them, so everything
downstream (hashing, parsing, validation) is the same code whichever client fetched it.
"""

from __future__ import annotations

import io
import json
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import httpx
from pydantic import Field

from bench_pipeline.core import settings
from bench_pipeline.core.http import FetchError, get_with_retries
from bench_pipeline.ingest.catalog import SourceDefinition
from bench_pipeline.ingest.payload import RawFile

FETCH_FAILURES = "fetch_failures.txt"


class SourceClient(dg.ConfigurableResource):
    """Fetches one source's payload."""

    def fetch(self, definition: SourceDefinition) -> list[RawFile]:
        raise NotImplementedError

    @property
    def mode(self) -> str:
        raise NotImplementedError


class RecordedSnapshotClient(SourceClient):
    """Reads the recorded real responses under `BENCH_SNAPSHOTS/<source>/`."""

    snapshots_dir: str | None = Field(
        default=None, description="Folder of recorded snapshots; default BENCH_SNAPSHOTS."
    )

    @property
    def mode(self) -> str:
        return "recorded"

    def fetch(self, definition: SourceDefinition) -> list[RawFile]:
        root = Path(self.snapshots_dir) if self.snapshots_dir else settings.snapshots_dir()
        folder = root / definition.name
        if not folder.is_dir():
            raise FetchError(f"no snapshot folder {folder}")
        files = [
            RawFile(name=path.relative_to(folder).as_posix(), content=path.read_bytes())
            for path in sorted(folder.rglob("*"))
            if path.is_file() and not path.name.startswith(".")
        ]
        if not files:
            raise FetchError(f"snapshot folder {folder} is empty")
        return files


class LiveHttpClient(SourceClient):
    """Fetches the source over HTTP with timeouts and retries (see `bench_pipeline.core.http`)."""

    timeout_seconds: float = 30.0
    max_retries: int = 4
    backoff_base_seconds: float = 0.5
    max_models: int | None = Field(
        default=None, description="OpenRouter endpoints: fetch at most this many models."
    )
    base_url: str | None = Field(
        default=None,
        description="Replace each URL's scheme and host with this one (a mirror, a test server).",
    )
    max_concurrency: int = Field(
        default=8,
        ge=1,
        description="OpenRouter endpoints: at most this many model requests in flight at once.",
    )

    @property
    def mode(self) -> str:
        return "live"

    def _url(self, url: str) -> str:
        if not self.base_url:
            return url
        parsed = httpx.URL(url)
        return str(httpx.URL(self.base_url.rstrip("/") + parsed.raw_path.decode()))

    def _get(self, client: httpx.Client, url: str) -> bytes:
        response = get_with_retries(
            client,
            self._url(url),
            max_retries=self.max_retries,
            backoff_base=self.backoff_base_seconds,
        )
        return response.content

    def fetch(self, definition: SourceDefinition) -> list[RawFile]:
        live = definition.live
        headers = {"User-Agent": "bench-pipeline (+https://github.com/)"}
        with httpx.Client(
            timeout=self.timeout_seconds, headers=headers, follow_redirects=True
        ) as client:
            if live.kind == "files":
                return [RawFile(name, self._get(client, url)) for name, url in live.urls.items()]
            if live.kind == "zip":
                return self._zip_members(self._get(client, live.zip_url or ""), live.zip_members)
            return self._endpoints(client, live.models_url or "", live.endpoints_url or "")

    @staticmethod
    def _zip_members(content: bytes, members: list[str]) -> list[RawFile]:
        try:
            archive = zipfile.ZipFile(io.BytesIO(content))
        except zipfile.BadZipFile as error:
            raise FetchError(f"download is not a zip archive: {error}") from error
        by_name = {Path(info.filename).name: info for info in archive.infolist()}
        return [RawFile(name, archive.read(by_name[name])) for name in members if name in by_name]

    def _endpoints(self, client: httpx.Client, models_url: str, template: str) -> list[RawFile]:
        try:
            models = json.loads(self._get(client, models_url))["data"]
            slugs = [m.get("canonical_slug") or m["id"] for m in models]
        except (ValueError, KeyError, TypeError) as error:
            raise FetchError(f"model list unreadable: {error}") from error
        slugs = slugs[: self.max_models] if self.max_models is not None else slugs

        def one(slug: str) -> bytes | FetchError:
            # One model's failure must not cost every other model's data.
            try:
                return self._get(client, template.format(slug=slug))
            except FetchError as error:
                return error

        # About 400 models: in turn they took minutes; a few in flight at once (one shared,
        # thread-safe client) keeps within the host's manners. Results keep the list's order.
        with ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="endpoints") as pool:
            answers = list(pool.map(one, slugs))
        files, failures = [], []
        for slug, answer in zip(slugs, answers, strict=True):
            if isinstance(answer, FetchError):
                failures.append(f"{slug}\t{answer}")
            else:
                files.append(RawFile(f"{slug.replace('/', '__')}.json", answer))
        if slugs and not files:
            raise FetchError(f"every endpoint request failed; first: {failures[0]}")
        if failures:  # kept with the raw payload, so the run says which models it lacks
            files.append(RawFile(FETCH_FAILURES, ("\n".join(failures) + "\n").encode()))
        return files
