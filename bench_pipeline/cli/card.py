"""`bench card FILE`: the reporting card of any systems × items matrix file, without ingesting it.

The file is CSV (``.csv``) or Parquet (``.parquet``, ``.pq``), in one of two forms (or an
inspect_ai ``.eval`` log, one system; see `ingest.item_matrix`, where the readers live):

* long: columns ``system``, ``item``, ``score`` (and optionally ``group``; other columns such
  as ``cost_usd`` or ``date`` are ignored), one row per result;
* wide: the first column names the system (its header may be empty), every other column is an
  item id; an empty cell is a missing result, never 0.

Scores are numbers (``true``/``false`` read as 1/0). A result given twice with the same score
counts once, and the card says how many were; given twice with different scores, the file is
refused. Groups come from the long form's ``group`` column, from ``--groups FILE`` (columns
``item``, ``group``) or from ``--group-by REGEX`` (its first capture group in the item id, or
the whole match). A malformed file is one line naming the file, the row and the field, and
exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from bench_pipeline.cli.boards import table
from bench_pipeline.cli.terminal import safe
from bench_pipeline.ingest.item_matrix import (
    Cell,
    MalformedFile,
    conflict_reason,
    deduplicated,
    groups_by,
    read_file,
    table_rows,
)
from bench_pipeline.scores.card import DRAWS, SEED, Card, CardRefused, card, matrix_from_cells


def problem_text(cell: Cell) -> str:
    """A cell's problem as one line naming the file, the record and the field."""
    if cell.field == "record":
        return f"{cell.file}: {cell.where}: {cell.problem}"
    return f"{cell.at}: {cell.problem}"


def read_matrix(
    path: Path, groups_file: Path | None = None, group_by: str | None = None
) -> tuple[list[tuple[str, str, float]], dict[str, str] | None, int]:
    """The cells ``(system, item, score)`` of a matrix file (each once), its groups and the
    number of duplicated cells counted once (`ingest.item_matrix`, the readers the per-item
    results source uses too).

    Raises:
        MalformedFile: Naming the file, the row and the field.
    """
    read = read_file(str(path), path.read_bytes())
    for cell in read.cells:
        if cell.problem is not None:
            raise MalformedFile(problem_text(cell))
    found = deduplicated(read.cells)
    if found.conflicts:
        cell, earlier = found.conflicts[0]
        raise MalformedFile(f"{cell.at}: {conflict_reason(cell, earlier)}")
    if not found.cells:
        raise MalformedFile(f"{path}: no scores")
    cells = [(str(c.system), str(c.item), float(c.score or 0.0)) for c in found.cells]
    groups: dict[str, str] | None = None
    if read.form == "long" and any(c.group is not None for c in read.cells):
        groups = {}
        for c in found.cells:
            assert c.item is not None and c.group is not None
            if groups.setdefault(c.item, c.group) != c.group:
                raise MalformedFile(
                    f"{c.file}: {c.where}, field 'group': item {c.item!r} is in group "
                    f"{c.group!r} here and {groups[c.item]!r} earlier"
                )
    if groups_file is not None:
        groups = _groups_from_file(groups_file)
    elif group_by is not None:
        try:
            groups = groups_by(group_by, sorted({i for _, i, _ in cells}))
        except ValueError as error:
            raise MalformedFile(f"{path}: --group-by {error}") from None
    return cells, groups, len(found.repeats)


def _groups_from_file(path: Path) -> dict[str, str]:
    header, rows = table_rows(str(path), path.read_bytes())
    names = [h.strip() for h in header]
    if "item" not in names or "group" not in names:
        raise MalformedFile(f"{path}: header: a groups file has columns item, group")
    item_at, group_at = names.index("item"), names.index("group")
    groups: dict[str, str] = {}
    for where, row in rows:
        at = f"{path}: {where}"
        item, group = _name(row[item_at], at, "item"), _name(row[group_at], at, "group")
        if groups.setdefault(item, group) != group:
            raise MalformedFile(f"{at}, field 'group': item {item!r} is in two groups")
    return groups


def _name(value: Any, where: str, field: str) -> str:
    text = "" if value is None else str(value).strip()
    if not text:
        raise MalformedFile(f"{where}, field {field!r}: empty")
    return text


