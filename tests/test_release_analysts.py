"""Data for analysts, on a real release of every recorded snapshot: comments on every table
and column of the release's DuckDB file and the analyst copy, documented views, files that
DuckDB 1.x (from PyPI, in a throwaway environment) opens as well as 2.x, a Frictionless
`datapackage.json` that validates against the files, CSV read with its declared types,
timestamps with their offset, and `model_id` on the per-setup tables."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import duckdb
import frictionless
import polars as pl
import pytest
from stages import materialize_recorded

from bench_pipeline.core.warehouse import connect, fetch_frame, publish_read_only_copy
from bench_pipeline.core.writer import insert_rows, write_frame
from bench_pipeline.release.build import build_release
from bench_pipeline.release.database import VIEWS, WAREHOUSE_NAMES, describe_analyst_copy
from bench_pipeline.release.datapackage import DATAPACKAGE, FIELD_TYPES, duckdb_columns
from bench_pipeline.release.downloads import write_download
from bench_pipeline.release.published import METHODOLOGY_VERSIONS, PUBLISHED
from bench_pipeline.release.schema import _DTYPES, Column, PublishedTable
from bench_pipeline.site.build import build_site

pytestmark = pytest.mark.assets

OLD_DUCKDB = "duckdb<2"


def _comment(column) -> str:
    return column.description + (f" Shown as “{column.title}”." if column.title else "")


def _setups(conn: duckdb.DuckDBPyConnection) -> None:
    """Two setups (one on an OpenRouter listing, one local model no source lists) and PM
    board rows for them, as the score assets store them."""
    columns = ("setup_id", "label", "model_record", "api_id", "company", "context_limit",
               "local", "harness", "environment", "executable", "current",
               "first_loaded")  # fmt: skip
    when = datetime(2026, 11, 1)
    insert_rows(conn, "setups", columns, [
        ("s-gpt", "gpt-5.4-medium", "gpt-5.4-medium", "openai/gpt-5.4", "OpenAI", 1_050_000,
         False, "plain", "none", True, True, when),
        ("s-local", "qwen3-8b", "qwen3-8b", "qwen3-8b-local", "Qwen", 32_768, True, "plain",
         "none", True, True, when),
    ])  # fmt: skip
    write_frame(conn, "pm_setups", pl.DataFrame({
        "setup_id": ["s-gpt", "s-local"], "overall": [71.0, 55.0], "margin95": [3.0, 4.0],
        "runs": [10, 10], "tasks": [5, 5], "missing_core_tasks": ["", ""],
        "status": ["ranked", "ranked"], "rank": [1, 2], "setup": ["gpt-5.4-medium", "qwen3-8b"],
        "simulated": [True, True],
    }))  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A warehouse of every recorded snapshot with two setups' PM rows, its release and its
    analyst copy."""
    root = tmp_path_factory.mktemp("analysts")
    database = materialize_recorded(root / "home")
    with connect(database) as conn:
        _setups(conn)
        outcome = build_release(conn, root / "releases", METHODOLOGY_VERSIONS)
        copy = publish_read_only_copy(conn, root / "analyst.duckdb", describe=describe_analyst_copy)
    return {"root": root, "release": outcome.path, "copy": copy}


def test_every_published_table_and_column_is_commented_in_the_release_file(built: dict) -> None:
    with duckdb.connect(str(built["release"] / "bench.duckdb"), read_only=True) as conn:
        tables = dict(
            conn.execute(
                "SELECT table_name, comment FROM duckdb_tables() "
                "WHERE database_name = current_database()"
            ).fetchall()
        )
        columns = {
            (t, c): comment
            for t, c, comment in conn.execute(
                "SELECT table_name, column_name, comment FROM duckdb_columns() "
                "WHERE database_name = current_database()"
            ).fetchall()
        }
    assert set(tables) == {t.name for t in PUBLISHED}
    for table in PUBLISHED:
        assert tables[table.name].startswith(table.title), table.name
        for column in table.columns:
            assert columns[(table.name, column.name)] == _comment(column), (table.name, column)
    assert all(columns.values()), [k for k, v in columns.items() if not v]  # views included


