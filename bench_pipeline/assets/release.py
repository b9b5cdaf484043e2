"""The dataset release: an immutable folder per change of a published value. Its CSV and JSON
files are copied to the site's `data/` by the site asset, inside the site version it swaps in,
so the downloads page and the files it lists always change together."""

from pathlib import Path

import dagster as dg

from bench_pipeline.assets.indices import ARENA_KEY, INDEX_KEY, MARKET_KEY
from bench_pipeline.assets.metadata import timed
from bench_pipeline.assets.publishing import publishing
from bench_pipeline.assets.scores import SCORE_KEYS
from bench_pipeline.assets.versions import outside_metadata
from bench_pipeline.core import settings
from bench_pipeline.core.files import place_copy
from bench_pipeline.release.build import build_release, read_latest
from bench_pipeline.release.diff import load_manifest
from bench_pipeline.release.prices import record_price_history
from bench_pipeline.release.published import METHODOLOGY_VERSIONS
from bench_pipeline.release.verify import private_text_findings, private_texts, verify_latest
from bench_pipeline.resources.warehouse import WarehouseResource

RELEASE_KEY = dg.AssetKey(["release", "dataset"])


def publish_downloads(release_dir: Path, directory: Path) -> list[str]:
    """Place the release's CSV and JSON files (written by `write_download`) in the downloads
    folder, each under a partial name then renamed into place: hard links where possible,
    as the release's files never change (at 50× the data they are over 1 GB)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for table in load_manifest(release_dir)["tables"]:
        for fmt in ("csv", "json"):
            source = release_dir / table["files"][fmt]["path"]
            target = directory / source.name
            place_copy(source, target)
            written.append(target.name)
    return written


@dg.asset(
    key=RELEASE_KEY,
    deps=[INDEX_KEY, MARKET_KEY, ARENA_KEY, *SCORE_KEYS],
    group_name="publish",
    kinds={"duckdb", "parquet", "csv", "json"},
    owners=["team:platform"],
    description=(
        "A versioned dataset release: every published table as CSV, JSON and Parquet plus a "
        "read-only DuckDB file, a manifest with the sha256 of every file and the source runs "
        "cited, and a diff against the previous release, in the immutable folder "
        "`build/releases/<release_id>/`. A new release only when a published value or a "
        "methodology version changed; `build/releases/latest` names the newest. First appends "
        "the dated OpenRouter rates of new runs to `price_history`. The site asset publishes "
        "its CSV/JSON in `build/site/data/`."
    ),
)
@timed
def release_dataset(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    root = settings.releases_dir()
    with publishing(context), warehouse.connection() as conn:
        outside = outside_metadata(RELEASE_KEY, conn)
        appended = record_price_history(conn)
        outcome = build_release(conn, root, METHODOLOGY_VERSIONS)
    manifest = load_manifest(outcome.path)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(outcome.release_id),
        metadata=outside
        | {
            "release_id": outcome.release_id,
            "created": outcome.created,
            "path": dg.MetadataValue.path(str(outcome.path)),
            "previous_release_id": outcome.previous_release_id or "",
            "rows": dg.MetadataValue.json({t["name"]: t["rows"] for t in manifest["tables"]}),
            "price_history_rows_appended": appended,
        },
    )


@dg.asset_check(
    asset=RELEASE_KEY,
    description=(
        "`build/releases/latest` names an existing release whose manifest matches its files: "
        "sha256, size and rows recomputed, nothing missing and nothing unlisted."
    ),
)
def latest_release_matches_manifest() -> dg.AssetCheckResult:
    named, problems = verify_latest(settings.releases_dir())
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={"release_id": named or "", "problems": dg.MetadataValue.json(problems[:50])},
    )


@dg.asset_check(
    asset=RELEASE_KEY,
    description="No file of the latest release contains any private text (private case texts).",
)
def release_has_no_private_text(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    root = settings.releases_dir()
    latest = read_latest(root)
    if latest is None:
        return dg.AssetCheckResult(passed=False, metadata={"problem": "no latest release"})
    texts = private_texts()
    findings = private_text_findings(root / latest, texts)
    return dg.AssetCheckResult(
        passed=not findings,
        metadata={
            "release_id": latest,
            "private_texts_checked": len(texts),
            # where, never what: the finding must not publish the text itself
            "findings": dg.MetadataValue.json(findings[:50]),
            "files_checked": len(list((root / latest).rglob("*"))),
        },
    )


release_checks = [latest_release_matches_manifest, release_has_no_private_text]
