"""Data for analysts, on a real release of every recorded snapshot: comments on every table
and column of the release's DuckDB file and the analyst copy, documented views, files that
DuckDB 1.x (from PyPI, in a throwaway environment) opens as well as 2.x, a Frictionless
`datapackage.json` that validates against the files, CSV read with its declared types,
timestamps with their offset, and `model_id` on the per-setup tables."""

from __future__ import annotations

import json
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
    assert len(tabular) == 3 * len(PUBLISHED)
    for resource in tabular:
        table = by_name[Path(resource["path"]).stem]
        fields = resource["schema"]["fields"]
        assert [(f["name"], f["type"]) for f in fields] == [
            (c.name, FIELD_TYPES[c.type]) for c in table.columns
        ]
        assert all(f["description"] for f in fields)
    # Frictionless reads CSV and JSON (Parquet needs a plugin; checked below with polars)
    checked = [r for r in tabular if r["format"] in ("csv", "json")]
    errors, validated = [], 0
    for resource in checked:
        if resource["format"] == "json":  # its JSON reader counts no bytes (checked above)
            if json.loads((folder / resource["path"]).read_text(encoding="utf-8")) == []:
                continue  # and reads no table from an empty array; nothing to check in it
            resource = {k: v for k, v in resource.items() if k not in ("bytes", "hash")}
        report = frictionless.validate(frictionless.Resource(resource, basepath=str(folder)))
        errors += [f"{resource['name']}: {e.message}" for t in report.tasks for e in t.errors]
        assert report.stats["tasks"] == 1
        validated += 1
    assert errors == []
    assert validated > len(PUBLISHED)


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
