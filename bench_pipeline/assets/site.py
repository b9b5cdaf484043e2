"""The static site, rendered from the latest dataset release into `build/site/`."""

import dagster as dg

from bench_pipeline.assets.metadata import timed
from bench_pipeline.core import settings
from bench_pipeline.site import build_site, latest_release

SITE_KEY = dg.AssetKey(["site", "static_site"])
RELEASE_KEY = dg.AssetKey(["release", "dataset"])


@dg.asset(
    key=SITE_KEY,
    deps=[RELEASE_KEY],
    group_name="publish",
    kinds={"html"},
    owners=["team:platform"],
    description=(
        "The public static site in `$BENCH_HOME/build/site/` (relative links; JavaScript "
        "only for the UseCaseRank weight controls): "
        "leaderboards, market data, Arena ratings, a page per model, methodology, downloads and "
        "what changed, all rendered from the release `build/releases/latest` names and from "
        "nothing else. `build/site/data/` is left to the release asset. `bench serve` shows it."
    ),
)
@timed
def static_site() -> dg.MaterializeResult:
    releases = settings.releases_dir()
    out = settings.downloads_dir().parent
    result = build_site(latest_release(releases), out, releases)
    return dg.MaterializeResult(
        metadata={
            "release_id": result.release_id,
            "pages": len(result.pages),
            "path": dg.MetadataValue.path(str(out / "index.html")),
        }
    )
