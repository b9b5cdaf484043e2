"""The Dagster deployment explains itself: descriptions, groups, schedules, documented CLI."""

import re

import dagster as dg

from bench_pipeline.cli import main as cli
from bench_pipeline.core import settings
from bench_pipeline.core.warehouse import connect, migrate
from bench_pipeline.definitions import build_definitions, defs
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.tables import TABLES
from bench_pipeline.resources.sources import LiveHttpClient, RecordedSnapshotClient


def test_every_asset_has_a_description_group_and_owner() -> None:
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.description, key
        assert node.group_name and node.group_name != "default", key
        assert node.owners, key


def test_every_source_has_a_schedule_on_its_cadence() -> None:
    schedules = {s.name: s for s in defs.schedules}
    for name, definition in source_definitions().items():
        schedule = schedules[f"refresh_{name}_schedule"]
        assert schedule.cron_schedule == definition.cadence_cron
        job = defs.resolve_job_def(schedule.job_name)
        assert dg.AssetKey([name, "live"]) in job.asset_layer.executable_asset_keys


def test_every_live_table_has_its_checks() -> None:
    check_names = {key.name for key in defs.resolve_asset_graph().asset_check_keys}
    for definition in source_definitions().values():
        for table in definition.tables:
            for what in ("non_empty", "unique_key", "values_valid"):
                assert f"{table}_{what}" in check_names


def test_source_mode_chooses_the_client() -> None:
    recorded = build_definitions("recorded").resources["epoch_source"]
    live = build_definitions("live").resources["epoch_source"]
    assert isinstance(recorded, RecordedSnapshotClient)
    assert isinstance(live, LiveHttpClient)


def test_migrations_create_every_live_table_with_the_spec_columns(tmp_path) -> None:
    with connect(tmp_path / "w.duckdb") as conn:
        numbered = sorted(int(p.name[:4]) for p in settings.migrations_dir().glob("*.sql"))
        assert migrate(conn, settings.migrations_dir()) == numbered
        assert migrate(conn, settings.migrations_dir()) == []  # idempotent
        for name, spec in TABLES.items():
            columns = [row[0] for row in conn.execute(f"DESCRIBE {name}").fetchall()]
            assert columns == [*spec.columns, "source_run_id"], name


def test_every_cli_command_is_in_the_readme() -> None:
    readme = (settings.REPO_ROOT / "README.md").read_text()
    parser_commands = re.findall(r'add_parser\(\s*"(\w+)"', open(cli.__file__).read())
    assert parser_commands
    for command in parser_commands:  # a subcommand may sit under its group: bench registry report
        assert re.search(rf"`bench (\w+ )?{command}\b", readme), command
    for target in ("make run", "make test", "make ui", "make bench"):
        assert target in readme
