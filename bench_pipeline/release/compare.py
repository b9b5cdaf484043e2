"""Compare two release folders table by table, for a person: `python -m
bench_pipeline.release.compare OLD_RELEASE_DIR NEW_RELEASE_DIR [--json]`.

Built on the release diff (`diff.py`: rows added and removed by key, values changed, rank
moves, lineage never compared), plus what the diff does not cover: each table's title, key
and row count, its columns added and removed, and whether the release has a `schema.json`.
Exit status 0 when the two publish the same content, 1 when anything differs, 2 on unusable
input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench_pipeline.release.diff import MANIFEST, diff_releases, load_manifest
from bench_pipeline.release.schema import SCHEMA


def _columns(release: Path, entry: dict[str, Any]) -> list[str]:
    rows = json.loads((release / entry["files"]["json"]["path"]).read_text("utf-8"))
    return list(rows[0]) if rows else []


def compare_releases(old: Path, new: Path) -> dict[str, Any]:
    """Every difference between the releases in `old` and `new`, table by table.

    Returns:
        `{"from", "to", "schema": {"old", "new"}, "tables": {name: {...}}}`; a table entry
        lists only what differs (an empty entry: the table is the same).
    """
    diff = diff_releases(old, new)
    old_entries = {e["name"]: e for e in load_manifest(old)["tables"]}
    new_entries = {e["name"]: e for e in load_manifest(new)["tables"]}
    tables: dict[str, Any] = {}
    for name in sorted(set(old_entries) | set(new_entries)):
        if name not in old_entries or name not in new_entries:
            tables[name] = {"table": "added" if name in new_entries else "removed"}
            continue
        before, after, changes = old_entries[name], new_entries[name], diff["tables"][name]
        found: dict[str, Any] = {}
        for field in ("title", "key", "rows"):
            if before.get(field) != after.get(field):
                found[field] = {"old": before.get(field), "new": after.get(field)}
        old_columns, new_columns = _columns(old, before), _columns(new, after)
        added = [c for c in new_columns if c not in old_columns]
        removed = [c for c in old_columns if c not in new_columns]
        if added or removed:
            found["columns"] = {"added": added, "removed": removed}
        for field in ("rows_added", "rows_removed", "changed", "rank_moves"):
            if changes.get(field):
                found[field] = changes[field]
        tables[name] = found
    return {
        "from": diff["from"],
        "to": diff["to"],
        "schema": {"old": (old / SCHEMA).is_file(), "new": (new / SCHEMA).is_file()},
        "tables": tables,
    }


def _lines(result: dict[str, Any]) -> list[str]:
    lines = [f"{result['from']} -> {result['to']}"]
    schema = result["schema"]
    if schema["old"] != schema["new"]:
        lines.append(f"schema.json: {'added' if schema['new'] else 'removed'}")
    for name, found in result["tables"].items():
        if not found:
            lines.append(f"{name}: same")
            continue
        lines.append(f"{name}:")
        if "table" in found:
            lines.append(f"  table {found['table']}")
        lines.extend(
            f"  {field}: {found[field]['old']!r} -> {found[field]['new']!r}"
            for field in ("title", "key", "rows")
            if field in found
        )
        if "columns" in found:
            columns = found["columns"]
            lines.append(f"  columns added {columns['added']}, removed {columns['removed']}")
        lines.extend(
            f"  {field.replace('_', ' ')}: {len(found[field])}"
            for field in ("rows_added", "rows_removed")
            if field in found
        )
        if "changed" in found:
            by_column = Counter(c["column"] for c in found["changed"])
            shown = ", ".join(f"{column} x{n}" for column, n in sorted(by_column.items()))
            lines.append(f"  values changed: {len(found['changed'])} ({shown})")
            lines.extend(
                f"    {c['key']} {c['column']}: {c['old']!r} -> {c['new']!r}"
                for c in found["changed"][:5]
            )
        if "rank_moves" in found:
            lines.append(f"  rank moves: {len(found['rank_moves'])}")
            for move in found["rank_moves"][:5]:
                column = f" {move['column']}" if "column" in move else ""
                lines.append(f"    {move['key']}{column}: {move['old_rank']} -> {move['new_rank']}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Compare two releases table by table.")
    parser.add_argument("old", type=Path, help="the older release folder")
    parser.add_argument("new", type=Path, help="the newer release folder")
    parser.add_argument("--json", action="store_true", help="print every difference as JSON")
    args = parser.parse_args(argv)
    for folder in (args.old, args.new):
        if not (folder / MANIFEST).is_file():
            sys.stderr.write(f"{folder}: no {MANIFEST}, not a release folder\n")
            return 2
    result = compare_releases(args.old, args.new)
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=1, default=str) + "\n")
    else:
        sys.stdout.write("\n".join(_lines(result)) + "\n")
    same = result["schema"]["old"] == result["schema"]["new"] and not any(result["tables"].values())
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
