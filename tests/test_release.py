"""Dataset releases built from a real warehouse (every recorded snapshot ingested) in tmp_path:
deterministic ids and bytes, a manifest that matches the files, atomic publication, a
read-only DuckDB file, price history, and the privacy check."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest
from earlier_release import earlier_csv, earlier_diff, earlier_json
from stages import materialize_recorded

from bench_pipeline.assets import release as release_asset
from bench_pipeline.core import settings
from bench_pipeline.core.files import sha256_file
from bench_pipeline.core.warehouse import connect
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.release import build as build_module
from bench_pipeline.release.build import build_release, release_id
from bench_pipeline.release.database import VIEWS
from bench_pipeline.release.prices import record_price_history
from bench_pipeline.release.published import METHODOLOGY_VERSIONS, PUBLISHED
from bench_pipeline.release.schema import SCHEMA
from bench_pipeline.release.verify import private_text_findings, verify_latest, verify_release
from bench_pipeline.resources.warehouse import WarehouseResource

pytestmark = pytest.mark.assets

TABLES = [t.name for t in PUBLISHED]


def release(database: Path, root: Path, versions=METHODOLOGY_VERSIONS):
    with connect(database) as conn:
        return build_release(conn, root, versions)


def file_hashes(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A warehouse of every recorded snapshot and its first release."""
    root = tmp_path_factory.mktemp("release")
    database = materialize_recorded(root / "home")
    outcome = release(database, root / "releases")
    return {"root": root, "database": database, "outcome": outcome}


def copy_of(built: dict, tmp_path: Path) -> Path:
    """A private copy of the built warehouse, to change."""
    target = tmp_path / "warehouse" / "bench.duckdb"
    target.parent.mkdir(parents=True)
    shutil.copy(built["database"], target)
    return target


def test_first_release_is_created_with_the_whole_layout(built: dict) -> None:
    outcome = built["outcome"]
    assert outcome.created and outcome.previous_release_id is None
    assert outcome.release_id.startswith("r") and len(outcome.release_id) == 17
    assert outcome.path == built["root"] / "releases" / outcome.release_id
    names = {p.relative_to(outcome.path).as_posix() for p in outcome.path.rglob("*")}
    expected = {f"data/{t}.{fmt}" for t in TABLES for fmt in ("csv", "json", "parquet")}
    assert names == expected | {
        "data",
        "manifest.json",
        "schema.json",
        "bench.duckdb",
        "diff.json",
        "datapackage.json",
    }
    manifest = json.loads((outcome.path / "manifest.json").read_text())
    assert list(manifest) == [
        "release_id",
        "created_at",
        "methodology_versions",
        "case_versions",
        "source_runs",
        "schema",
        "tables",
        "files",
        "previous_release_id",
    ]
    assert manifest["schema"] == "schema.json"
    assert "schema.json" in {f["path"] for f in manifest["files"]}
    assert manifest["methodology_versions"]["known_good_index"] == "1"
    assert manifest["case_versions"] == [] and manifest["previous_release_id"] is None
    assert manifest["created_at"].endswith("+00:00")
    assert [t["name"] for t in manifest["tables"]] == TABLES
    # every source's last run, and every run a table cites
    assert sorted(r["source"] for r in manifest["source_runs"]) == sorted(source_definitions())
    cited = {row["source_run_id"] for row in json_rows(outcome.path, "index_lineage")}
    assert cited <= {r["run_id"] for r in manifest["source_runs"]}
    diff = json.loads((outcome.path / "diff.json").read_text())
    assert diff["from"] is None and diff["to"] == outcome.release_id
    assert len(diff["models_added"]) == manifest["tables"][TABLES.index("models")]["rows"]


