"""Release diffs, and releases made by `bench run` end to end: two fresh BENCH_HOMEs agree on
the release; one changed Epoch score makes a new release whose diff says exactly that."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import duckdb
import pytest
from stages import bench_env

from bench_pipeline.core import settings
from bench_pipeline.core.files import sha256_file
from bench_pipeline.indices.rules import KNOWN_GOOD_COMPONENTS
from bench_pipeline.release.diff import diff_table
from bench_pipeline.release.published import PUBLISHED_BY_NAME
from bench_pipeline.release.schema import RankRule
from bench_pipeline.release.verify import verify_release

pytestmark = pytest.mark.unit

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"

# ---------------------------------------------------------------- diff_table on small tables


def test_diff_reports_added_removed_and_changed_rows_with_lineage() -> None:
    old = [
        {"model_id": "a", "score": 1.0, "run": "r1"},
        {"model_id": "b", "score": 2.0, "run": "r1"},
        {"model_id": "c", "score": 3.0, "run": "r1"},
    ]
    new = [
        {"model_id": "a", "score": 1.0, "run": "r2"},  # only the lineage differs: no change
        {"model_id": "b", "score": 2.5, "run": "r2"},
        {"model_id": "d", "score": None, "run": "r2"},
    ]
    diff = diff_table(old, new, ["model_id"], (), ["run"])
    assert diff == {
        "rows_added": [{"model_id": "d"}],
        "rows_removed": [{"model_id": "c"}],
        "changed": [
            {
                "key": {"model_id": "b"},
                "column": "score",
                "old": 2.0,
                "new": 2.5,
                "lineage": {"run": "r2"},
            }
        ],
        "rank_moves": [],
    }


def test_rank_moves_read_the_published_rank_column_not_a_value_change() -> None:
    rule = RankRule("rank", "v")
    old = [{"m": "a", "v": 90.0, "rank": 1}, {"m": "b", "v": 80.0, "rank": 2}]
    new = [{"m": "b", "v": 95.0, "rank": 1}, {"m": "a", "v": 90.0, "rank": 2}]
    diff = diff_table(old, new, ["m"], [rule], [])
    assert diff["rank_moves"] == [
        {"key": {"m": "b"}, "old_rank": 2, "new_rank": 1},
        {"key": {"m": "a"}, "old_rank": 1, "new_rank": 2},
    ]
    assert [c["column"] for c in diff["changed"]] == ["v"]  # the rank is a move, not a change


def test_a_release_without_rank_columns_is_ranked_by_the_one_rule() -> None:
    rule = RankRule("rank", "v")
    old = [
        {"m": "a", "v": 90.0},
        {"m": "b", "v": 80.0},
        {"m": "c", "v": 70.0},
        {"m": "d", "v": None},
    ]
    new = [
        {"m": "c", "v": 95.0},
        {"m": "a", "v": 90.0},
        {"m": "b", "v": 80.0},
        {"m": "d", "v": None},
    ]
    moves = diff_table(old, new, ["m"], [rule], [])["rank_moves"]
    assert moves == [
        {"key": {"m": "c"}, "old_rank": 3, "new_rank": 1},
        {"key": {"m": "a"}, "old_rank": 1, "new_rank": 2},
        {"key": {"m": "b"}, "old_rank": 2, "new_rank": 3},
    ]
    # exact decimals published as text rank by value, not by spelling
    texts = diff_table(
        [{"m": "a", "v": "9.5"}, {"m": "b", "v": "10"}],
        [{"m": "a", "v": "10.5"}, {"m": "b", "v": "10"}],
        ["m"],
        [rule],
        [],
    )
    assert [(m["key"]["m"], m["old_rank"], m["new_rank"]) for m in texts["rank_moves"]] == [
        ("a", 2, 1),
        ("b", 1, 2),
    ]


# ---------------------------------------------------------------- `bench run` end to end


def bench_run(home: Path, snapshots: Path | None = None) -> subprocess.Popen:
    env = bench_env(home, snapshots)
    return subprocess.Popen(
        [sys.executable, "-m", "bench_pipeline.cli", "run"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process: subprocess.Popen) -> None:
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output


def latest(home: Path) -> Path:
    root = home / "build" / "releases"
    return root / (root / "latest").read_text()


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def rows(folder: Path, table: str) -> list[dict]:
    return json.loads((folder / "data" / f"{table}.json").read_text())


def hashes(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two fresh BENCH_HOMEs, each after one `bench run` on the recorded snapshots."""
    first, second = tmp_path_factory.mktemp("home1"), tmp_path_factory.mktemp("home2")
    processes = [bench_run(first), bench_run(second)]  # side by side: separate homes
    for process in processes:
        finish(process)
    return first, second


