"""Model pages whose inputs did not change are kept from the previous build, not re-rendered.

A model page is a pure function of its inputs: the site's code and templates, the few
release-wide values its template may read (`PageInputs.shared`), and the model's own shaped
context. `page_key` hashes all of them; `PageRecord` (the hidden `.page-inputs.json` in the
site folder, seeded into each new site version with the pages, see `swap.seed_from`)
remembers each page's key with its file's size and mtime. A page is reused only when its key
is the recorded one and the file on disk is the recorded file (same size and mtime), so an
edited, truncated or missing page is rendered again. The model pages render in an environment
holding only the keyed release-wide values: a template reading anything else fails the build
(StrictUndefined) instead of leaving a stale page.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from bench_pipeline.site.paging import write_if_changed

RECORD = ".page-inputs.json"
SITE_CODE = Path(__file__).parent
"""This package's modules: a change to any of them renders every model page again."""
MODEL_GLOBALS = ("kgi_components", "capabilities", "evaluations", "MISSING", "RELEASE_PAGES")
"""The release-wide values a model page may read (the rest of the globals are not there)."""


def code_digest(templates: Path) -> str:
    """The SHA-256 of every template under `templates`, of this package's modules (with
    their names) and of the versions of jinja2 and MarkupSafe: the code that renders a page."""
    digest = hashlib.sha256()
    for package in ("jinja2", "markupsafe"):
        digest.update(f"{package} {metadata.version(package)}\0".encode())
    files = [*sorted(templates.rglob("*")), *sorted(SITE_CODE.glob("*.py"))]
    for path in files:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def page_key(shared: str, context: dict[str, Any]) -> str:
    """The key of one page: `shared` (code and release-wide values) and its own context."""
    text = json.dumps(context, default=_plain, ensure_ascii=False, separators=(",", ":"))
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
    """The keys of the pages of the previous build in a site folder."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.previous: dict[str, list[Any]] = {}
        try:
            loaded = json.loads((site / RECORD).read_text("utf-8"))
        except (OSError, ValueError):  # no record, or a damaged one: render everything
            loaded = {}
        if isinstance(loaded, dict):
            self.previous = {k: v for k, v in loaded.items() if _well_formed(v)}

    def reusable(self, page: str, key: str) -> list[int] | None:
        """The size and mtime of `page` (relative to the site) when it was built from `key`
        and its file is the one that build wrote; else None."""
        held = self.previous.get(page)
        if held is None or held[0] != key:
            return None
        try:
            status = os.stat(self.site / page)
        except OSError:
            return None
        on_disk = [status.st_size, status.st_mtime_ns]
        return on_disk if on_disk == held[1:] else None

    def save(self, pages: Mapping[str, Sequence[Any]]) -> Path:
        """Write the record of this build's pages (`pages`: each page's key, then its file's
        size and mtime as the build left it); returns its path."""
        record = {page: [str(key), int(size), int(mtime)] for page, (key, size, mtime) in
                  pages.items()}  # fmt: skip
        target = self.site / RECORD
        write_if_changed(target, json.dumps(record, sort_keys=True).encode("utf-8"))
        return target


def _well_formed(entry: Any) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 3
        and isinstance(entry[0], str)
        and all(type(n) is int for n in entry[1:])
    )
