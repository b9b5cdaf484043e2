"""`bench registry unmatched` and `bench registry report`: the registry's review queue and
its quality figures, from the warehouse the last run left."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import duckdb

from bench_pipeline.core import settings

DEFAULT_GOLD = settings.REPO_ROOT / "tests" / "fixtures" / "registry_gold.csv"


@contextmanager
def _connection() -> Iterator[duckdb.DuckDBPyConnection]:
    from bench_pipeline.core.warehouse import connect, migrate

    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        yield conn


def unmatched(source: str | None, limit: int | None, out: TextIO | None = None) -> int:
    """Print the review queue: impostors held back, then unmatched listings, each with its
    nearest models and the alias-table line that would accept the first (to `out`, else the
    standard output at the time of the call)."""
    out = out or sys.stdout
    from bench_pipeline.registry.review import review_queue

    with _connection() as conn:
        items = review_queue(conn, source)
    held = sum(item.kind == "quarantined" for item in items)
    print(f"{held} quarantined, {len(items) - held} unmatched", file=out)
    for item in items[:limit] if limit else items:
        became = f" (became {item.became})" if item.became else ""
        print(f"\n[{item.kind}] {item.source} {item.key!r} {item.name!r}{became}", file=out)
        print(f"  why: {item.reason}", file=out)
        print(f"  nearest: {', '.join(item.nearest) or '(none)'}", file=out)
        if item.kind == "unmatched":
            print(f"  accept (sources/aliases.toml [accept]): {item.accept_line()}", file=out)
    return 0


def report(gold: Path, out: TextIO | None = None) -> int:
    """Print precision and recall on the gold file, where the ranked index models sit, and
    the dated-snapshot and family-name merges the registry refused; exit 1 when a must-not
    pair was merged."""
    out = out or sys.stdout
    from bench_pipeline.registry.review import (
        index_placement,
        load_gold,
        refused_merges,
        score_gold,
    )

    with _connection() as conn:
        score = score_gold(conn, load_gold(gold))
        placement = index_placement(conn)
        refused = refused_merges(conn)
    pairs = score.true_positives + score.missed
    print(f"gold file: {gold}", file=out)
    print(
        f"precision {score.precision:.1%} ({score.true_positives} right, "
        f"{score.false_positives} wrong merges); recall {score.recall:.1%} "
        f"({score.true_positives} of {pairs} must-match pairs)",
        file=out,
    )
    for pair in score.must_not_merged:
        print(
            f"  MERGED must-not: {pair.source} {pair.key} -> {pair.model_id} ({pair.why})", file=out
        )
    for pair, found in score.wrong:
        print(f"  missed: {pair.source} {pair.key} -> {found}, wanted {pair.model_id}", file=out)
    for pair in score.unknown:
        print(f"  not in the warehouse: {pair.source} {pair.key}", file=out)
    print(
        f"ranked Known Good Index models: {placement.ranked}; on a priced canonical model: "
        f"{placement.priced} ({placement.priced_share:.1%}); on their OpenRouter id: "
        f"{placement.on_openrouter_id}",
        file=out,
    )
    for model_id in placement.openrouter_listed_elsewhere:
        print(f"  OpenRouter lists {model_id} under another id", file=out)
    for kind, title in (
        ("dated_snapshot", "dated-snapshot merges refused (a date is never dropped to match)"),
        ("family_name", "family-name merges refused (a family-level name is never a key)"),
    ):
        rows = [r for r in refused if r.kind == kind]
        print(f"{title}: {len(rows)}", file=out)
        for row in rows:
            print(
                f"  {row.source} {row.key}: not {row.would_join}, kept on {row.model_id}"
                f" ({row.reason})",
                file=out,
            )
    return 1 if score.must_not_merged else 0