@pytest.mark.integration
def test_two_fresh_homes_publish_the_same_release(homes: tuple[Path, Path]) -> None:
    one, two = latest(homes[0]), latest(homes[1])
    assert one.name == two.name
    assert verify_release(one) == [] and verify_release(two) == []
    tables_one = {t["name"]: t for t in manifest(one)["tables"]}
    tables_two = {t["name"]: t for t in manifest(two)["tables"]}
    for name, table in tables_one.items():
        assert table["content_sha256"] == tables_two[name]["content_sha256"], name
        times = {"started_at", "finished_at", "observed_at", "drop_date", "published_at"}
        timed = times & set(table["lineage"])
        if not timed:  # everything but the tables that publish run times: the same bytes
            assert table["files"] == tables_two[name]["files"], name
    # the downloads are the latest release's CSV/JSON files
    downloads = homes[0] / "build" / "site" / "data"
    for name in tables_one:
        for fmt in ("csv", "json"):
            assert (downloads / f"{name}.{fmt}").read_bytes() == (
                one / "data" / f"{name}.{fmt}"
            ).read_bytes()


def pick_model(folder: Path, warehouse: Path) -> tuple[dict, float, float]:
    """An indexed model whose GPQA Diamond score comes from one row, lies strictly between
    the lowest and highest, and that a higher score would lift past the model above it.
    Returns its evaluation_scores row, its old score and the new score."""
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        cursor = conn.execute(
            "SELECT * FROM evaluation_scores WHERE evaluation_id = 'gpqa_diamond' "
            "AND rows_considered = 1 ORDER BY model_id"
        )
        names = [d[0] for d in cursor.description]
        single = {r[0]: dict(zip(names, r, strict=True)) for r in cursor.fetchall()}
        low, high = conn.execute(
            "SELECT min(score), max(score) FROM evaluation_scores "
            "WHERE evaluation_id = 'gpqa_diamond'"
        ).fetchone()
    ranked = [r for r in rows(folder, "known_good_index") if r["known_good_index"] is not None]
    for place, row in enumerate(ranked[1:], start=1):
        score = single.get(row["model_id"], {}).get("score")
        if score is None or not low < score < high:
            continue
        new_score = round(score + (high - score) / 2, 4)
        held = {c: row[c] for c in KNOWN_GOOD_COMPONENTS if row[c] is not None}
        held["gpqa_diamond"] = (new_score - low) / (high - low)
        components = list(held.values())
        predicted = Decimal(str(100 * sum(components) / len(components)))
        predicted = float(predicted.quantize(Decimal("0.01"), ROUND_HALF_UP))
        if predicted > ranked[place - 1]["known_good_index"]:
            return single[row["model_id"]], score, new_score
    raise AssertionError("no model fits")


def change_score(snapshots: Path, row_key: str, new_score: float) -> None:
    """Rewrite one record of gpqa_diamond.csv, every other byte as it was."""
    path = snapshots / "epoch" / "gpqa_diamond.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    (index,) = [i for i, line in enumerate(lines) if f",{row_key}" in line]
    record = next(csv.reader([lines[index]]))
    assert record[header.index("id")] == row_key
    record[header.index("mean_score")] = repr(new_score / 100)
    out = io.StringIO()
    csv.writer(out, lineterminator=lines[index][len(lines[index].rstrip("\r\n")) :]).writerow(
        record
    )
    lines[index] = out.getvalue()
    path.write_text("".join(lines), encoding="utf-8")


