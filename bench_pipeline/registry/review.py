"""The registry's review queue and its quality report, read from the warehouse.

The queue is what a person works from: every listing that matched no model
(`unmatched_models`) and every catalogue listing held back as an impostor
(`quarantined_models`), each with the nearest published models. Accepting a match is one
line in the `[accept]` table of `sources/aliases.toml`, which the queue prints ready to paste.
"""

from __future__ import annotations

import csv
import difflib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import duckdb

from bench_pipeline.registry.text import normalise_name

NEAREST = 3


@dataclass(frozen=True)
class ReviewItem:
    kind: str  # "unmatched" or "quarantined"
    source: str
    key: str
    name: str | None
    reason: str
    became: str | None  # the new model an unmatched listing became, if any
    nearest: tuple[str, ...]

    def accept_line(self) -> str:
        """The alias-table line that makes the nearest model this listing's model, for a
        person to check and complete (who, when, why) before pasting: the loader refuses
        it while a field is left as written here."""
        target = self.nearest[0] if self.nearest else "MODEL_ID"
        return (
            f'"{self.source}:{self.key}" = {{ model_id = "{target}", reviewed_by = "", '
            f'reviewed_on = "YYYY-MM-DD", why = "" }}'
        )


def review_queue(conn: duckdb.DuckDBPyConnection, source: str | None = None) -> list[ReviewItem]:
    """Quarantined impostors first (they are hostile until shown otherwise), then unmatched
    listings by source and key, each with its nearest models within its lab."""
    models = conn.execute("SELECT model_id, name, lab FROM models").fetchall()
    by_lab: dict[str | None, list[tuple[str, str]]] = defaultdict(list)
    for model_id, name, lab in models:
        by_lab[lab].append((normalise_name(name), model_id))
    everyone = [pair for pairs in by_lab.values() for pair in pairs]
    items = [
        ReviewItem("quarantined", s, k, n, reason, None, (resembles,))
        for s, k, n, resembles, reason in conn.execute(
            "SELECT source, source_key, name, resembles, reason FROM quarantined_models "
            "WHERE ? IS NULL OR source = ? ORDER BY source, source_key",
            [source, source],
        ).fetchall()
    ]
    for s, k, n, normalised, model_id, reason, lab in conn.execute(
        "SELECT source, source_key, name, normalised_name, model_id, reason, lab "
        "FROM unmatched_models WHERE ? IS NULL OR source = ? ORDER BY source, source_key",
        [source, source],
    ).fetchall():
        pool = [p for p in by_lab.get(lab, everyone) if p[1] != model_id] if lab else everyone
        items.append(ReviewItem("unmatched", s, k, n, reason, model_id,
                                _nearest(normalised, pool)))  # fmt: skip
    return items


def _nearest(normalised: str, pool: list[tuple[str, str]]) -> tuple[str, ...]:
    names = [name for name, _ in pool]
    close = difflib.get_close_matches(normalised, names, n=NEAREST, cutoff=0.6)
    ids: dict[str, None] = {}
    for name in close:
        for candidate, model_id in pool:
            if candidate == name:
                ids.setdefault(model_id)
    return tuple(list(ids)[:NEAREST])


@dataclass(frozen=True)
class RefusedMerge:
    source: str
    key: str
    model_id: str | None
    would_join: str
    kind: str
    reason: str


def refused_merges(conn: duckdb.DuckDBPyConnection) -> list[RefusedMerge]:
    """The dated-snapshot and family-name merges the registry refused, by kind, source, key."""
    rows = conn.execute(
        "SELECT source, source_key, model_id, would_join, kind, reason FROM refused_merges "
        "ORDER BY kind, source, source_key"
    ).fetchall()
    return [RefusedMerge(*row) for row in rows]


@dataclass(frozen=True)
class GoldPair:
    source: str
    key: str
    model_id: str
    expect: str  # "match" or "not"
    why: str


