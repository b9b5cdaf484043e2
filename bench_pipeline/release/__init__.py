"""Versioned dataset releases: immutable folders under `build/releases/`, one per change of
a published value (see `build.py` for the layout and the release id)."""

from bench_pipeline.release.build import ReleaseOutcome, build_release
from bench_pipeline.release.diff import diff_releases
from bench_pipeline.release.published import METHODOLOGY_VERSIONS, PUBLISHED, PublishedTable

__all__ = [
    "METHODOLOGY_VERSIONS",
    "PUBLISHED",
    "PublishedTable",
    "ReleaseOutcome",
    "build_release",
    "diff_releases",
]
