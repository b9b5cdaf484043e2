"""The Known Good Index on the recorded Epoch AI snapshot, recomputed by hand from the CSVs.

The recomputation below uses only the raw CSV rows, the evaluation mapping and the registry's
name matching; normalisation, eligibility, averaging and rounding are redone in plain Python.
"""

import csv
from decimal import ROUND_HALF_UP, Decimal

import pytest

from bench_pipeline.core import settings
from bench_pipeline.ingest.catalog import evaluations

pytestmark = pytest.mark.assets

EPOCH = settings.REPO_ROOT / "sources" / "snapshots" / "epoch"
SIX = ("gpqa_diamond", "math_aime", "swe_bench_verified", "livebench", "terminal_bench", "hle")
CODING = ("swe_bench_verified", "livebench", "terminal_bench")


def best_scores_from_csv(aliases: dict[str, str]) -> dict[tuple[str, str], float]:
    best: dict[tuple[str, str], float] = {}
    for spec in evaluations():
        with (EPOCH / spec.file).open(newline="", encoding="utf-8-sig") as handle:
            for row in csv.DictReader(handle):
                version, raw = row["Model version"], row[spec.score_column]
                if not version or not raw:
                    continue
                key = (aliases[version], spec.id)
                value = float(raw) * spec.scale
                if key not in best:
                    best[key] = value
                elif spec.direction == "higher":
                    best[key] = max(best[key], value)
                else:
                    best[key] = min(best[key], value)
    return best


def hand_index(best: dict[tuple[str, str], float]) -> dict[str, float | None]:
    normalised = {}
    for evaluation in SIX:
        holders = {m: v for (m, e), v in best.items() if e == evaluation}
        low, high = min(holders.values()), max(holders.values())
        for model, value in holders.items():
            normalised[(model, evaluation)] = 0.5 if high == low else (value - low) / (high - low)
    index = {}
    for model in {m for m, _ in normalised}:
        held = {e: normalised[(model, e)] for e in SIX if (model, e) in normalised}
        eligible = "gpqa_diamond" in held and "math_aime" in held and any(c in held for c in CODING)
        mean = sum(Decimal(repr(v)) for v in held.values()) * 100 / len(held)
        index[model] = float(mean.quantize(Decimal("0.01"), ROUND_HALF_UP)) if eligible else None
    return index


@pytest.fixture(scope="module")
def by_hand(recorded_warehouse) -> dict[str, float | None]:
    aliases = dict(
        recorded_warehouse.execute(
            "SELECT source_key, model_id FROM model_aliases WHERE source = 'epoch'"
        ).fetchall()
    )
    return hand_index(best_scores_from_csv(aliases))


def test_three_values_recomputed_by_hand(recorded_warehouse, by_hand) -> None:
    for model in ("anthropic/claude-opus-4.6", "openai/gpt-5.4", "z-ai/glm-5"):
        stored = recorded_warehouse.execute(
            "SELECT known_good_index FROM known_good_index WHERE model_id = ?", [model]
        ).fetchone()[0]
        assert stored == by_hand[model], model


def test_eligible_count_and_top_ten_match_the_hand_computation(recorded_warehouse, by_hand):
    stored = recorded_warehouse.execute(
        "SELECT model_id, known_good_index FROM known_good_index WHERE eligible "
        "ORDER BY known_good_index DESC, model_id LIMIT 10"
    ).fetchall()
    eligible = recorded_warehouse.execute(
        "SELECT count(*) FROM known_good_index WHERE eligible"
    ).fetchone()[0]
    hand_ranked = sorted(
        ((m, v) for m, v in by_hand.items() if v is not None), key=lambda mv: (-mv[1], mv[0])
    )
    assert eligible == len(hand_ranked)
    assert stored == hand_ranked[:10]
    assert 0 <= stored[-1][1] <= stored[0][1] <= 100
