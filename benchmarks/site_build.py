"""Build the static site from synthetic releases of 2,000 and 20,000 models, and weigh it at
100,000.

For each size it prints the build's wall time (goal at 20,000 models: < 10 s) and as a ratio
against a baseline measured in the same run, the pages written, the heaviest page, and an
incremental rebuild of the same release into the same folder (the pages it rewrote: none
should be, as no byte changed), and one of a release in which one source (the Arena) changed
the rows of `CHANGED` models (the model pages it rewrote: those models' only). At the
weighing size it prints the heaviest pages (goal: none over about 1 MB).

* baseline: writing the same HTML bytes the build wrote, page by page, into a fresh folder
  (the file-system floor under any site build of that size);
* build: `build_site` from the release, templates and shaping included.

The synthetic release is written before timing starts; the best of `--repeat` builds is
shown. The build must also write a page for every model (exit 1 otherwise): the check the
timed test in tests/test_site.py made, before its timing moved here.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench_pipeline.site import build_site
from tests.synthetic import (
    RELEASE_ID,
    copy_downloads,
    synthetic_boards,
    synthetic_tables,
    write_release,
    write_synthetic_release,
)

GOAL_SECONDS = 10.0
GOAL_MODELS = 20_000
"""The size the time goal applies to."""
GOAL_PAGE_BYTES = 1_100_000
"""About 1 MB: no page heavier, at the weighing size."""
CHANGED = 20
"""Models whose Arena rows the one-source release changes."""


def main(argv: Sequence[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks --only site", description=summary)
    parser.add_argument("--models", type=int, nargs="+", default=[2_000, GOAL_MODELS],
                        help="synthetic models per timed build")  # fmt: skip
    parser.add_argument("--weigh", type=int, default=100_000,
                        help="models of the build whose pages are weighed (0: none)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="builds; the best is shown")
    args = parser.parse_args(argv)
    ok = True
    for models in args.models:
        ok &= _timed(models, args.repeat)
    if args.weigh:
        ok &= _weighed(args.weigh)
    return 0 if ok else 1


def _release(root: Path, models: int) -> tuple[Path, Path]:
    release = write_synthetic_release(root / "releases", models)
    site = root / "site"
    copy_downloads(release, site)
    return release, site


def _timed(models: int, repeat: int) -> bool:
    """Time the build of `models` models; True when it met its goal."""
    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
        root = Path(tmp)
        release, _ = _release(root, models)
        times, cpu, pages = [], [], 0
        for n in range(repeat):
            site = root / f"site-{n}"
            copy_downloads(release, site)
            started, started_cpu = time.perf_counter(), time.process_time()
            pages = len(build_site(release, site, root / "releases").pages)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        best = min(times)
        html = {p.relative_to(site): p.read_bytes() for p in site.rglob("*.html")}
        stamps = {p: p.stat().st_mtime_ns for p in site.rglob("*.html")}
        started = time.perf_counter()
        build_site(release, site, root / "releases")
        again = time.perf_counter() - started
        rewritten = sum(1 for p, stamp in stamps.items() if p.stat().st_mtime_ns != stamp)
        one_source, changed_pages, touched = _one_source_changed(root, site, models)
        total = sum(len(content) for content in html.values())
        heaviest = max(html, key=lambda name: len(html[name]))
        model_pages = sum(1 for name in html if name.parts[0] == "models")
        floor = min(_write_all(html, root / f"floor-{n}") for n in range(repeat))
    goal = f"goal < {GOAL_SECONDS:.0f}" if models >= GOAL_MODELS else "no goal at this size"
    met = best < GOAL_SECONDS or models < GOAL_MODELS
    print(f"site build, {models:,} synthetic models")
    print(f"  seconds           {best:.2f} ({goal}){'' if met else '  MISSED'}")
    print(f"  CPU seconds       {min(cpu):.2f} (this process; the wall time includes waiting on a"
          " shared machine)")  # fmt: skip
    print(f"  baseline          {floor:.3f} s writing the same {len(html):,} HTML files")
    print(f"  build / baseline  {best / floor:,.1f}×")
    print(f"  pages             {pages:,} ({total / 1e6:.1f} MB of HTML)")
    print(f"  model pages       {model_pages:,} of {models:,} models")
    print(f"  heaviest page     {heaviest} {len(html[heaviest]):,} bytes")
    print(f"  same release again {again:.2f} s, {rewritten:,} pages rewritten")
    print(f"  one source changed {one_source:.2f} s, {changed_pages:,} model pages rewritten "
          f"({touched:,} models' Arena rows changed)")  # fmt: skip
    return met and model_pages >= models and changed_pages == touched


def _one_source_changed(root: Path, site: Path, models: int) -> tuple[float, int, int]:
    """Rebuild `site` from a release whose Arena rows changed for `CHANGED` models: the
    seconds, the model pages rewritten and the models changed."""
    tables = synthetic_tables(max(6, models)) | synthetic_boards()
    touched = sorted({r["model_id"] for r in tables["arena_elo"]})[:CHANGED]
    for row in tables["arena_elo"]:
        if row["model_id"] in touched:
            row["votes"] = 987_654
    release = write_release(root / "releases", "2025-06-03T060000Z", tables,
                            created_at="2025-06-03T06:00:00Z", previous=RELEASE_ID)  # fmt: skip
    copy_downloads(release, site)
    pages = {p: p.stat().st_mtime_ns for p in (site / "models").glob("*.html")}
    started = time.perf_counter()
    build_site(release, site, root / "releases")
    seconds = time.perf_counter() - started
    rewritten = sum(1 for p, stamp in pages.items() if p.stat().st_mtime_ns != stamp)
    return seconds, rewritten, len(touched)


def _weighed(models: int) -> bool:
    """Build `models` models once and print the heaviest pages; True when none is over
    GOAL_PAGE_BYTES."""
    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
        root = Path(tmp)
        release, site = _release(root, models)
        started = time.perf_counter()
        build_site(release, site, root / "releases")
        seconds = time.perf_counter() - started
        sizes = sorted(
            ((p.stat().st_size, p.relative_to(site).as_posix()) for p in site.rglob("*.html")),
            reverse=True,
        )
    print(f"site weight, {models:,} synthetic models (built in {seconds:.1f} s, no time goal)")
    for size, name in sizes[:5]:
        print(f"  {name:<30}{size:>12,} bytes")
    met = sizes[0][0] <= GOAL_PAGE_BYTES
    print(f"  heaviest page     {sizes[0][0]:,} bytes (goal ≤ {GOAL_PAGE_BYTES:,})"
          f"{'' if met else '  MISSED'}")  # fmt: skip
    return met


def _write_all(html: dict[Path, bytes], folder: Path) -> float:
    """Seconds to write every page's bytes under `folder` (the baseline)."""
    started = time.perf_counter()
    for name, content in html.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return time.perf_counter() - started


if __name__ == "__main__":
    raise SystemExit(main())
