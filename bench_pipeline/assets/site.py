"""The static site, rendered from the latest dataset release and swapped into `build/site/`."""

import dagster as dg

from bench_pipeline.assets.metadata import timed
from bench_pipeline.assets.publishing import publishing
from bench_pipeline.assets.release import publish_downloads
from bench_pipeline.core import settings
from bench_pipeline.site import build_site, latest_release
from bench_pipeline.site.swap import publish_site

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
        "nothing else, with that release's CSV/JSON in `data/`. Built whole into a new folder "
        "and swapped in atomically, so a failed or killed build leaves the previous site whole. "
        "`bench serve` shows it."
    ),
)
@timed
def static_site(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    site = settings.downloads_dir().parent
    with publishing(context):  # the release it shows is read under the same ownership
        release = latest_release(settings.releases_dir())

        def build(folder):
            publish_downloads(release, folder / settings.downloads_dir().name)
            return build_site(release, folder, settings.releases_dir())

        folder, result = publish_site(site, build)
    return dg.MaterializeResult(
        metadata={
            "release_id": result.release_id,
            "pages": len(result.pages),
            "path": dg.MetadataValue.path(str(site / "index.html")),
            "version": folder.name,
        }
    )
