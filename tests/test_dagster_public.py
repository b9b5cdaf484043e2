"""What replaced private Dagster imports still agrees with Dagster's own internals."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARENT_RUN_ID_TAG,
    ROOT_RUN_ID_TAG,
)
from dagster._utils.schedules import cron_string_iterator

from bench_pipeline.assets.sources import cadence_interval
from bench_pipeline.cli import run_group
from bench_pipeline.cli.main import PARTITION_RANGE_END_TAG, PARTITION_RANGE_START_TAG

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "cron", ["0 5 * * *", "0 */6 * * *", "30 5 * * 1", "0 3 1 * *", "0 6 * * 1,4", "15 * * * *"]
)
def test_cadence_interval_matches_dagsters_cron_iterator(cron: str) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
    ticks = list(itertools.islice(cron_string_iterator(start, cron, "UTC"), 400))
    assert cadence_interval(cron) == max(b - a for a, b in itertools.pairwise(ticks))


def test_partition_range_tags_are_the_ones_dagster_reads() -> None:
    assert PARTITION_RANGE_START_TAG == ASSET_PARTITION_RANGE_START_TAG
    assert PARTITION_RANGE_END_TAG == ASSET_PARTITION_RANGE_END_TAG


def test_run_group_tags_are_the_ones_dagster_reads() -> None:
    assert run_group.ROOT_RUN_ID_TAG == ROOT_RUN_ID_TAG
    assert run_group.PARENT_RUN_ID_TAG == PARENT_RUN_ID_TAG