def test_views_are_documented_and_join_index_market_and_arena(built: dict) -> None:
    with duckdb.connect(str(built["release"] / "bench.duckdb"), read_only=True) as conn:
        described = dict(
            conn.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal")
            .fetchall()
        )  # fmt: skip
        assert described == {view.name: view.description for view in VIEWS}
        board = fetch_frame(
            conn,
            "SELECT model_id, rank, known_good_index, blended_price_usd_per_1m, "
            "arena_text_rating FROM leaderboard",
        )
        ranked = conn.execute(
            "SELECT count(*) FROM known_good_index WHERE rank IS NOT NULL"
        ).fetchone()[0]
        arena = fetch_frame(
            conn,
            "SELECT model_id, max(rating) AS best FROM arena_elo WHERE leaderboard = 'text' "
            "GROUP BY model_id",
        )
        pm = conn.execute("SELECT setup_id, model_id, model_name FROM pm_leaderboard").fetchall()
    assert board.height == board["model_id"].n_unique()  # one row per model
    assert board.filter(pl.col("rank").is_not_null()).height == ranked > 0
    joined = board.join(arena, on="model_id").filter(pl.col("arena_text_rating").is_not_null())
    assert joined.height > 0 and (joined["arena_text_rating"] == joined["best"]).all()
    assert board.filter(pl.col("blended_price_usd_per_1m").is_not_null()).height > 0
    assert ("s-gpt", "openai/gpt-5.4", "GPT-5.4") in pm


def test_analyst_copy_comments_every_published_table_it_holds(built: dict) -> None:
    with duckdb.connect(str(built["copy"]), read_only=True) as conn:
        tables = dict(
            conn.execute(
                "SELECT table_name, comment FROM duckdb_tables() "
                "WHERE database_name = current_database()"
            ).fetchall()
        )
        columns = {
            (t, c): comment
            for t, c, comment in conn.execute(
                "SELECT table_name, column_name, comment FROM duckdb_columns() "
                "WHERE database_name = current_database()"
            ).fetchall()
        }
    held = [t for t in PUBLISHED if WAREHOUSE_NAMES.get(t.name, t.name) in tables]
    # every table the release queries from the warehouse (the others are built in Python)
    assert {t.name for t in held} == {t.name for t in PUBLISHED if t.sql}
    described = 0
    for table in held:
        target = WAREHOUSE_NAMES.get(table.name, table.name)
        assert tables[target].startswith(table.title), target
        for column in table.columns:
            if (target, column.name) in columns:
                assert columns[(target, column.name)] == _comment(column), (target, column)
                described += 1
    assert described > 200


def _columns(path: Path) -> list[tuple[str, str, str, str | None]]:
    """(table, column, type, comment) of every table and view column a DuckDB file holds."""
    with duckdb.connect(str(path), read_only=True) as conn:
        return conn.execute(
            "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name = 'main'"
        ).fetchall()


def test_every_table_and_column_of_both_files_is_commented(built: dict) -> None:
    for path in (built["release"] / "bench.duckdb", built["copy"]):
        with duckdb.connect(str(path), read_only=True) as conn:
            bare = conn.execute(
                "SELECT table_name FROM duckdb_tables() "
                "WHERE database_name = current_database() AND comment IS NULL"
            ).fetchall()
        assert bare == [], path
        columns = _columns(path)
        assert [(t, c) for t, c, _, comment in columns if not comment] == [], path
    copy = {(t, c): comment for t, c, _, comment in _columns(built["copy"])}
    # a warehouse column outside the publication schema has its migration's words
    assert copy[("evaluation_rows", "agent")].startswith("The scaffold or agent")
    assert copy[("source_runs", "mode")] == "recorded | live"
    assert len(copy) > 750


MONEY_NAMES = re.compile(r"(^|_)usd($|_)|(^|_)cost($|_)|price")
DATE_NAMES = re.compile(r"(_date$|^date$|_at$|^as_of$|_as_of$|_on$|_cutoff$)")


