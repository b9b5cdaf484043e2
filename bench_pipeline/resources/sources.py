"""Source clients: the recorded-snapshot client (the default, offline) and the live HTTP client.

Both return the payload as named raw files, exactly as the source serves them, so everything
downstream (hashing, parsing, validation) is the same code whichever client fetched it.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

import dagster as dg
import httpx
from pydantic import Field

from bench_pipeline.core import settings
from bench_pipeline.core.http import FetchError, PayloadTooLarge, get_with_retries, read_bounded
from bench_pipeline.ingest.catalog import SourceDefinition
from bench_pipeline.ingest.payload import RawFile

FETCH_FAILURES = "fetch_failures.txt"
CHUNK = 1024 * 1024


class Budget:
    """The bytes a payload may still take (the source's `limits.max_bytes`), shared by the
    files of one fetch (and the threads fetching them)."""

    def __init__(self, definition: SourceDefinition) -> None:
        self.limit = definition.caps.max_bytes
        self.where = f"limits.max_bytes of sources/definitions/{definition.name}.toml"
        self.used = 0
        self._lock = threading.Lock()

    @property
    def left(self) -> int:
        return max(self.limit - self.used, 0)

    def refused(self, what: str) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"{what}: the payload passes its cap of {self.limit:,} bytes ({self.where}); "
            "reading stopped there"
        )

    def read(self, stream: IO[bytes], what: str) -> bytes:
        """The stream's bytes, read a chunk at a time while the payload stays in its cap."""
        try:
            content = read_bounded(_chunks(stream), self.left, what)
        except PayloadTooLarge as error:
            raise self.refused(what) from error
        return self.spend(content, what)

    def spend(self, content: bytes, what: str) -> bytes:
        with self._lock:
            self.used += len(content)
            over = self.used > self.limit
        if over:
            raise self.refused(what)
        return content


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK):
        yield chunk


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
        budget = Budget(definition)
        files = []
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                name = path.relative_to(folder).as_posix()
                with path.open("rb") as stream:
                    files.append(RawFile(name=name, content=budget.read(stream, str(path))))
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

    def _get(self, client: httpx.Client, url: str, budget: Budget) -> bytes:
        """The body of `url`, streamed within what the payload's cap leaves."""
        try:
            response = get_with_retries(
                client,
                self._url(url),
                max_retries=self.max_retries,
                backoff_base=self.backoff_base_seconds,
                max_bytes=budget.left,
            )
        except PayloadTooLarge as error:
            raise budget.refused(error.what) from error
        return budget.spend(response.content, f"GET {url}")

    def fetch(self, definition: SourceDefinition) -> list[RawFile]:
        live = definition.live
        headers = {"User-Agent": "bench-pipeline (+https://github.com/)"}
        budget = Budget(definition)
        with httpx.Client(
            timeout=self.timeout_seconds, headers=headers, follow_redirects=True
        ) as client:
            if live.kind == "files":
                return [
                    RawFile(name, self._get(client, url, budget)) for name, url in live.urls.items()
                ]
            if live.kind == "zip":
                archive = self._get(client, live.zip_url or "", budget)
                return self._zip_members(archive, live.zip_members, Budget(definition))
            return self._endpoints(
                client, live.models_url or "", live.endpoints_url or "", definition, budget
            )

    @staticmethod
    def _zip_members(content: bytes, members: list[str], budget: Budget) -> list[RawFile]:
        """The named members, each unpacked through `budget` (the sizes an archive declares
        are not trusted: a member is read until the cap, whatever it claims)."""
        try:
            archive = zipfile.ZipFile(io.BytesIO(content))
        except zipfile.BadZipFile as error:
            raise FetchError(f"download is not a zip archive: {error}") from error
        by_name = {Path(info.filename).name: info for info in archive.infolist()}
        files = []
        for name in members:
            if name in by_name:
                try:
                    with archive.open(by_name[name]) as stream:
                        files.append(RawFile(name, budget.read(stream, f"zip member {name}")))
                except (zipfile.BadZipFile, EOFError, ValueError, OSError) as error:
                    raise FetchError(f"zip member {name} unreadable: {error}") from error
        return files

    def _endpoints(
        self,
        client: httpx.Client,
        models_url: str,
        template: str,
        definition: SourceDefinition,
        budget: Budget,
    ) -> list[RawFile]:
        try:
            models = json.loads(self._get(client, models_url, budget))["data"]
            slugs = [m.get("canonical_slug") or m["id"] for m in models]
        except (ValueError, KeyError, TypeError) as error:
            raise FetchError(f"model list unreadable: {error}") from error
        slugs = slugs[: self.max_models] if self.max_models is not None else slugs
        cap = definition.caps.models
        if len(slugs) > cap:  # before any request: each model is one request
            raise FetchError(
                f"the model list names {len(slugs):,} models, past the cap of {cap:,} "
                f"(limits.max_models of sources/definitions/{definition.name}.toml); no "
                "endpoint was requested"
            )

        def one(slug: str) -> bytes | FetchError:
            # One model's failure must not cost every other model's data; the cap ends all.
            try:
                return self._get(client, template.format(slug=slug), budget)
            except PayloadTooLarge:
                raise
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
