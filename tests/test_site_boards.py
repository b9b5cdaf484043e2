"""The boards' pure shaping: money formatting, Arena rank ranges from intervals, the market's
default order, the What-changed summary and which downloads are simulated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from bench_pipeline.site.boards import (
    arena_name,
    change_summary,
    interval_ranks,
    market_rows,
    simulated_label,
)
from bench_pipeline.site.markup import usd

pytestmark = pytest.mark.unit


@dataclass
class _Model:
    id: str
    name: str
    kgi: dict[str, Any] | None = field(default=None)


@pytest.mark.parametrize(
    ("value", "shown"),
    [("3.437500", "$3.44"), ("20", "$20.00"), ("0.8", "$0.80"), ("1234.5", "$1,234.50"),
     ("0.022245325444", "$0.0222453"), ("0.01392", "$0.01392"), ("0.05", "$0.05"),
     ("0.00000015", "$0.00000015"), ("0", "$0.00"), ("0.875", "$0.88"),
     (None, "—"), ("", "—"), ("-0.5", "-$0.50")],
)  # fmt: skip
def test_one_money_formatter_for_every_price(value: Any, shown: str) -> None:
    assert usd(value) == shown


def test_arena_ranks_from_intervals_count_wholly_separated_models() -> None:
    rows = [
        {"rating_low": 1480, "rating_high": 1490},
        {"rating_low": 1470, "rating_high": 1485},  # overlaps the first
        {"rating_low": 1400, "rating_high": 1410},  # below both
        {"rating_low": None, "rating_high": None},
    ]
    assert interval_ranks(rows) == [(1, 2), (1, 2), (3, 3), None]
    assert arena_name("text_style_control") == "Text, style control"
    assert arena_name("new_board") == "New board"


def test_market_opens_on_priced_models_by_index_then_price() -> None:
    models = {
        "a": _Model("a", "Alpha", {"known_good_index": 50.0}),
        "b": _Model("b", "Beta", {"known_good_index": 90.0}),
        "c": _Model("c", "Gamma"),
        "d": _Model("d", "Delta"),
        "e": _Model("e", "Epsilon"),
    }
    rows = [
        {"model_id": "a", "blended_price_usd_per_1m": "1"},
        {"model_id": "b", "blended_price_usd_per_1m": "9"},
        {"model_id": "c", "blended_price_usd_per_1m": "5"},
        {"model_id": "d", "blended_price_usd_per_1m": "0.5"},
        {"model_id": "e", "blended_price_usd_per_1m": None},
    ]
    split = market_rows(rows, models)
    assert [m.id for _, m, _ in split["priced"]] == ["b", "a", "d", "c"]
    assert [m.id for _, m, _ in split["unpriced"]] == ["e"]


def test_what_changed_summary_names_moves_prices_models_and_cause() -> None:
    models = {"m1": _Model("m1", "Model One")}
    diff = {
        "models_added": ["m1"], "models_removed": ["gone/x"],
        "tables": {
            "known_good_index": {"rank_moves": [{"key": {"model_id": "m1"}, "old_rank": 4,
                                                 "new_rank": 1}]},
            "market": {"changed": [
                {"key": {"model_id": "m1"}, "column": "output_usd_per_1m", "old": "15",
                 "new": "12.5"},
                {"key": {"model_id": "m1"}, "column": "openness", "old": 1, "new": 2},
            ]},
        },
        "caused_by": {"source_runs": [{"source": "openrouter_models", "run_id": "r2",
                                       "status": "accepted"}]},
    }  # fmt: skip
    summary = change_summary(diff, models)
    assert summary["moves"] == [{"table": "known_good_index", "name": "Model One", "old": 4,
                                 "new": 1, "column": None, "up": True}]  # fmt: skip
    assert summary["prices"] == [
        {"name": "Model One", "column": "output_usd_per_1m", "old": "$15.00", "new": "$12.50"}
    ]
    assert summary["added"] == ["Model One"] and summary["removed"] == ["gone/x"]
    assert summary["causes"] == ["openrouter_models run r2 (accepted)"]
    assert change_summary(None, models)["moves_count"] == 0


def test_downloads_say_which_tables_hold_simulated_rows() -> None:
    tables = {
        "pm_setups": [{"simulated": True}, {"simulated": False}],
        "market": [{"simulated": False}],
        "navigator_models": [{"model": "a", "simulated": True}, {"model": "b"}],
        "navigator_pairs": [
            {"model_a": "a", "model_b": "b", "simulated": True},
            {"model_a": "b", "model_b": "c", "simulated": False},
        ],
    }
    assert simulated_label("pm_setups", tables) == "1 of 2 simulated"
    assert simulated_label("market", tables) == ""
    assert simulated_label("navigator_pairs", tables) == "1 of 2 simulated"


def test_row_level_changes_show_six_figures_not_a_floats_sixteen() -> None:
    from bench_pipeline.site.views import brief

    assert brief(29.349999999999998) == "29.35"
    assert brief(0.000123456789) == "0.000123457"
    assert brief(1200) == "1200" and brief("1.50") == "1.50"