def test_no_money_or_date_column_is_typed_as_text(built: dict) -> None:
    """Money is DECIMAL (or a binary float where a figure is a mean), dates are DATE or
    TIMESTAMPTZ, never naive; a text date column is left only where its publisher wrote
    values that are no full date (and its comment says so)."""
    for path in (built["release"] / "bench.duckdb", built["copy"]):
        columns = _columns(path)
        naive = [(t, c) for t, c, kind, _ in columns if kind == "TIMESTAMP"]
        assert naive == [], path
        money = [(t, c, k) for t, c, k, _ in columns if MONEY_NAMES.search(c) and k == "VARCHAR"]
        # `*_as_written` is a submitter's claim verbatim (evidence beside its DECIMAL column)
        text_kept = ("_flag", "_source_run_id", "_warnings", "_as_written")
        money = [m for m in money if not m[1].endswith(text_kept)]
        assert money == [], path
        dates = [(t, c) for t, c, k, _ in columns if DATE_NAMES.search(c) and k == "VARCHAR"]
        with duckdb.connect(str(path), read_only=True) as conn:
            for table, column in dates:
                partial = conn.execute(
                    f'SELECT count(*) FROM "{table}" WHERE TRY_CAST("{column}" AS DATE) IS NULL '
                    f'AND "{column}" IS NOT NULL'
                ).fetchone()[0]
                assert partial > 0, (path, table, column)
        comments = {(t, c): comment for t, c, _, comment in columns}
        for table, column in dates:
            assert "not every value is a date" in comments[(table, column)], (table, column)
    release = {(t, c): k for t, c, k, _ in _columns(built["release"] / "bench.duckdb")}
    assert release[("item_boards", "cost_usd")] == "DECIMAL(38,20)"
    assert release[("source_runs", "started_at")] == "TIMESTAMP WITH TIME ZONE"
    copy = {(t, c): k for t, c, k, _ in _columns(built["copy"])}
    assert copy[("evaluation_rows", "run_date")] == "TIMESTAMP WITH TIME ZONE"
    assert copy[("evaluation_rows", "release_date")] == "DATE"
    assert copy[("swebench_item_results", "cost_usd")].startswith("DECIMAL")


def test_exact_costs_keep_every_digit_in_every_rendering(built: dict) -> None:
    """A real SWE-bench entry's cost, 20 decimal places: the same in DuckDB, Parquet, CSV and
    JSON (as text there, the downloads' contract)."""
    folder = built["release"]
    key = "20251124_mini-v1.16.0_claude-opus-4-5-20251101"
    with duckdb.connect(str(folder / "bench.duckdb"), read_only=True) as conn:
        (cost,) = conn.execute(
            "SELECT cost_usd FROM item_boards WHERE entry_key = ? AND board = 'Verified'", [key]
        ).fetchone()
    assert str(cost) == "360.62249849999999934000"
    csv_rows = [r for r in csv.DictReader((folder / "data/item_boards.csv").open(encoding="utf-8"))]
    row = next(r for r in csv_rows if r["entry_key"] == key and r["board"] == "Verified")
    assert row["cost_usd"] == "360.62249849999999934"
    rows = json.loads((folder / "data/item_boards.json").read_text(encoding="utf-8"))
    entry = next(r for r in rows if r["entry_key"] == key and r["board"] == "Verified")
    assert entry["cost_usd"] == "360.62249849999999934"
    parquet = pl.read_parquet(folder / "data/item_boards.parquet")
    value = parquet.filter(pl.col("entry_key") == key, pl.col("board") == "Verified")["cost_usd"]
    assert isinstance(value.dtype, pl.Decimal) and str(value[0]) == "360.62249849999999934000"