def test_schema_json_declares_exactly_the_published_columns(built: dict) -> None:
    folder = built["outcome"].path
    schema = json.loads((folder / "schema.json").read_text())
    assert [t["name"] for t in schema["tables"]] == TABLES
    titles = {e["id"]: e["title"] for e in schema["evaluations"]}
    assert titles["math_aime"] == "OTIS Mock AIME 2024-2025"  # sources/evaluations.toml's words
    with duckdb.connect(str(folder / "bench.duckdb"), read_only=True) as conn:
        for table in schema["tables"]:
            declared = [c["name"] for c in table["columns"]]
            assert all(c["description"] and c["type"] for c in table["columns"]), table["name"]
            published = [d[0] for d in conn.execute(f'SELECT * FROM "{table["name"]}"').description]
            assert published == declared, table["name"]
    kgi = next(t for t in schema["tables"] if t["name"] == "known_good_index")
    assert kgi["ranks"] == [{"column": "rank", "by": "known_good_index", "order": "descending",
                             "method": "competition", "within": [], "eligible": None}]  # fmt: skip
    component = next(c for c in kgi["columns"] if c["name"] == "math_aime")
    assert component["title"] == titles["math_aime"]


def json_rows(folder: Path, table: str) -> list[dict]:
    return json.loads((folder / "data" / f"{table}.json").read_text())


def test_same_warehouse_gives_the_same_release_and_the_same_bytes(
    built: dict, tmp_path: Path
) -> None:
    first = built["outcome"]
    before = file_hashes(first.path)
    again = release(built["database"], built["root"] / "releases")
    assert (again.release_id, again.created) == (first.release_id, False)
    assert file_hashes(first.path) == before  # untouched

    elsewhere = release(built["database"], tmp_path / "releases")
    assert elsewhere.created and elsewhere.release_id == first.release_id
    theirs, ours = file_hashes(elsewhere.path), file_hashes(first.path)
    data = [name for name in ours if name.startswith("data/")]
    assert len(data) == 3 * len(TABLES)
    assert {n: theirs[n] for n in data} == {n: ours[n] for n in data}  # byte-identical
    assert theirs["diff.json"] == ours["diff.json"]


def test_files_digests_and_id_are_those_of_the_earlier_build(built: dict) -> None:
    """Each table rendered once and digested from memory: the data files are the earlier
    renderings byte for byte, each content digest and the id the earlier definition's (the
    sha256 of the JSON without lineage columns), every digest in the manifest and the data
    package the file's own, and the diff the one the earlier diff (every table read) gives."""
    folder = built["outcome"].path
    manifest = json.loads((folder / "manifest.json").read_text())
    contents = {}
    with connect(built["database"]) as conn:
        for table in PUBLISHED:
            frame = table.frame(conn)
            assert (folder / "data" / f"{table.name}.json").read_bytes() == earlier_json(frame)
            assert (folder / "data" / f"{table.name}.csv").read_bytes() == earlier_csv(frame)
            values = frame.drop([c for c in table.lineage if c in frame.columns])
            contents[table.name] = hashlib.sha256(earlier_json(values)).hexdigest()
    assert {t["name"]: t["content_sha256"] for t in manifest["tables"]} == contents
    contents[SCHEMA] = sha256_file(folder / SCHEMA)
    assert release_id(METHODOLOGY_VERSIONS, contents) == built["outcome"].release_id
    package = json.loads((folder / "datapackage.json").read_text())
    hashed = [r for r in package["resources"] if "hash" in r]
    assert len(hashed) == len(package["resources"]) - 1  # all but the manifest
    for resource in hashed:
        path = folder / resource["path"]
        assert resource["hash"] == f"sha256:{sha256_file(path)}", resource["path"]
        assert resource["bytes"] == path.stat().st_size, resource["path"]
    assert json.loads((folder / "diff.json").read_text()) == earlier_diff(None, folder)


def test_reingesting_unchanged_sources_makes_no_new_release(built: dict, tmp_path: Path) -> None:
    """The same payloads again are checks, not runs: no new run, no price row, same release."""
    database = copy_of(built, tmp_path)
    assert materialize_recorded(tmp_path) == database  # the sources again, into the copy
    with connect(database) as conn:
        runs = conn.execute("SELECT count(*) FROM source_runs").fetchone()[0]
        checks = conn.execute("SELECT count(*) FROM source_checks").fetchone()[0]
        observations = conn.execute("SELECT count(DISTINCT source_run_id) FROM price_history")
        assert observations.fetchone()[0] == 2  # models and endpoints, once each
    assert runs == checks == len(source_definitions())
    outcome = release(database, tmp_path / "releases")
    assert outcome.release_id == built["outcome"].release_id