def load_gold(path: Path) -> list[GoldPair]:
    """The hand-labelled pairs (`source,key,model_id,expect,why`)."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    pairs = []
    for number, row in enumerate(rows, start=2):
        if row.get("expect") not in ("match", "not"):
            raise ValueError(f"{path}: line {number}: expect must be match or not")
        pairs.append(GoldPair(row["source"], row["key"], row["model_id"], row["expect"],
                              row.get("why", "")))  # fmt: skip
    return pairs


@dataclass(frozen=True)
class GoldScore:
    """Precision and recall of the registry's matches on the gold pairs.

    A match pair found is a true positive; a must-not pair merged, or a match pair put on
    some other existing model, is a false positive; a match pair not found is missed.
    """

    true_positives: int
    false_positives: int
    missed: int
    must_not_merged: tuple[GoldPair, ...]
    wrong: tuple[tuple[GoldPair, str | None], ...]
    unknown: tuple[GoldPair, ...]

    @property
    def precision(self) -> float:
        judged = self.true_positives + self.false_positives
        return self.true_positives / judged if judged else 1.0

    @property
    def recall(self) -> float:
        wanted = self.true_positives + self.missed
        return self.true_positives / wanted if wanted else 1.0


def _rows(conn: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return conn.execute(sql).fetchall()


def score_gold(conn: duckdb.DuckDBPyConnection, pairs: list[GoldPair]) -> GoldScore:
    """Score the registry in the warehouse against the gold pairs."""
    aliases = {
        (s, k): m
        for s, k, m in _rows(conn, "SELECT source, source_key, model_id FROM model_aliases")
    }
    listed = set(aliases)
    listed |= set(_rows(conn, "SELECT source, source_key FROM quarantined_models"))
    listed |= set(_rows(conn, "SELECT source, source_key FROM unmatched_models"))
    origins = {
        m: (s, k)
        for m, s, k in _rows(conn, "SELECT model_id, origin_source, origin_key FROM models")
    }
    tp = fp = missed = 0
    merged, wrong, unknown = [], [], []
    for pair in pairs:
        if (pair.source, pair.key) not in listed:
            unknown.append(pair)
            continue
        found = aliases.get((pair.source, pair.key))
        if pair.expect == "match":
            if found == pair.model_id:
                tp += 1
            else:
                missed += 1
                wrong.append((pair, found))
                # on another listing's model: a wrong merge; on a model of its own: missed
                fp += found is not None and origins.get(found) != (pair.source, pair.key)
        elif found == pair.model_id:
            fp += 1
            merged.append(pair)
    return GoldScore(tp, fp, missed, tuple(merged), tuple(wrong), tuple(unknown))


@dataclass(frozen=True)
class IndexPlacement:
    ranked: int
    priced: int
    on_openrouter_id: int
    openrouter_listed_elsewhere: tuple[str, ...]

    @property
    def priced_share(self) -> float:
        return self.priced / self.ranked if self.ranked else 0.0


PLACEMENT_SQL = """
SELECT k.model_id, m.blended_price_usd_per_1m IS NOT NULL AS priced,
       k.model_id IN (SELECT model_id FROM openrouter_models) AS on_openrouter
FROM known_good_index k LEFT JOIN market m USING (model_id)
WHERE k.known_good_index IS NOT NULL
ORDER BY k.model_id
"""

# Ranked models not on an OpenRouter id, and OpenRouter's listings of the same lab: a
# ranked model whose name (any of the lab's or a publisher's listings; a host's display name
# is loose, "Mistral-Large" for `mistral-large-2411`) is an OpenRouter listing's name sits in
# the wrong place.
ELSEWHERE_SQL = """
SELECT k.model_id, m.lab, a.name
FROM known_good_index k JOIN models m USING (model_id)
JOIN model_aliases a ON a.model_id = k.model_id AND a.name IS NOT NULL AND a.host IS NULL
WHERE k.known_good_index IS NOT NULL
  AND k.model_id NOT IN (SELECT model_id FROM openrouter_models)
"""
OPENROUTER_NAMES_SQL = """
SELECT m.lab, a.name FROM model_aliases a JOIN models m USING (model_id)
WHERE a.source = 'openrouter_models' AND a.name IS NOT NULL
"""


def index_placement(conn: duckdb.DuckDBPyConnection) -> IndexPlacement:
    """How many ranked Known Good Index models sit on a priced canonical model, how many on
    their OpenRouter id, and any that OpenRouter lists but that sit elsewhere."""
    rows = conn.execute(PLACEMENT_SQL).fetchall()
    listed = {(lab, normalise_name(n)) for lab, n in conn.execute(OPENROUTER_NAMES_SQL).fetchall()}
    elsewhere = tuple(
        sorted(
            {
                model_id
                for model_id, lab, name in conn.execute(ELSEWHERE_SQL).fetchall()
                if (lab, normalise_name(name)) in listed
            }
        )
    )
    return IndexPlacement(
        ranked=len(rows),
        priced=sum(bool(r[1]) for r in rows),
        on_openrouter_id=sum(bool(r[2]) for r in rows),
        openrouter_listed_elsewhere=elsewhere,
    )
