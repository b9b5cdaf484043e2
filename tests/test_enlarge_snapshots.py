"""The scale benchmark's snapshot enlarger: k copies in each source's own format, which the
production parsers read as k times the records under distinct names, deterministically."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_pipeline.core import settings
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.sources import PARSERS
from bench_pipeline.ingest.tables import TABLES
from bench_pipeline.ingest.validation import validate_records
from bench_pipeline.resources.sources import RecordedSnapshotClient
from benchmarks.enlarge_snapshots import enlarge, renamed

pytestmark = pytest.mark.unit

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
COPIES = 3
KEYS = {
    "openrouter_models": "model_id",
    "openrouter_endpoints": "model_id",
    "models_dev_models": "model_id",
    "arena_ratings": "model_key",
    "arena_models": "model_key",
    "evaluation_rows": "row_key",
    "epoch_models": "model_version",
    "swebench_entries": "folder",
}


def _parsed(root: Path) -> dict:
    client = RecordedSnapshotClient(snapshots_dir=str(root))
    return {
        source: PARSERS[source](client.fetch(definition))
        for source, definition in source_definitions().items()
    }


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> tuple[dict, dict]:
    target = tmp_path_factory.mktemp("enlarged")
    enlarge(SNAPSHOTS, target, COPIES)
    return _parsed(SNAPSHOTS), _parsed(target)


def test_every_table_has_k_times_the_records_with_distinct_keys(both) -> None:
    recorded, enlarged = both
    for source, tables in recorded.items():
        for table, frame in tables.items():
            large = enlarged[source][table]
            assert large.height == COPIES * frame.height, (source, table)
            if table in KEYS:
                column = KEYS[table]
                assert (
                    large.get_column(column).n_unique()
                    == COPIES * frame.get_column(column).n_unique()
                ), (source, table)


def test_enlarged_records_validate_like_the_recorded_ones(both) -> None:
    recorded, enlarged = both
    for source, tables in recorded.items():
        for table, frame in tables.items():
            small = validate_records(TABLES[table], frame)
            large = validate_records(TABLES[table], enlarged[source][table])
            assert large.valid.height == COPIES * small.valid.height, (source, table)


def test_same_seed_same_bytes(tmp_path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    enlarge(SNAPSHOTS / "arena", first, 2)
    enlarge(SNAPSHOTS / "arena", second, 2)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_names_stay_plausible_and_distinct() -> None:
    assert renamed("gpt-4o", 0) == "gpt-4o"
    assert renamed("gpt-4o", 3) != renamed("gpt-4o", 12) != "gpt-4o"
    assert renamed("Claude Opus 4.7 (xhigh)", 2).endswith(" (xhigh)")
    assert " " not in renamed("claude-opus-4-7_xhigh", 5)


def test_scale_slope_is_the_least_squares_line_through_the_runs() -> None:
    from benchmarks.pipeline_scale import least_squares_slope

    assert least_squares_slope([1, 10], [51.6, 102.4]) == pytest.approx(50.8 / 9)
    # A cost that grows faster than the data pulls the fitted slope above the first span's.
    assert least_squares_slope([1, 10, 50], [11, 20, 160]) > (20 - 11) / 9
    assert least_squares_slope([1, 10, 50], [3, 30, 150]) == pytest.approx(3.0)


def test_scale_keeps_the_fastest_run_of_each_multiplier_in_order() -> None:
    from benchmarks.pipeline_scale import Run, fastest

    runs = [
        Run(k, seconds, 0.0, 0.0, {}) for k, seconds in [(1, 60), (50, 120), (1, 55), (50, 130)]
    ]
    assert [(r.multiplier, r.seconds) for r in fastest(runs)] == [(1, 55), (50, 120)]


def test_scale_report_shows_the_run_s_own_cpu_and_faults_per_1x(capsys) -> None:
    from benchmarks.pipeline_scale import Run, Usage, report

    runs = [
        Run(1, 50.0, 550.0, 10.0, {"a": 1.0}, Usage(20.0, 4.0, 500_000)),
        Run(50, 99.0, 2450.0, 500.0, {"a": 50.0}, Usage(69.0, 22.0, 3_930_000)),
    ]
    assert not report(runs)  # 49 s more over 49× more data: 1.0 s per 1× is not under 1
    shown = capsys.readouterr().out
    assert "user 1.00 s, kernel 0.37 s, 70,000 more minor faults" in shown
    assert "3,930,000" in shown