def test_epoch_scores_are_published_with_standard_error_run_date_and_log(built: dict) -> None:
    """Hand-read from Epoch AI's gpqa_diamond.csv: DeepSeek-R1, mean_score 0.6922…,
    stderr 0.0307…, started 2025-05-26T18:38:03.702Z, row id fFGyQR2mfDufvrSV2rzWyV; 307 rows
    of the four files Epoch AI runs itself carry a log viewer link."""
    with duckdb.connect(str(built["release"] / "bench.duckdb"), read_only=True) as conn:
        row = conn.execute(
            "SELECT model_id, score, stderr, run_at, release_date, log_url FROM epoch_scores "
            "WHERE evaluation_id = 'gpqa_diamond' AND row_key = 'fFGyQR2mfDufvrSV2rzWyV'"
        ).fetchone()
        counts = conn.execute(
            "SELECT count(*), count(stderr), count(run_at), count(log_url) FROM epoch_scores"
        ).fetchone()
    model_id, score, stderr, run_at, release_date, log_url = row
    assert model_id == "deepseek/deepseek-r1"
    assert round(score, 4) == 69.2235 and round(stderr, 4) == 3.0705
    assert run_at.isoformat() == "2025-05-26T18:38:03.702000+00:00"
    assert release_date.isoformat() == "2025-01-20"
    assert log_url.startswith("https://logs.epoch.ai/inspect-viewer/")
    assert log_url.endswith("fFGyQR2mfDufvrSV2rzWyV.eval")
    total, with_error, dated, logged = counts
    assert total == 838 and with_error == 628 and dated > 400 and logged == 307


OLD_READER = textwrap.dedent(
    """
    import json, sys, duckdb
    out = {"version": duckdb.__version__, "files": {}}
    for path in sys.argv[1:]:
        try:
            conn = duckdb.connect(path, read_only=True)
        except duckdb.Error as error:
            out["files"][path] = {"error": str(error)}
            continue
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()]
        views = [r[0] for r in conn.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
        out["files"][path] = {
            "rows": {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]
                     for n in names + views},
            "comments": conn.execute(
                "SELECT count(comment) FROM duckdb_columns() "
                "WHERE database_name = current_database()").fetchone()[0],
        }
    print(json.dumps(out))
    """
)


def _read_everything(conn: duckdb.DuckDBPyConnection) -> dict:
    names = [
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
    ]
    views = [
        r[0]
        for r in conn.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    ]
    return {
        "rows": {
            n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names + views
        },
        "comments": conn.execute(
            "SELECT count(comment) FROM duckdb_columns() WHERE database_name = current_database()"
        ).fetchone()[0],
    }


