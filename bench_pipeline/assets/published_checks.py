"""Checks on every published asset: the five score boards, the market data, the Arena ratings
and the site (the rules are plain functions in `bench_pipeline.release.output_checks`).

The board, market and Arena checks are blocking: they run right after their asset, and a
failed one stops the release (and so the site) from publishing a wrong number. The site's
link check runs on the site just swapped in and tells the operator which link is broken.
"""

from collections.abc import Callable

import dagster as dg
import duckdb

from bench_pipeline.assets.indices import ARENA_KEY, MARKET_KEY
from bench_pipeline.assets.item_boards import ITEM_BOARDS_KEY
from bench_pipeline.assets.pm_checks import PM_CHECKS_KEY, PM_SUITE_KEY
from bench_pipeline.assets.site import SITE_KEY
from bench_pipeline.core import settings
from bench_pipeline.release import output_checks
from bench_pipeline.resources.warehouse import WarehouseResource

USECASE_KEY = dg.AssetKey(["scores", "usecase_rank"])
NAVIGATOR_KEY = dg.AssetKey(["scores", "navigator_index"])

CHECK_BOARD = "board_consistent"
CHECK_RANGES = "values_in_range"
CHECK_ARENA = "ratings_consistent"
CHECK_SITE_LINKS = "links_resolve"

Problems = Callable[[duckdb.DuckDBPyConnection], list[str]]


def result(problems: list[str]) -> dg.AssetCheckResult:
    """Passed when there is no problem; else the first as the description and the first
    `output_checks.SHOWN` in the metadata."""
    return dg.AssetCheckResult(
        passed=not problems,
        description=(
            f"{len(problems)} problem{'s' if len(problems) > 1 else ''}; first: {problems[0]}"
            if problems
            else None
        ),
        metadata={
            "problems": len(problems),
            "first_problems": dg.MetadataValue.json(problems[: output_checks.SHOWN]),
        },
    )


def _warehouse_check(key: dg.AssetKey, name: str, problems: Problems, rule: str):
    @dg.asset_check(asset=key, name=name, blocking=True, description=rule)
    def _check(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        with warehouse.connection() as conn:
            return result(problems(conn))

    return _check


BOARD_RULE = (
    "Ranks follow scores by the one rank rule (competition ranking; a rank range contains "
    "the score's rank), intervals contain their estimates, counts match the runs."
)
published_checks = [
    _warehouse_check(PM_SUITE_KEY, CHECK_BOARD, output_checks.pm_suite_problems,
                     f"{BOARD_RULE} PM setups: `rank`, `overall` and `margin95` 0..100, `runs`."),
    _warehouse_check(USECASE_KEY, CHECK_BOARD, output_checks.usecase_problems,
                     f"{BOARD_RULE} UseCaseRank groups: `rank`, `ci_low`..`ci_high`, `runs`."),
    _warehouse_check(NAVIGATOR_KEY, CHECK_BOARD, output_checks.navigator_problems,
                     f"{BOARD_RULE} Navigator models: `rank_best`..`rank_worst`, `index`."),
    _warehouse_check(ITEM_BOARDS_KEY, CHECK_BOARD, output_checks.item_board_problems,
                     f"{BOARD_RULE} Item boards: rank range, `ci_low`..`ci_high`, `resolved`."),
    _warehouse_check(PM_CHECKS_KEY, CHECK_RANGES, output_checks.pm_check_problems,
                     "p-values and shares of the PM suite checks lie in 0..1."),
    _warehouse_check(MARKET_KEY, CHECK_RANGES, output_checks.market_problems,
                     "Prices, speeds, latencies, openness and host counts lie in their ranges."),
    _warehouse_check(ARENA_KEY, CHECK_ARENA, output_checks.arena_problems,
                     "Each rating inside its interval, each rank inside its rank range, "
                     "ratings and votes in range."),
]  # fmt: skip


@dg.asset_check(
    asset=SITE_KEY,
    name=CHECK_SITE_LINKS,
    description="Every relative link and download of every page names a file of the site.",
)
def site_links_resolve() -> dg.AssetCheckResult:
    return result(output_checks.site_link_problems(settings.downloads_dir().parent))


published_checks.append(site_links_resolve)
