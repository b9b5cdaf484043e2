"""The asset graph against its committed snapshot: every asset key and group, every check
(blocking or not), job, schedule and sensor, one line each. A renamed asset or a lost check
shows as a one-line diff; when the change is meant, rewrite the snapshot with
`python -m pytest tests/test_asset_graph.py --update-snapshots` and commit it."""

from __future__ import annotations

import difflib
from pathlib import Path

import dagster as dg
import pytest

from bench_pipeline.assets.sources import source_group
from bench_pipeline.definitions import defs
from bench_pipeline.ingest.catalog import source_definitions

pytestmark = pytest.mark.unit

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_graph.txt"
HEADER = "# The asset graph of bench_pipeline.definitions (tests/test_asset_graph.py).\n"


def graph_lines(definitions: dg.Definitions) -> list[str]:
    """One sorted line per asset, check, job, schedule and sensor of `definitions`."""
    graph = definitions.resolve_asset_graph()
    lines = []
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        partitioned = " partitioned" if node.partitions_def is not None else ""
        lines.append(f"asset {key.to_user_string()} group={node.group_name}{partitioned}")
    for check_key in graph.asset_check_keys:
        check = graph.get_check_spec(check_key)
        kind = "blocking" if check.blocking else "non-blocking"
        lines.append(f"check {check_key.asset_key.to_user_string()}:{check_key.name} {kind}")
    lines += [f"job {job.name}" for job in definitions.jobs or ()]
    lines += [f"schedule {s.name} cron={s.cron_schedule}" for s in definitions.schedules or ()]
    lines += [f"sensor {sensor.name}" for sensor in definitions.sensors or ()]
    return sorted(lines)


def test_the_asset_graph_matches_its_snapshot(request: pytest.FixtureRequest) -> None:
    current = graph_lines(defs)
    if request.config.getoption("--update-snapshots"):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(HEADER + "\n".join(current) + "\n", encoding="utf-8")
    assert SNAPSHOT.exists(), f"{SNAPSHOT} is missing: run with --update-snapshots"
    recorded = [
        line
        for line in SNAPSHOT.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    diff = "\n".join(
        difflib.unified_diff(recorded, current, "snapshot", "definitions now", lineterm="")
    )
    assert recorded == current, (
        f"the asset graph differs from {SNAPSHOT.name} (- snapshot, + now); if this is meant, "
        f"rerun with --update-snapshots and commit the file:\n{diff}"
    )


def test_the_snapshot_names_every_stage() -> None:
    """The snapshot is a real record of the graph, not an empty file that trivially matches."""
    groups = {line.split("group=")[1].split()[0] for line in graph_lines(defs) if "group=" in line}
    assert {"registry", "indices", "runs", "grading", "scores", "publish"} <= groups
    # one group per source, named after it, so the graph shows whose raw/staging/live it is
    assert {source_group(name) for name in source_definitions()} <= groups
    assert all(not g.startswith("ingestion") or g[len("ingestion_") :] in source_definitions()
               for g in groups)  # fmt: skip
    assert any(
        line.startswith("check ") and line.endswith(" blocking") for line in graph_lines(defs)
    )
