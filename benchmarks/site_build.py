"""Build the static site from a synthetic release of N models (default 2,000).

Prints the build's wall time against its goal (< 10 s) and as a ratio against a baseline
measured in the same run, the pages written and the page weight of the Known Good Index
leaderboard (the largest page a reader is likely to open).

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
from tests.synthetic import copy_downloads, write_synthetic_release

GOAL_SECONDS = 10.0


def main(argv: Sequence[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks --only site", description=summary)
    parser.add_argument("--models", type=int, default=2_000, help="synthetic models")
    parser.add_argument("--repeat", type=int, default=1, help="builds; the best is shown")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
        root = Path(tmp)
        release = write_synthetic_release(root / "releases", args.models)
        site = root / "site"
        copy_downloads(release, site)
        times, pages = [], 0
        for _ in range(args.repeat):
            started = time.perf_counter()
            pages = len(build_site(release, site, root / "releases").pages)
            times.append(time.perf_counter() - started)
        best = min(times)
        leaderboard = (site / "known-good-index.html").stat().st_size
        html = {p.relative_to(site): p.read_bytes() for p in site.rglob("*.html")}
        total = sum(len(content) for content in html.values())
        model_pages = sum(1 for name in html if name.parts[0] == "models")
        floor = min(_write_all(html, root / f"floor-{n}") for n in range(args.repeat))
    print(f"site build, {args.models:,} synthetic models")
    print(f"  seconds           {best:.2f} (goal < {GOAL_SECONDS:.0f})")
    print(f"  baseline          {floor:.3f} s writing the same {len(html):,} HTML files")
    print(f"  build / baseline  {best / floor:,.1f}×")
    print(f"  pages             {pages:,} ({total / 1e6:.1f} MB of HTML)")
    print(f"  model pages       {model_pages:,} of {args.models:,} models")
    print(f"  KGI page weight   {leaderboard:,} bytes")
    return 0 if best < GOAL_SECONDS and model_pages >= args.models else 1


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