def test_id_covers_the_methodology_versions(built: dict, tmp_path: Path) -> None:
    bumped = {**METHODOLOGY_VERSIONS, "known_good_index": "2"}
    outcome = release(built["database"], tmp_path / "releases", bumped)
    assert outcome.created and outcome.release_id != built["outcome"].release_id
    with pytest.raises(ValueError, match="no methodology version"):
        release(built["database"], tmp_path / "other", {"known_good_index": "1"})


def count_rows(path: Path) -> int:
    if path.suffix == ".json":
        return len(json.loads(path.read_text()))
    if path.suffix == ".csv":
        with path.open(newline="") as handle:
            return len(list(csv.DictReader(handle)))
    return pl.read_parquet(path).height


def test_manifest_lists_every_file_with_its_sha256_and_rows(built: dict) -> None:
    folder = built["outcome"].path
    manifest = json.loads((folder / "manifest.json").read_text())
    listed = {entry["path"]: entry for entry in manifest["files"]}
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert set(listed) == on_disk - {"manifest.json"}
    for path, entry in listed.items():
        assert entry["sha256"] == sha256_file(folder / path), path
        assert entry["bytes"] == (folder / path).stat().st_size, path
        if path.startswith("data/"):
            assert entry["rows"] == count_rows(folder / path), path
    tables = {t["name"]: t for t in manifest["tables"]}
    with duckdb.connect(str(folder / "bench.duckdb"), read_only=True) as conn:
        for name, table in tables.items():
            assert conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0] == table["rows"]
            for fmt, file in table["files"].items():
                assert file["path"] == f"data/{name}.{fmt}"
                assert file["sha256"] == listed[file["path"]]["sha256"]
    assert listed["bench.duckdb"]["rows"] == sum(t["rows"] for t in tables.values())
    assert listed["diff.json"]["rows"] is None
    assert verify_release(folder) == []


def test_verification_sees_a_changed_file(built: dict, tmp_path: Path) -> None:
    folder = tmp_path / built["outcome"].release_id
    shutil.copytree(built["outcome"].path, folder)
    target = folder / "data" / "market.csv"
    target.chmod(0o644)
    target.write_text(target.read_text().replace(",", ";", 1))
    (folder / "data" / "stray.txt").write_text("x")
    problems = verify_release(folder)
    assert any(p.startswith("data/market.csv: sha256") for p in problems)
    assert "data/stray.txt: not in the manifest" in problems


def test_verification_sees_every_tampered_row_count_in_file_order(
    built: dict, tmp_path: Path
) -> None:
    """Files are checked side by side; each wrong row count, size, digest or missing file is
    still reported, once, in the manifest's file order."""
    folder = tmp_path / built["outcome"].release_id
    shutil.copytree(built["outcome"].path, folder)
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    lied = ["bench.duckdb", "data/models.csv", "data/models.json", "data/models.parquet"]
    for entry in manifest["files"]:
        if entry["path"] in lied:
            entry["rows"] += 1  # the files are intact: only a recount can see this
    manifest_path.chmod(0o644)
    manifest_path.write_text(json.dumps(manifest))
    (folder / "data" / "market.json").unlink()
    truncated = folder / "data" / "sources.csv"
    truncated.chmod(0o644)
    truncated.write_bytes(truncated.read_bytes().rsplit(b"\n", 2)[0] + b"\n")  # a row less
    assert verify_release(folder) == [
        "bench.duckdb: row count differs from the manifest",
        "data/market.json: listed but missing",
        "data/models.csv: row count differs from the manifest",
        "data/models.json: row count differs from the manifest",
        "data/models.parquet: row count differs from the manifest",
        "data/sources.csv: sha256 differs from the manifest",
        "data/sources.csv: size differs from the manifest",
        "data/sources.csv: row count differs from the manifest",
    ]


