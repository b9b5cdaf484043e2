"""`python -m bench_pipeline.release.compare OLD NEW`: two releases, table by table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from synthetic import synthetic_tables, write_release

from bench_pipeline.release.compare import compare_releases, main


def _pair(root: Path) -> tuple[Path, Path]:
    tables = synthetic_tables(6)
    old = write_release(root, "r-old", tables, created_at="2025-06-01T06:00:00Z")
    changed = json.loads(json.dumps(tables))
    changed["market"][0]["price_flag"] = "models.dev differs by 5%"
    changed["models"].append({"model_id": "new/m", "name": "New", "organization": "New",
                              "origin_source": "openrouter"})  # fmt: skip
    for row in changed["arena_elo"]:
        row.pop("votes")
    new = write_release(root, "r-new", changed, created_at="2025-06-02T06:00:00Z")
    return old, new


def test_every_difference_is_listed_table_by_table(tmp_path: Path) -> None:
    old, new = _pair(tmp_path)
    result = compare_releases(old, new)
    tables = result["tables"]
    first = json.loads((old / "data" / "market.json").read_text())[0]
    assert tables["market"]["changed"] == [{
        "key": {"model_id": first["model_id"]}, "column": "price_flag",
        "old": first["price_flag"], "new": "models.dev differs by 5%", "lineage": {},
    }]  # fmt: skip
    assert tables["models"]["rows_added"] == [{"model_id": "new/m"}]
    assert tables["models"]["rows"]["new"] == tables["models"]["rows"]["old"] + 1
    assert tables["arena_elo"]["columns"] == {"added": [], "removed": ["votes"]}
    same = {name for name, found in tables.items() if not found}
    assert same == set(tables) - {"market", "models", "arena_elo"}
    assert compare_releases(old, old)["tables"] == {name: {} for name in tables}


def test_the_command_prints_a_summary_and_says_by_its_status(tmp_path: Path, capsys) -> None:
    old, new = _pair(tmp_path)
    assert main([str(old), str(old)]) == 0
    assert main([str(old), str(new)]) == 1
    printed = capsys.readouterr().out
    assert "market:\n  values changed: 1 (price_flag x1)" in printed
    assert "arena_elo:\n  columns added [], removed ['votes']" in printed
    process = subprocess.run(
        [sys.executable, "-m", "bench_pipeline.release.compare", str(old), str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert process.returncode == 2
    assert f"{tmp_path}: no manifest.json, not a release folder" in process.stderr