@pytest.mark.integration
def test_one_changed_score_makes_a_release_whose_diff_says_exactly_that(
    homes: tuple[Path, Path], tmp_path: Path
) -> None:
    home = homes[0]
    old = latest(home)
    old_hashes = hashes(old)
    model, old_score, new_score = pick_model(old, home / "warehouse" / "bench.duckdb")
    model_id = model["model_id"]
    snapshots = tmp_path / "snapshots"
    shutil.copytree(SNAPSHOTS, snapshots)
    change_score(snapshots, model["row_key"], new_score)

    finish(bench_run(home, snapshots))

    new = latest(home)
    assert new.name != old.name
    assert hashes(old) == old_hashes and verify_release(old) == []  # the old one untouched
    assert verify_release(new) == []
    assert not [p for p in new.parent.iterdir() if "partial" in p.name]
    assert manifest(new)["previous_release_id"] == old.name
    diff = json.loads((new / "diff.json").read_text())
    assert (diff["from"], diff["to"]) == (old.name, new.name)
    assert diff["models_added"] == [] and diff["models_removed"] == []

    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        epoch_run = conn.execute(
            "SELECT run_id, content_sha256, finished_at, status FROM source_runs "
            "WHERE source = 'epoch' ORDER BY finished_at DESC LIMIT 1"
        ).fetchone()
        releases = conn.execute("SELECT release_id FROM releases ORDER BY created_at").fetchall()
    assert releases == [(old.name,), (new.name,)]
    assert [r["run_id"] for r in diff["caused_by"]["source_runs"]] == [epoch_run[0]]
    assert diff["caused_by"]["case_versions"] == []
    # in the publisher's terms: Epoch changed one score, on the date of its data
    assert [(u["kind"], u["source"], u["row_key"], u["old"]) for u in diff["upstream"]] == [
        ("score_changed", "epoch", model["row_key"], old_score)
    ]
    assert diff["upstream"][0]["new"] == pytest.approx(new_score)
    epoch_dated = next(r for r in manifest(new)["source_runs"] if r["source"] == "epoch")
    assert diff["upstream"][0]["data_as_of"] == epoch_dated["data_as_of"] is not None

    tables = diff["tables"]
    for name, table in tables.items():
        assert table["rows_added"] == [] and table["rows_removed"] == [], name

    # the evaluation value itself, with the run it came from
    lineage = tables["index_lineage"]["changed"]
    assert {(c["key"]["model_id"], c["key"]["evaluation_id"]) for c in lineage} == {
        (model_id, "gpqa_diamond")
    }
    score_change = next(c for c in lineage if c["column"] == "score")
    assert (score_change["old"], score_change["new"]) == (old_score, pytest.approx(new_score))
    assert score_change["lineage"]["source_run_id"] == epoch_run[0]
    assert {c["column"] for c in lineage} == {"score", "normalised"}

    # the model's index, and nothing else in the index tables
    known_good = tables["known_good_index"]["changed"]
    assert {c["key"]["model_id"] for c in known_good} == {model_id}
    # its interval moves with its value (the scale, set by the field, is unchanged)
    columns = {c["column"] for c in known_good}
    assert {"gpqa_diamond", "known_good_index"} <= columns
    assert columns <= {"gpqa_diamond", "known_good_index", "known_good_index_low",
                       "known_good_index_high"}  # fmt: skip
    index_change = next(c for c in known_good if c["column"] == "known_good_index")
    assert index_change["new"] > index_change["old"]
    assert {c["key"]["model_id"] for c in tables["capability_indices"]["changed"]} == {model_id}

    # rank moves: the model climbs, and each model it passed drops one place
    moves = {
        m["key"]["model_id"]: (m["old_rank"], m["new_rank"])
        for m in tables["known_good_index"]["rank_moves"]
    }
    old_rank, new_rank = moves.pop(model_id)
    assert new_rank < old_rank
    assert sorted(moves.values()) == [(r, r + 1) for r in range(new_rank, old_rank)]

    # the source run bookkeeping: only Epoch's payload changed
    assert [(c["key"], c["column"]) for c in tables["source_runs"]["changed"]] == [
        ({"source": "epoch"}, "content_sha256")
    ]
    # Epoch's own row, as published: its score and nothing else
    published = tables["epoch_scores"]["changed"]
    assert [(c["key"]["row_key"], c["column"]) for c in published] == [(model["row_key"], "score")]
    untouched = set(PUBLISHED_BY_NAME) - {
        "index_lineage",
        "known_good_index",
        "capability_indices",
        "source_runs",
        "epoch_scores",
    }
    for name in untouched:
        assert tables[name]["changed"] == [] and tables[name]["rank_moves"] == [], name