@pytest.fixture(scope="module")
def old_duckdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway environment with the newest DuckDB 1.x from PyPI; its Python."""
    venv = tmp_path_factory.mktemp("duckdb1") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", OLD_DUCKDB],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        unreachable = ("Could not find a version", "connection", "Network", "resolve")
        if any(word.lower() in done.stderr.lower() for word in unreachable):
            pytest.skip(f"the package registry is unreachable ({OLD_DUCKDB}): {done.stderr[-300:]}")
        raise AssertionError(f"pip install {OLD_DUCKDB} failed: {done.stderr}")
    return python


def test_duckdb_1x_and_2x_open_both_files_and_read_the_same(
    built: dict, old_duckdb: Path, tmp_path: Path
) -> None:
    files = [built["release"] / "bench.duckdb", built["copy"]]
    # a control: a file in DuckDB 2's own format, which 1.x must refuse (else this test is moot)
    control = tmp_path / "default.duckdb"
    with duckdb.connect(str(control)) as conn:
        conn.execute("CREATE TABLE t AS SELECT 1 AS x")
    done = subprocess.run(
        [str(old_duckdb), "-c", OLD_READER, *map(str, files), str(control)],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    old = json.loads(done.stdout)
    assert old["version"].startswith("1.")
    assert "error" in old["files"][str(control)]
    for path in files:
        with duckdb.connect(str(path), read_only=True) as conn:
            assert old["files"][str(path)] == _read_everything(conn), path
    assert old["files"][str(files[0])]["rows"]["leaderboard"] > 0


def test_datapackage_validates_against_every_file(built: dict) -> None:
    folder = built["release"]
    descriptor = json.loads((folder / DATAPACKAGE).read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    paths = {r["path"] for r in descriptor["resources"]}
    assert paths == {f["path"] for f in manifest["files"]} - {DATAPACKAGE} | {"manifest.json"}
    for resource in descriptor["resources"]:
        if resource["path"] == "manifest.json":
            continue
        listed = next(f for f in manifest["files"] if f["path"] == resource["path"])
        assert (
            resource["hash"] == f"sha256:{listed['sha256']}"
            and resource["bytes"] == listed["bytes"]
        )
    by_name = {t.name: t for t in PUBLISHED}
    tabular = [r for r in descriptor["resources"] if r["profile"] == "tabular-data-resource"]
    assert sorted(r["format"] for r in tabular) == ["csv"] * len(PUBLISHED)
    for resource in tabular:
        table = by_name[Path(resource["path"]).stem]
        fields = resource["schema"]["fields"]
        assert [(f["name"], f["type"]) for f in fields] == [
            (c.name, FIELD_TYPES[c.type]) for c in table.columns
        ]
        assert all(f["description"] for f in fields)
    # the JSON and Parquet renderings are files with the CSV's columns
    others = [r for r in descriptor["resources"] if r["format"] in ("json", "parquet")]
    others = [r for r in others if r["path"].startswith("data/")]
    assert len(others) == 2 * len(PUBLISHED)
    assert all(r["type"] == "file" and r["schema_of"] in {t["name"] for t in tabular}
               for r in others)  # fmt: skip
    errors = []
    for resource in tabular:
        report = frictionless.validate(frictionless.Resource(resource, basepath=str(folder)))
        errors += [f"{resource['name']}: {e.message}" for t in report.tasks for e in t.errors]
    assert errors == []


def test_frictionless_validates_the_whole_package(built: dict) -> None:
    """`frictionless validate datapackage.json`, the command a reader runs, passes: every CSV
    against its schema, every other file by its size and SHA-256; and it fails on a file
    changed after the release was written."""
    command = Path(sys.executable).parent / "frictionless"
    folder = built["release"]
    done = subprocess.run(
        [str(command), "validate", "--json", DATAPACKAGE],
        cwd=folder, capture_output=True, text=True, check=False,
    )  # fmt: skip
    report = json.loads(done.stdout)
    errors = [(t["name"], e["message"]) for t in report["tasks"] for e in t["errors"]]
    assert errors == [] and done.returncode == 0
    assert len(report["tasks"]) == 3 * len(PUBLISHED) + 4
    damaged = built["root"] / "damaged"
    shutil.copytree(folder, damaged)
    with (damaged / "data" / "market.parquet").open("ab") as handle:
        handle.write(b"x")
    failed = subprocess.run(
        [str(command), "validate", "--json", DATAPACKAGE],
        cwd=damaged, capture_output=True, text=True, check=False,
    )  # fmt: skip
    bad = [t["name"] for t in json.loads(failed.stdout)["tasks"] if t["errors"]]
    assert failed.returncode != 0 and bad == ["market_parquet"]


def test_every_resource_names_its_licence(built: dict) -> None:
    descriptor = json.loads((built["release"] / DATAPACKAGE).read_text(encoding="utf-8"))
    for resource in descriptor["resources"]:
        assert resource["licenses"], resource["name"]
        assert all(entry["name"] and entry["title"] for entry in resource["licenses"])
    by_name = {r["name"]: r for r in descriptor["resources"]}
    # SWE-bench rows (CC BY-NC) and the inspect_ai logs' board (MIT)
    for table in ("item_boards", "item_board_pairs", "item_board_cards", "item_board_rank_sets"):
        for fmt in ("csv", "json", "parquet"):
            names = [e["name"] for e in by_name[f"{table}_{fmt}"]["licenses"]]
            assert names == ["CC-BY-NC-4.0", "MIT"], (table, fmt)
    assert [e["name"] for e in by_name["epoch_scores_csv"]["licenses"]] == ["CC-BY-4.0"]
    assert by_name["pm_setups_csv"]["licenses"][0]["name"] == "notspecified"
    package = {e["name"] for e in descriptor["licenses"]}
    assert {"CC-BY-4.0", "CC-BY-NC-4.0", "MIT", "other-closed", "notspecified"} == package


def test_parquet_files_have_the_declared_types(built: dict) -> None:
    for table in PUBLISHED:
        schema = pl.read_parquet_schema(built["release"] / "data" / f"{table.name}.parquet")
        assert list(schema) == list(table.column_names)
        for column in table.columns:
            dtype = schema[column.name]
            assert dtype == pl.Null or isinstance(dtype, _DTYPES[column.type]), (table.name, column)


def test_every_csv_reads_in_duckdb_with_the_declared_types(built: dict) -> None:
    conn = duckdb.connect()
    for table in PUBLISHED:
        path = built["release"] / "data" / f"{table.name}.csv"
        columns = duckdb_columns(table)
        read = conn.execute(
            "SELECT * FROM read_csv(?, header = true, columns = ?)", [str(path), columns]
        )
        assert [d[0] for d in read.description] == list(columns)
        rows = read.fetchall()
        parquet = pl.read_parquet(built["release"] / "data" / f"{table.name}.parquet")
        assert len(rows) == parquet.height, table.name


def test_declared_types_survive_a_column_whose_first_rows_are_empty(tmp_path: Path) -> None:
    """DuckDB's sniffer samples the first rows: a column empty there is guessed as text."""
    frame = pl.DataFrame({
        "key": [f"k{i}" for i in range(30_000)],
        "price": pl.Series([None] * 29_999 + ["3.25"]).cast(pl.Decimal(24, 12)),
        "seen": pl.Series([None] * 29_999 + [datetime(2026, 8, 14, 9, 30)]),
    })  # fmt: skip
    table = PublishedTable("t", "T", "SELECT 1", ("key",), "market", (
        Column("key", "string", "k"), Column("price", "decimal", "p"),
        Column("seen", "timestamp", "s"),
    ))  # fmt: skip
    path = write_download(frame, "t", tmp_path)["csv"]
    conn = duckdb.connect()
    described = conn.execute("DESCRIBE SELECT * FROM read_csv(?)", [str(path)]).fetchall()
    guessed = {row[0]: row[1] for row in described}
    assert guessed["price"] == "VARCHAR"  # the trap the declared types avoid
    typed = conn.execute(
        "SELECT price, seen FROM read_csv(?, header = true, columns = ?) WHERE price IS NOT NULL",
        [str(path), duckdb_columns(table)],
    ).fetchall()
    assert [str(v) for v in typed[0][:1]] == ["3.250000000000"]
    assert typed[0][1].utcoffset().total_seconds() == 0 and typed[0][1].hour == 9


