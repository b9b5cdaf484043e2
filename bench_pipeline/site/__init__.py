"""The static site: every page rendered from the latest dataset release (see build.py)."""

from bench_pipeline.site.build import SiteResult, build_site, latest_release

__all__ = ["SiteResult", "build_site", "latest_release"]
