"""Model pages whose inputs did not change are kept from the previous build, not re-rendered.

A model page is a pure function of its inputs: the site's code and templates, the release-wide
values its template or its shaping may read (`shared_key`: the keyed globals, the tables'
titles, the source runs and sources, the schema), and the model's own rows. `page_key`
hashes the shared key with the model's rows; `PageRecord` (the hidden `.page-inputs.json` in
the site folder, seeded into each new site version with the pages, see `swap.seed_from`)
remembers each page's key with its file's size and mtime, and the digest of every input of
every model page together (`inputs_digest`: the shared key and the SHA-256 of each table's
JSON file). A page is reused only when its key is the recorded one, or every input is the
recorded one (then no page's key is computed again), and the file on disk is the recorded
file (same size and mtime), so an edited, truncated or missing page is rendered again. The
model pages render in an environment holding only the keyed release-wide values: a template
reading anything else fails the build (StrictUndefined) instead of leaving a stale page.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from bench_pipeline.site.paging import write_if_changed

RECORD = ".page-inputs.json"
SITE_CODE = Path(__file__).parent
"""This package's modules: a change to any of them renders every model page again."""
MODEL_GLOBALS = (
    "kgi_components",
    "capabilities",
    "evaluations",
    "MISSING",
    "RELEASE_PAGES",
    "data_dates",
)
"""The release-wide values a model page may read (the rest of the globals are not there)."""
_MARSHAL_VERSION = 2
"""The newest `marshal` format whose bytes are a function of the values alone: from version
3 on, an object met twice is written as a reference and an interned string is marked, which
depend on which objects happen to be shared in memory, not on what they hold."""


def code_digest(templates: Path) -> str:
    """The SHA-256 of every template under `templates`, of this package's modules (with
    their names), of the versions of jinja2 and MarkupSafe and of the interpreter (whose
    `marshal` bytes `page_key` hashes): the code that renders and keys a page."""
    digest = hashlib.sha256(f"python {sys.version}\0".encode())
    for package in ("jinja2", "markupsafe"):
        digest.update(f"{package} {metadata.version(package)}\0".encode())
    files = [*sorted(templates.rglob("*")), *sorted(SITE_CODE.glob("*.py"))]
    for path in files:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def page_key(shared: str, inputs: Any) -> str:
    """The key of one page: `shared` (code and release-wide values) and its own inputs (a
    dataclass by its fields). The inputs are hashed as their `marshal` bytes, which tell
    apart every value and type a release's rows hold (`1`, `1.0` and `True`; `-0.0` and
    `0.0`) at a third of the cost of JSON (at 50 times today's data, JSON was a seventh of
    a model page's cost); inputs `marshal` cannot write are hashed as JSON instead."""
    fields = vars(inputs) if hasattr(inputs, "__dataclass_fields__") else inputs
    try:
        content = b"marshal\0" + marshal.dumps(fields, _MARSHAL_VERSION)
    except ValueError:  # a type marshal does not write, or nesting too deep for it
        text = json.dumps(inputs, default=_plain, ensure_ascii=False, separators=(",", ":"))
        content = b"json\0" + text.encode()
    return hashlib.sha256(f"{shared}\0".encode() + content).hexdigest()


def inputs_digest(shared: str, digests: Mapping[str, str]) -> str:
    """The digest of every model page's inputs at once: `shared` and the SHA-256 of every
    table file the model pages are shaped from (`digests`, by table)."""
    text = json.dumps(sorted(digests.items()))
    return hashlib.sha256(f"{shared}\0{text}".encode()).hexdigest()


def shared_key(code: str, values: dict[str, Any]) -> str:
    """`code` (see `code_digest`) with the release-wide values every model page reads."""
    text = json.dumps(values, default=_plain, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(f"{code}\0{text}".encode()).hexdigest()


def _plain(value: Any) -> Any:
    """Dataclasses by their fields, sets in order, anything else by its text and type."""
    if hasattr(value, "__dataclass_fields__"):
        return value.__dict__
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return [type(value).__name__, str(value)]


class PageRecord:
    """The keys of the pages of the previous build in a site folder, and whether every model
    page's inputs (`inputs`, see `inputs_digest`) are that build's."""

    def __init__(self, site: Path, inputs: str) -> None:
        self.site, self.inputs = site, inputs
        self.previous: dict[str, list[Any]] = {}
        try:
            loaded = json.loads((site / RECORD).read_text("utf-8"))
        except (OSError, ValueError):  # no record, or a damaged one: render everything
            loaded = {}
        pages = loaded.get("pages") if isinstance(loaded, dict) else None
        if isinstance(pages, dict):
            self.previous = {k: v for k, v in pages.items() if _well_formed(v)}
        self.unchanged = bool(self.previous) and loaded.get("inputs") == inputs

    def reusable(self, page: str, key: str) -> list[int] | None:
        """The size and mtime of `page` (relative to the site) when it was built from `key`
        and its file is the one that build wrote; else None."""
        held = self.previous.get(page)
        if held is None or held[0] != key:
            return None
        return self._on_disk(page, held)

    def kept(self, page: str) -> list[Any] | None:
        """`page`'s recorded key, size and mtime when every input is the previous build's
        and its file is the one that build wrote (its key needs no computing); else None."""
        held = self.previous.get(page) if self.unchanged else None
        if held is None or self._on_disk(page, held) is None:
            return None
        return held

    def _on_disk(self, page: str, held: list[Any]) -> list[int] | None:
        try:
            status = os.stat(self.site / page)
        except OSError:
            return None
        on_disk = [status.st_size, status.st_mtime_ns]
        return on_disk if on_disk == held[1:] else None

    def save(self, pages: Mapping[str, Sequence[Any]]) -> Path:
        """Write the record of this build's pages (`pages`: each page's key, then its file's
        size and mtime as the build left it) and inputs; returns its path."""
        record = {page: [str(key), int(size), int(mtime)] for page, (key, size, mtime) in
                  pages.items()}  # fmt: skip
        target = self.site / RECORD
        text = json.dumps({"inputs": self.inputs, "pages": record}, sort_keys=True)
        write_if_changed(target, text.encode("utf-8"))
        return target


def _well_formed(entry: Any) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 3
        and isinstance(entry[0], str)
        and all(type(n) is int for n in entry[1:])
    )