def test_json_timestamps_carry_their_offset(built: dict) -> None:
    checked = 0
    for table in PUBLISHED:
        stamps = [c.name for c in table.columns if c.type == "timestamp"]
        if not stamps:
            continue
        rows = json.loads((built["release"] / "data" / f"{table.name}.json").read_text())
        for row in rows:
            for name in stamps:
                if row[name] is not None:
                    parsed = datetime.fromisoformat(row[name])
                    assert parsed.utcoffset() is not None, (table.name, name, row[name])
                    checked += 1
    assert checked > 0


def test_every_per_setup_table_carries_model_id(built: dict) -> None:
    per_setup = [t for t in PUBLISHED if {"setup_id", "model"} & set(t.key)]
    assert len(per_setup) >= 7
    for table in per_setup:
        assert "model_id" in table.column_names, table.name
    setups = {
        r["setup_id"]: r["model_id"]
        for r in json.loads((built["release"] / "data" / "pm_setups.json").read_text())
    }
    assert setups == {"s-gpt": "openai/gpt-5.4", "s-local": None}
    market = {
        r["model_id"] for r in json.loads((built["release"] / "data" / "market.json").read_text())
    }
    assert setups["s-gpt"] in market  # it joins


def test_downloads_page_offers_the_duckdb_file(built: dict, tmp_path: Path) -> None:
    site = tmp_path / "site"
    build_site(built["release"], site, built["release"].parent)
    html = (site / "downloads.html").read_text()
    rid = built["release"].name
    assert f'href="releases/{rid}/bench.duckdb"' in html
    assert f'href="releases/{rid}/datapackage.json"' in html
    copied = site / "releases" / rid / "bench.duckdb"
    assert copied.read_bytes() == (built["release"] / "bench.duckdb").read_bytes()
    shutil.rmtree(site)