def card_json(computed: Card) -> dict[str, Any]:
    """The card as `bench card --json` prints it: the command and software first."""
    return {"command": computed.command, "software": computed.software, **computed.to_json()}


def _range(low: int | None, high: int | None) -> str:
    if low is None or high is None:
        return "–"
    return str(low) if low == high else f"{low}–{high}"


def _resolution(computed: Card) -> list[str]:
    found = computed.resolution
    if found is None:
        return []

    def gap(value: float | None) -> str:
        if value is None:
            return "no gap tried"
        if computed.data_type == "binary":
            return f"{100 * value:.1f} points"
        return f"{value:.4g} (score units)"

    return [
        f"resolution: separated half the time: {gap(found.gap_50)}; four times in five: "
        f"{gap(found.gap_80)} ({found.replicates} simulated pairs, {found.test} "
        f"p ≤ {found.threshold:.3g})"
    ]


def text(computed: Card) -> str:
    """The card for a person: the board's figures, then one row per entry."""
    tiers, discord = computed.tiers, computed.discordance
    share = computed.established_share
    lines = [
        f"{computed.systems} systems × {computed.items} items ({computed.data_type}), "
        f"sha256 {computed.matrix_sha256}",
        f"pairs established: {computed.pairs_established} of {computed.pairs_total}"
        + ("" if share is None else f" ({100 * share:.1f}%, Holm at {computed.alpha:g})"),
        f"tiers: {tiers.height} (longest chain of established pairs); "
        f"largest set of systems not separated: {tiers.largest_antichain}",
        f"adjacent pairs (neighbours by score) not established apart: "
        f"{computed.adjacent_undecided} of {computed.adjacent_pairs}",
        "discordance: "
        + ("–" if discord.mean_carrying_items is None else f"{discord.mean_carrying_items:.1f}")
        + " carrying items a pair; top decile ("
        + f"{discord.top_decile_systems} systems): "
        + (
            "–"
            if discord.top_decile_mean_carrying_items is None
            else f"{discord.top_decile_mean_carrying_items:.1f}"
        ),
        f"rank sets: {computed.draws} paired bootstrap draws over items, seed {computed.seed}",
        *_resolution(computed),
        *computed.notes,
    ]
    grouped = computed.groups is not None
    headers = ["system", "score", "items", "Holm rank", "tier", "rank set"]
    if grouped:
        headers.append(f"rank set ({computed.groups} groups)")
    rows = []
    for e in computed.entries:
        row = [e.system, f"{e.score:.4g}", str(e.items), _range(e.rank_best, e.rank_worst),
               str(e.tier), _range(e.rank_set_low, e.rank_set_high)]  # fmt: skip
        if grouped:
            row.append(_range(e.group_rank_set_low, e.group_rank_set_high))
        rows.append(row)
    return "\n".join([*lines, "", table(headers, rows)])


def run(
    path: Path,
    groups_file: Path | None,
    group_by: str | None,
    as_json: bool,
    draws: int = DRAWS,
    seed: int = SEED,
    out: TextIO | None = None,
) -> int:
    """Print the card of the matrix in `path`; 2 on a malformed file, 1 when a self-check
    refuses the card."""
    out = out or sys.stdout
    try:
        cells, groups, duplicates = read_matrix(path, groups_file, group_by)
        matrix = matrix_from_cells(cells, groups, duplicates)
    except MalformedFile as problem:
        print(f"bench card: {problem}", file=safe(out))
        return 2
    except ValueError as problem:  # an item without a group
        print(f"bench card: {path}: {problem}", file=safe(out))
        return 2
    except OSError as problem:
        print(f"bench card: {path}: cannot be read ({problem.strerror or problem})", file=out)
        return 2
    command = "bench card"
    if groups_file is not None:
        command += " --groups FILE"
    if group_by is not None:
        command += f" --group-by {group_by}"
    command += f" --draws {draws} --seed {seed}"
    try:
        computed = card(matrix, draws=draws, seed=seed, command=command)
    except CardRefused as refused:
        print(f"bench card: refused, nothing printed: {refused}", file=safe(out))
        return 1
    except ValueError as problem:
        print(f"bench card: {path}: {problem}", file=safe(out))
        return 2
    if as_json:
        print(json.dumps(card_json(computed), indent=2), file=out)
    else:
        print(text(computed), file=safe(out))
    return 0
