"""Publishing the site atomically, as releases are: build a whole new folder, then swap it in.

`build/site` is a symbolic link to one complete folder under `build/site-versions/`. A build
writes the latest release's downloads and every page into a fresh hidden folder, renames it
to its final name, and replaces the link in one `rename` (atomic on POSIX): a reader, or a
process killed at any moment, sees either the previous site or the new one, whole, and the
downloads page's hashes always describe the `data/` files beside it. The previous version is
kept (a reader may still hold it open); older ones are removed. The fresh folder starts as
hard links to the live version's generated files, so a build rewrites only what changed.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from bench_pipeline.site.build import GENERATED_DIRS
from bench_pipeline.site.reuse import RECORD

Built = TypeVar("Built")

VERSIONS = "site-versions"
KEEP = 2
"""Site versions kept: the live one and the one before it."""


def versions_dir(site: Path) -> Path:
    return site.parent / VERSIONS


def publish_site(site: Path, build: Callable[[Path], Built]) -> tuple[Path, Built]:
    """Run `build(folder)` on a new folder and swap it in as `site`; returns the folder and
    what `build` returned. A failed build leaves `site` as it was."""
    root = versions_dir(site)
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f".building-{uuid.uuid4().hex}"
    try:
        if site.is_dir():
            seed_from(site.resolve(), partial)
        result = build(partial)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        final = root / f"{stamp}-{os.getpid()}"
        partial.rename(final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    _point(site, final)
    _prune(root, keep={final.name})
    return final, result


def seed_from(previous: Path, folder: Path) -> int:
    """Hard-link the generated files of the live site version into the new `folder`; returns
    how many. The build then rewrites only files whose bytes differ, each by renaming a new
    file over the link (`paging.write_if_changed`), so the live version is never changed and
    an unchanged page keeps its inode and mtime. Only what the site build owns is seeded
    (never `data/`: the release asset writes it in place)."""
    linked = 0
    owned = [*previous.glob("*.html")]
    owned += [p for name in GENERATED_DIRS for p in (previous / name).rglob("*")]
    for path in [*owned, previous / RECORD]:  # the record of the pages' inputs (reuse.py)
        if path.is_symlink() or not path.is_file():
            continue
        if path.name.startswith(".") and path.name != RECORD:
            continue
        relative = path.relative_to(previous)
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, target)
        linked += 1
    return linked


def _point(site: Path, target: Path) -> None:
    """Make `site` a link to `target` in one rename. A `site` that is still a plain folder
    (from before sites were swapped) is moved into the versions folder first."""
    if site.is_dir() and not site.is_symlink():
        site.rename(versions_dir(site) / f"legacy-{uuid.uuid4().hex[:8]}")
    link = site.with_name(f".{site.name}.{uuid.uuid4().hex}.link")
    link.symlink_to(os.path.relpath(target, site.parent), target_is_directory=True)
    os.replace(link, site)


def _prune(root: Path, keep: set[str]) -> None:
    """Remove all but the `KEEP` newest versions (and builds a killed process left)."""
    finished = sorted(
        (p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    kept = {p.name for p in finished[:KEEP]} | keep
    for path in root.iterdir():
        stale_build = path.name.startswith(".building-") and not _recent(path)
        if stale_build or (not path.name.startswith(".") and path.name not in kept):
            shutil.rmtree(path, ignore_errors=True)


def _recent(path: Path) -> bool:
    """A build folder touched in the last hour may belong to a build still going."""
    return datetime.now(UTC).timestamp() - path.stat().st_mtime < 3600