def test_published_files_follow_the_download_rules(built: dict) -> None:
    folder = built["outcome"].path
    known_good = json_rows(folder, "known_good_index")
    assert list(known_good[0]) == [
        "model_id",
        "model_name",
        "known_good_index",
        "rank",
        "index_components",
        "gpqa_diamond",
        "math_aime",
        "swe_bench_verified",
        "livebench",
        "terminal_bench",
        "hle",
        "known_good_index_low",
        "known_good_index_high",
        "without_stderr",
    ]
    indexed = [r["known_good_index"] for r in known_good if r["known_good_index"] is not None]
    assert indexed == sorted(indexed, reverse=True)
    assert known_good[-1]["known_good_index"] is None  # missing is null, last
    market = json_rows(folder, "market")
    priced = next(r for r in market if r["input_usd_per_1m"] is not None)
    assert isinstance(priced["input_usd_per_1m"], str)  # exact decimal as text
    sources = json_rows(folder, "sources")
    assert [s["name"] for s in sources] == sorted(source_definitions())
    assert sources[0]["licence"] == source_definitions()[sources[0]["name"]].licence


def test_release_is_atomic_and_latest_is_written_last(
    built: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "releases"
    rid = built["outcome"].release_id
    # a crash half-way through writing: nothing published, `latest` not moved
    monkeypatch.setattr(build_module, "write_release_database", _crash)
    with pytest.raises(RuntimeError, match="crash"):
        release(built["database"], root)
    assert not (root / rid).exists() and not (root / "latest").exists()
    monkeypatch.undo()
    # the next build clears the leftover partial folder and publishes
    outcome = release(built["database"], root)
    assert outcome.created
    assert [p.name for p in root.iterdir() if "partial" in p.name] == []
    assert (root / "latest").read_text() == rid
    assert verify_latest(root) == (rid, [])
    with connect(built["database"]) as conn:
        row = conn.execute(
            "SELECT previous_release_id, rows_total, tables FROM releases WHERE release_id = ?",
            [rid],
        ).fetchone()
    assert row[0] is None and row[1] == sum(json.loads(row[2]).values())


def _crash(*args, **kwargs):
    raise RuntimeError("crash")


HOLD_WRITER = """
import sys, time, duckdb
conn = duckdb.connect(sys.argv[1])
conn.execute("CREATE TABLE IF NOT EXISTS _held (x INTEGER)")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.close()
"""


def test_release_database_opens_read_only_while_the_warehouse_is_held(
    built: dict, tmp_path: Path
) -> None:
    database = copy_of(built, tmp_path)
    writer = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITER, str(database), "10"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "holding"
        with pytest.raises(duckdb.IOException, match="lock"):
            duckdb.connect(str(database), read_only=True)  # the warehouse itself is taken
        path = built["outcome"].path / "bench.duckdb"
        with duckdb.connect(str(path), read_only=True) as conn:
            tables = {r[0] for r in conn.execute("SHOW TABLES").fetchall()}
            assert tables == set(TABLES) | {view.name for view in VIEWS}
            top = conn.execute(
                "SELECT model_id FROM known_good_index ORDER BY known_good_index DESC NULLS LAST "
                "LIMIT 1"
            ).fetchone()[0]
        assert top == json_rows(built["outcome"].path, "known_good_index")[0]["model_id"]
    finally:
        writer.kill()
        writer.wait()


def test_price_history_records_each_run_once_and_publishes_changes(
    built: dict, tmp_path: Path
) -> None:
    database = copy_of(built, tmp_path)
    with connect(database) as conn:
        assert record_price_history(conn) == 0  # the live runs are recorded already
        canonical, hosts = conn.execute(
            "SELECT count(*) FILTER (WHERE host IS NULL), count(*) FILTER (WHERE host IS NOT NULL) "
            "FROM price_history"
        ).fetchone()
        expected = conn.execute(
            "SELECT count(*) FROM model_aliases a JOIN openrouter_models o "
            "ON o.model_id = a.source_key WHERE a.source = 'openrouter_models' "
            "AND a.source_key = a.model_id"
        ).fetchone()[0]
        assert (
            canonical == expected
            # price history is OpenRouter's: its endpoints, not models.dev's host listings
            and hosts
            == conn.execute(
                "SELECT count(*) FROM provider_prices WHERE tag NOT LIKE 'models.dev:%'"
            ).fetchone()[0]
        )
        model, price = conn.execute(
            "SELECT model_id, input_usd_per_1m FROM price_history "
            "WHERE host IS NULL AND input_usd_per_1m > 0 ORDER BY model_id LIMIT 1"
        ).fetchone()
        # a later run at the same rates: recorded, but not a change
        conn.execute(
            "INSERT INTO price_history SELECT observed_at + INTERVAL 1 DAY, 'later-run', "
            "model_id, host, tag, input_usd_per_1m, output_usd_per_1m FROM price_history"
        )
    same = release(database, tmp_path / "releases")
    assert same.release_id == built["outcome"].release_id
    with connect(database) as conn:  # and one at a new rate
        conn.execute(
            "UPDATE price_history SET input_usd_per_1m = input_usd_per_1m * 2 "
            "WHERE source_run_id = 'later-run' AND model_id = ? AND host IS NULL",
            [model],
        )
    changed = release(database, tmp_path / "releases")
    assert changed.created and changed.previous_release_id == same.release_id
    rows = [r for r in json_rows(changed.path, "price_history") if r["model_id"] == model]
    canonical_rows = [r for r in rows if r["host"] is None]
    assert [r["source_run_id"] for r in canonical_rows][-1] == "later-run"
    assert canonical_rows[-1]["input_usd_per_1m"] == format((2 * price).normalize(), "f")
    diff = json.loads((changed.path / "diff.json").read_text())
    assert diff["tables"]["price_history"]["rows_added"] == [
        {"model_id": model, "host": None, "tag": None, "source_run_id": "later-run"}
    ]
    assert all(
        not t.get("rows_added") and not t.get("changed")
        for name, t in diff["tables"].items()
        if name != "price_history"
    )


SECRET = 'Private case 17: "What is the boiling point", answer 42°'


def test_privacy_check_finds_a_private_text_in_any_file(
    built: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    database = home / "warehouse" / "bench.duckdb"
    database.parent.mkdir(parents=True)
    shutil.copy(built["database"], database)
    monkeypatch.setenv("BENCH_HOME", str(home))
    clean = release(database, settings.releases_dir())
    check = release_asset.release_has_no_private_text
    warehouse = WarehouseResource(path=str(database))
    assert check(warehouse=warehouse).passed  # the bank's held-out cases are not in it
    monkeypatch.setattr(release_asset, "private_texts", lambda: [SECRET])
    assert check(warehouse=warehouse).passed  # the clean release does not hold it

    with connect(database) as conn:  # a private text leaks into a published table
        conn.execute(
            "UPDATE models SET name = ? WHERE model_id = (SELECT min(model_id) FROM models)",
            [SECRET],
        )
    leaked = release(database, settings.releases_dir())
    assert leaked.created and leaked.release_id != clean.release_id
    result = check(warehouse=warehouse)
    assert not result.passed
    findings = result.metadata["findings"].value
    files = {f["file"] for f in findings}
    assert {"data/models.csv", "data/models.json", "data/models.parquet", "bench.duckdb"} <= files
    assert SECRET not in json.dumps(findings)  # the report says where, not what
    assert private_text_findings(leaked.path, []) == []


def test_release_asset_checks_pass_on_a_sound_release(
    built: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("BENCH_HOME", str(home))
    shutil.copytree(built["root"] / "releases", settings.releases_dir())
    result = release_asset.latest_release_matches_manifest()
    assert isinstance(result, dg.AssetCheckResult) and result.passed
    (settings.releases_dir() / "latest").write_text("r-missing")
    assert not release_asset.latest_release_matches_manifest().passed
