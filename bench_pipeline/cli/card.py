"""`bench card FILE`: the reporting card of any systems × items matrix file, without ingesting it.

The file is CSV (``.csv``) or Parquet (``.parquet``, ``.pq``), in one of two forms:

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

import csv
import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from bench_pipeline.cli.boards import table
from bench_pipeline.cli.terminal import safe
from bench_pipeline.scores.card import DRAWS, SEED, Card, CardRefused, card, matrix_from_cells

LONG_COLUMNS = ("system", "item", "score")


class MalformedFile(ValueError):
    """The file cannot be read as a matrix; the message names file, row and field."""


def _rows(path: Path) -> tuple[list[str], Iterator[tuple[str, list[Any]]]]:
    """The header and the rows of a CSV or Parquet file, each row with where it is
    (``line N`` of a CSV, ``row N`` of a Parquet file, counting data rows from 1)."""
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import polars as pl

        try:
            frame = pl.read_parquet(path)
        except Exception as error:  # polars raises many kinds on a damaged file
            raise MalformedFile(f"{path}: not a readable Parquet file ({error})") from None
        header = list(frame.columns)
        return header, (
            (f"row {number}", list(row)) for number, row in enumerate(frame.iter_rows(), 1)
        )
    if suffix != ".csv":
        raise MalformedFile(f"{path}: not a .csv or .parquet file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise MalformedFile(
            f"{path}: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    reader = csv.reader(text.splitlines())
    try:
        header = next(reader)
    except StopIteration:
        raise MalformedFile(f"{path}: empty file, no header") from None

    def rows() -> Iterator[tuple[str, list[Any]]]:
        for row in reader:
            if row:
                yield f"line {reader.line_num}", list(row)

    return header, rows()


def _score(value: Any, where: str, field: str) -> float | None:
    """A cell as a score; None when empty."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        number = float(value)
    else:
        text = str(value).strip()
        if not text:
            return None
        if text.lower() in ("true", "false"):
            return 1.0 if text.lower() == "true" else 0.0
        try:
            number = float(text)
        except ValueError:
            raise MalformedFile(
                f"{where}, field {field!r}: {text[:40]!r} is not a number"
            ) from None
    if not math.isfinite(number):
        raise MalformedFile(f"{where}, field {field!r}: {number} is not a finite number")
    return number


def _name(value: Any, where: str, field: str) -> str:
    text = "" if value is None else str(value).strip()
    if not text:
        raise MalformedFile(f"{where}, field {field!r}: empty")
    return text


def read_matrix(
    path: Path, groups_file: Path | None = None, group_by: str | None = None
) -> tuple[list[tuple[str, str, float]], dict[str, str] | None, int]:
    """The cells ``(system, item, score)`` of a matrix file (each once), its groups and the
    number of duplicated cells counted once.

    Raises:
        MalformedFile: Naming the file, the row and the field.
    """
    header, rows = _rows(path)
    names = [h.strip() for h in header]
    long_form = all(c in names for c in LONG_COLUMNS)
    seen: dict[tuple[str, str], tuple[float, str]] = {}
    groups: dict[str, str] = {}
    duplicates = 0

    def add(system: str, item: str, score: float, where: str, field: str) -> None:
        nonlocal duplicates
        earlier = seen.get((system, item))
        if earlier is None:
            seen[(system, item)] = (score, where)
        elif earlier[0] == score:
            duplicates += 1
        else:
            raise MalformedFile(
                f"{path}: {where}, field {field!r}: system {system!r} item {item!r} has score "
                f"{score:g} here and {earlier[0]:g} at {earlier[1]}"
            )

    if long_form:
        column = {c: names.index(c) for c in (*LONG_COLUMNS, "group") if c in names}
        for where, row in rows:
            at = f"{path}: {where}"
            if len(row) != len(names):
                raise MalformedFile(f"{at}: {len(row)} fields, the header has {len(names)}")
            system = _name(row[column["system"]], at, "system")
            item = _name(row[column["item"]], at, "item")
            score = _score(row[column["score"]], at, "score")
            if score is None:
                raise MalformedFile(f"{at}, field 'score': empty")
            add(system, item, score, where, "score")
            if "group" in column:
                group = _name(row[column["group"]], at, "group")
                if groups.setdefault(item, group) != group:
                    raise MalformedFile(
                        f"{at}, field 'group': item {item!r} is in group {group!r} here "
                        f"and {groups[item]!r} earlier"
                    )
    else:
        if len(names) < 2:
            raise MalformedFile(
                f"{path}: header: neither the long form (system, item, score) nor the wide "
                "form (a system column, then one column per item)"
            )
        items = names[1:]
        for position, item in enumerate(items, start=2):
            if not item:
                raise MalformedFile(f"{path}: header, column {position}: empty item id")
            if items.index(item) + 2 != position:
                raise MalformedFile(f"{path}: header, column {position}: item {item!r} twice")
        for where, row in rows:
            at = f"{path}: {where}"
            if len(row) != len(names):
                raise MalformedFile(f"{at}: {len(row)} fields, the header has {len(names)}")
            system = _name(row[0], at, names[0] or "system")
            for item, value in zip(items, row[1:], strict=True):
                score = _score(value, at, item)
                if score is not None:
                    add(system, item, score, where, item)
    if not seen:
        raise MalformedFile(f"{path}: no scores")
    cells = [(s, i, v) for (s, i), (v, _) in seen.items()]
    found = groups if long_form and "group" in names else None
    if groups_file is not None:
        found = _groups_from_file(groups_file)
    elif group_by is not None:
        found = _groups_by(group_by, sorted({i for _, i, _ in cells}), path)
    return cells, found, duplicates


def _groups_from_file(path: Path) -> dict[str, str]:
    header, rows = _rows(path)
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


def _groups_by(pattern: str, items: list[str], path: Path) -> dict[str, str]:
    try:
        rule = re.compile(pattern)
    except re.error as error:
        raise MalformedFile(f"--group-by {pattern!r}: not a regular expression ({error})") from None
    groups = {}
    for item in items:
        match = rule.search(item)
        if match is None:
            raise MalformedFile(f"{path}: item {item!r}: --group-by {pattern!r} does not match")
        groups[item] = match.group(1) if rule.groups else match.group(0)
    return groups


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
