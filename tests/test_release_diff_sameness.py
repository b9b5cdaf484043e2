"""The release diff, which reads no table whose JSON file has the same digest in both
releases and no new table but `models`, says what the earlier diff (every table read in both
releases) said, on random releases: tables kept, changed, added and removed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from earlier_release import earlier_diff
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.release.diff import MANIFEST, diff_releases

pytestmark = pytest.mark.unit

NAMES = ("models", "market", "pairs")
values = st.none() | st.integers(0, 3) | st.sampled_from(["a", "b", "é"])
table_rows = st.dictionaries(st.sampled_from(["m1", "m2", "m3", "m4"]), values, max_size=4)
release = st.dictionaries(st.sampled_from(NAMES), table_rows, max_size=3)


def write_release(folder: Path, release_id: str, tables: dict[str, dict[str, Any]]) -> None:
    """A release folder: each table's rows as JSON (key `model_id`) and its manifest."""
    (folder / "data").mkdir(parents=True)
    entries = []
    for name, rows in tables.items():
        records = [{"model_id": k, "value": v, "run": f"{release_id}-{k}"} for k, v in rows.items()]
        raw = json.dumps(records).encode()
        (folder / "data" / f"{name}.json").write_bytes(raw)
        entries.append(
            {
                "name": name,
                "rows": len(records),
                "key": ["model_id"],
                "ranks": [],
                "lineage": ["run"] if name == "market" else [],
                "files": {"json": {"path": f"data/{name}.json",
                                   "sha256": hashlib.sha256(raw).hexdigest()}},
            }
        )  # fmt: skip
    manifest = {"release_id": release_id, "tables": entries, "source_runs": []}
    (folder / MANIFEST).write_text(json.dumps(manifest))


@settings(max_examples=80, deadline=None)
@given(release, release, st.booleans())
def test_diff_is_the_earlier_diff(
    tmp_path_factory: pytest.TempPathFactory,
    old: dict[str, dict[str, Any]],
    new: dict[str, dict[str, Any]],
    first: bool,
) -> None:
    root = tmp_path_factory.mktemp("releases")
    write_release(root / "new", "rnew", new)
    old_dir = None
    if not first:
        old_dir = root / "old"
        write_release(old_dir, "rold", old)
    ours = diff_releases(old_dir, root / "new")
    # the upstream changes are new (`release/upstream.py`); these releases name no source run
    assert ours.pop("upstream", []) == []
    assert ours == earlier_diff(old_dir, root / "new")
