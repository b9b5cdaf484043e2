"""Market rules: blended price, the models.dev cross-check, medians across hosts, openness."""

from decimal import Decimal

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench_pipeline.indices.market import market_rows, open_weights, price_flag, provider_prices
from bench_pipeline.indices.openness import classify_licence, load_licence_table, openness_score

pytestmark = pytest.mark.unit

MONEY = pl.Decimal(24, 12)


def models(**overrides) -> pl.DataFrame:
    row = {
        "model_id": "x/m",
        "model_name": "M",
        "prompt_usd_per_m": Decimal("1.25"),
        "completion_usd_per_m": Decimal("10"),
        "variable_pricing": False,
        "has_repository": False,
        "price_source_run_id": "or-1",
        "md_input": Decimal("1.25"),
        "md_output": Decimal("10"),
        "any_open": None,
        "all_open": None,
        "licence": None,
    } | overrides
    schema = {
        "prompt_usd_per_m": MONEY,
        "completion_usd_per_m": MONEY,
        "md_input": MONEY,
        "md_output": MONEY,
        "any_open": pl.Boolean,
        "all_open": pl.Boolean,
        "licence": pl.Utf8,
    }
    return pl.DataFrame([row], schema_overrides=schema)


def hosts(rows: list[tuple[str, float | None, float | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "model_id": ["x/m"] * len(rows),
            "provider_name": [r[0] for r in rows],
            "tag": [r[0].lower() for r in rows],
            "quantization": ["fp8"] * len(rows),
            "prompt_usd_per_m": pl.Series([Decimal("2")] * len(rows), dtype=MONEY),
            "completion_usd_per_m": pl.Series([None] * len(rows), dtype=MONEY),
            "uptime_last_30m": [99.0] * len(rows),
            "latency_ttft_s": [r[1] for r in rows],
            "output_speed_tps": [r[2] for r in rows],
            "source_run_id": ["ep-1"] * len(rows),
        },
        schema_overrides={
            "model_id": pl.Utf8,
            "provider_name": pl.Utf8,
            "tag": pl.Utf8,
            "quantization": pl.Utf8,
            "uptime_last_30m": pl.Float64,
            "source_run_id": pl.Utf8,
            "latency_ttft_s": pl.Float64,
            "output_speed_tps": pl.Float64,
        },
    )


LICENCES = load_licence_table()


def test_blended_price_and_medians_across_hosts() -> None:
    frame = market_rows(
        models(), hosts([("A", 0.5, 100.0), ("B", 1.5, 40.0), ("C", None, 70.0)]), LICENCES
    )
    row = frame.row(0, named=True)
    assert row["blended_price_usd_per_1m"] == Decimal("3.4375")  # (3 × 1.25 + 10) / 4
    assert row["output_speed_tps"] == 70.0  # median of 100, 40, 70
    assert row["latency_ttft_s"] == 1.0  # median of the hosts that report it
    assert row["providers_tracked"] == 3
    assert row["price_flag"] is None


def test_missing_or_variable_rate_gives_no_price() -> None:
    no_output = market_rows(models(completion_usd_per_m=None), hosts([]), LICENCES).row(
        0, named=True
    )
    assert no_output["blended_price_usd_per_1m"] is None and no_output["input_usd_per_1m"] == 1.25
    router = models(variable_pricing=True, any_open=False, all_open=False)
    row = market_rows(router, hosts([]), LICENCES).row(0, named=True)
    assert row["input_usd_per_1m"] is None and row["blended_price_usd_per_1m"] is None


def test_models_dev_disagreement_is_flagged_not_resolved() -> None:
    row = market_rows(models(md_output=Decimal("12")), hosts([]), LICENCES).row(0, named=True)
    assert row["output_usd_per_1m"] == Decimal("10")  # OpenRouter's rate stands
    assert "models.dev lists" in row["price_flag"]
    assert price_flag(Decimal("1"), Decimal("2"), None, None) is None  # nothing to compare


def test_openness_from_weights_licence_and_repository() -> None:
    open_apache = models(any_open=True, all_open=False, licence="Apache 2.0", has_repository=True)
    assert market_rows(open_apache, hosts([]), LICENCES).row(0, named=True)["openness"] == 100
    closed = models(any_open=False, all_open=False, licence="Proprietary")
    assert market_rows(closed, hosts([]), LICENCES).row(0, named=True)["openness"] == 5
    open_unknown_licence = models(any_open=True, all_open=True)
    row = market_rows(open_unknown_licence, hosts([]), LICENCES).row(0, named=True)
    assert row["openness"] is None  # open weights, licence unknown: no guess
    nothing = models(prompt_usd_per_m=None, completion_usd_per_m=None)
    assert market_rows(nothing, hosts([]), LICENCES).height == 0  # no figure at all: not listed


def test_each_host_keeps_its_own_rate() -> None:
    table = provider_prices(hosts([("A", 0.5, 100.0)]))
    assert table.row(0, named=True)["input_usd_per_1m"] == Decimal("2")
    assert table.row(0, named=True)["blended_price_usd_per_1m"] is None  # no output rate


RATE = st.one_of(
    st.none(),
    st.sampled_from([Decimal("0"), Decimal("1E-12"), Decimal("0.99"), Decimal("1"), Decimal("2")]),
    st.decimals(0, 100, places=12, allow_nan=False, allow_infinity=False),
)
ROW = st.fixed_dictionaries(
    {
        "prompt_usd_per_m": RATE,
        "completion_usd_per_m": RATE,
        "variable_pricing": st.sampled_from([None, False, True]),
        "has_repository": st.booleans(),
        "md_input": RATE,
        "md_output": RATE,
        "any_open": st.sampled_from([None, False, True]),
        "all_open": st.sampled_from([None, False, True]),
        "licence": st.sampled_from([None, "", "Apache 2.0", "MIT", "Proprietary", "CC-BY-NC", "?"]),
    }
)


@given(st.lists(ROW, min_size=1, max_size=20))
def test_market_rows_follow_each_rule_row_by_row(rows: list[dict]) -> None:
    frame = pl.concat(
        [models(model_id=f"x/m{n:02}", **row) for n, row in enumerate(rows)],
        how="vertical_relaxed",
    )
    got = {r["model_id"]: r for r in market_rows(frame, hosts([]), LICENCES).iter_rows(named=True)}
    for n, row in enumerate(frame.iter_rows(named=True)):  # the rates as the frame holds them
        fixed = not row["variable_pricing"]
        prompt = row["prompt_usd_per_m"] if fixed else None
        completion = row["completion_usd_per_m"] if fixed else None
        weights = open_weights(row["any_open"], row["all_open"])
        licence_class = classify_licence(row["licence"], LICENCES)
        openness = openness_score(weights, licence_class, row["has_repository"])
        if prompt is None and completion is None and openness is None:
            assert f"x/m{n:02}" not in got
            continue
        out = got[f"x/m{n:02}"]
        assert out["price_flag"] == price_flag(
            prompt, completion, row["md_input"], row["md_output"]
        )
        assert (out["input_usd_per_1m"], out["output_usd_per_1m"]) == (prompt, completion)
        assert (out["open_weights"], out["licence_class"]) == (weights, licence_class)
        assert out["openness"] == openness
