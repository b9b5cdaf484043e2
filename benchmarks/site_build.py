"""Build the static site from a synthetic release of N models (default 2,000).

Prints the build's wall time against its goal, the pages written and the page weight of the
Known Good Index leaderboard (the largest page a reader is likely to open). The synthetic
release is written before timing starts; the best of `--repeat` builds is shown.
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
        total = sum(p.stat().st_size for p in site.rglob("*.html"))
    print(f"site build, {args.models:,} synthetic models")
    print(f"  seconds           {best:.2f} (goal < {GOAL_SECONDS:.0f})")
    print(f"  pages             {pages:,} ({total / 1e6:.1f} MB of HTML)")
    print(f"  KGI page weight   {leaderboard:,} bytes")
    return 0 if best < GOAL_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
