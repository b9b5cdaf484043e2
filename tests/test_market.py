"""Market rules: blended price, the models.dev cross-check, medians across hosts, openness,
and the flags on $0 rates that are not prices."""

from decimal import Decimal

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline.indices.market import (
    INPUT_SCHEMA,
    market_rows,
    openness,
    price_flag,
    provider_prices,
)
from bench_pipeline.indices.openness import (
    OpennessInput,
    decide_openness,
    load_licence_table,
)
from bench_pipeline.indices.pricing import load_trial_providers, rate_flag

pytestmark = pytest.mark.unit

MONEY = pl.Decimal(24, 12)


def models(**overrides) -> pl.DataFrame:
    row = {
        "model_id": "x/m",
        "model_name": "M",
        "prompt_usd_per_m": Decimal("1.25"),
        "completion_usd_per_m": Decimal("10"),
        "variable_pricing": False,
        "price_source_run_id": "or-1",
        "price_provider": "openrouter",
        "output_modalities": "text",
        "tokenizer": "GPT",
        "md_input": Decimal("1.25"),
        "md_output": Decimal("10"),
    } | overrides
    schema = {
        "prompt_usd_per_m": MONEY,
        "completion_usd_per_m": MONEY,
        "md_input": MONEY,
        "md_output": MONEY,
        "price_provider": pl.Utf8,
        "output_modalities": pl.Utf8,
        "tokenizer": pl.Utf8,
        "variable_pricing": pl.Boolean,
    }
    return pl.DataFrame([row], schema_overrides=schema)


def evidence(
    *rows: tuple[str, str, bool | None, str | None], model_id: str = "x/m"
) -> pl.DataFrame:
    """`OPENNESS_INPUTS_SQL` rows: (input, source_key, open_weights, licence)."""
    return pl.DataFrame(
        [
            {"model_id": model_id, "input": i, "source": "s", "source_key": k,
             "open_weights": w, "licence": lic, "source_run_id": "run-1"}
            for i, k, w, lic in rows
        ],
        schema=INPUT_SCHEMA,
    )  # fmt: skip


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
    router = models(variable_pricing=True)
    row = market_rows(router, hosts([]), LICENCES).row(0, named=True)
    assert row["input_usd_per_1m"] is None and row["blended_price_usd_per_1m"] is None
    assert row["rate_flag"] == "variable"  # listed, flagged, never ranked


def test_models_dev_disagreement_is_flagged_not_resolved() -> None:
    row = market_rows(models(md_output=Decimal("12")), hosts([]), LICENCES).row(0, named=True)
    assert row["output_usd_per_1m"] == Decimal("10")  # OpenRouter's rate stands
    assert "models.dev lists" in row["price_flag"]
    assert price_flag(Decimal("1"), Decimal("2"), None, None) is None  # nothing to compare


def test_openness_from_weights_licence_and_repository() -> None:
    def score(*rows):
        frame = market_rows(models(), hosts([]), LICENCES, evidence(*rows))
        return frame.row(0, named=True)

    open_apache = score(
        ("host_listings", "h/m", True, None),
        ("weights_repository", "x/M", True, None),
        ("arena_licence", "m", None, "Apache 2.0"),
    )
    assert (open_apache["openness"], open_apache["has_repository"]) == (100, True)
    assert open_apache["openness_input"] == "arena_licence"
    closed = score(
        ("host_listings", "h/m", False, None), ("arena_licence", "m", None, "Proprietary")
    )
    assert (closed["openness"], closed["openness_input"]) == (5, "arena_licence")
    unknown = score(("host_listings", "h/m", True, None))
    assert unknown["openness"] is None  # open weights, licence unknown: no guess
    nothing = models(prompt_usd_per_m=None, completion_usd_per_m=None)
    assert market_rows(nothing, hosts([]), LICENCES).height == 0  # no figure at all: not listed


def test_a_resellers_closed_listing_never_overrides_an_open_licence() -> None:
    rows = evidence(
        ("host_listings", "nano-gpt/x", False, None),
        ("arena_licence", "x-thinking", None, "MIT"),
    )
    decisions, weighed = openness(rows, LICENCES)
    decision = decisions.row(0, named=True)
    assert (decision["openness"], decision["openness_input"]) == (90, "arena_licence")
    roles = dict(zip(weighed["input"], weighed["role"], strict=True))
    assert roles == {"arena_licence": "decided", "host_listings": "overruled"}
    assert weighed["position"].to_list() == [1, 2]  # weighed by precedence, not row order


def test_the_weights_repository_licence_comes_from_the_reviewed_table() -> None:
    rows = evidence(
        ("lab_listing", "moonshotai/kimi-k2.5", True, None),
        ("weights_repository", "MoonshotAI/kimi-k2.5", True, None),  # ids ignore case
        ("epoch_accessibility", "kimi-k2.5", None, "Open weights (restricted use)"),
    )
    decisions, weighed = openness(rows, LICENCES)
    decision = decisions.row(0, named=True)
    assert (decision["licence"], decision["openness"]) == ("Modified MIT", 100)
    assert weighed.filter(pl.col("role") == "overruled")["input"].to_list() == [
        "epoch_accessibility"
    ]


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
        "price_provider": st.sampled_from([None, "openrouter", "nvidia", "zai"]),
        "output_modalities": st.sampled_from([None, "text", "text,audio", "image"]),
        "tokenizer": st.sampled_from([None, "GPT", "Router"]),
        "md_input": RATE,
        "md_output": RATE,
    }
)
INPUT = st.tuples(
    st.sampled_from(
        ["lab_listing", "weights_repository", "arena_licence", "epoch_accessibility",
         "host_listings"]
    ),
    st.sampled_from(["a", "b"]),
    st.sampled_from([None, False, True]),
    st.sampled_from([None, "", "Apache 2.0", "MIT", "Proprietary", "CC-BY-NC-4.0", "Open", "?"]),
)  # fmt: skip
TRIALS = load_trial_providers()


@settings(deadline=None)  # frames of up to 20 models per example: slow on a busy machine
@given(st.lists(st.tuples(ROW, st.lists(INPUT, max_size=4)), min_size=1, max_size=20))
def test_market_rows_follow_each_rule_row_by_row(rows: list[tuple[dict, list]]) -> None:
    frame = pl.concat(
        [models(model_id=f"x/m{n:02}", **row) for n, (row, _) in enumerate(rows)],
        how="vertical_relaxed",
    )
    said = pl.concat(
        [evidence(*inputs, model_id=f"x/m{n:02}") for n, (_, inputs) in enumerate(rows)],
        how="vertical_relaxed",
    )
    market = market_rows(frame, hosts([]), LICENCES, said, TRIALS)
    got = {r["model_id"]: r for r in market.iter_rows(named=True)}
    for n, row in enumerate(frame.iter_rows(named=True)):  # the rates as the frame holds them
        flag = rate_flag(
            row["prompt_usd_per_m"], row["completion_usd_per_m"], variable=row["variable_pricing"],
            provider=row["price_provider"], output_modalities=row["output_modalities"],
            tokenizer=row["tokenizer"], trial_providers=TRIALS,
        )  # fmt: skip
        prompt = row["prompt_usd_per_m"] if flag is None else None
        completion = row["completion_usd_per_m"] if flag is None else None
        weighed = [
            OpennessInput(i, k, w, lic if i != "weights_repository" else None)
            for i, k, w, lic in rows[n][1]
        ]
        decision = decide_openness(weighed, LICENCES)
        if prompt is None and completion is None and decision.openness is None and flag is None:
            assert f"x/m{n:02}" not in got
            continue
        out = got[f"x/m{n:02}"]
        assert out["rate_flag"] == flag
        assert out["price_flag"] == price_flag(
            prompt, completion, row["md_input"], row["md_output"]
        )
        assert (out["input_usd_per_1m"], out["output_usd_per_1m"]) == (prompt, completion)
        assert (out["open_weights"], out["licence_class"]) == (
            decision.open_weights,
            decision.licence_class,
        )
        assert out["openness"] == decision.openness
        assert out["has_repository"] == decision.has_repository


def test_zero_rates_that_are_not_prices_are_flagged_and_have_no_blended_price() -> None:
    trial = models(prompt_usd_per_m=Decimal(0), completion_usd_per_m=Decimal(0),
                   price_provider="nvidia", md_input=None, md_output=None)  # fmt: skip
    clip = models(model_id="x/clip", prompt_usd_per_m=Decimal(0), completion_usd_per_m=Decimal(0),
                  output_modalities="text,audio", md_input=None, md_output=None)  # fmt: skip
    free = models(model_id="x/free", prompt_usd_per_m=Decimal(0), completion_usd_per_m=Decimal(0),
                  price_provider="zai", md_input=None, md_output=None)  # fmt: skip
    frame = market_rows(pl.concat([trial, clip, free]), hosts([]), LICENCES, None, TRIALS)
    rows = {r["model_id"]: r for r in frame.iter_rows(named=True)}
    assert rows["x/m"]["rate_flag"] == "trial" and rows["x/clip"]["rate_flag"] == "per_unit"
    assert rows["x/m"]["blended_price_usd_per_1m"] is None
    assert rows["x/clip"]["blended_price_usd_per_1m"] is None
    assert rows["x/free"]["rate_flag"] is None  # a free offer from anyone else stands
    assert rows["x/free"]["blended_price_usd_per_1m"] == 0


def test_a_hosts_trial_listing_is_flagged_and_unblended() -> None:
    listing = hosts([("Nvidia", None, None)]).with_columns(
        pl.lit("models.dev:nvidia/x/m").alias("tag"),
        pl.lit(Decimal(0)).cast(MONEY).alias("prompt_usd_per_m"),
        pl.lit(Decimal(0)).cast(MONEY).alias("completion_usd_per_m"),
    )
    row = provider_prices(listing, TRIALS).row(0, named=True)
    assert row["rate_flag"] == "trial" and row["blended_price_usd_per_1m"] is None
    assert row["input_usd_per_1m"] == 0  # the listed rate is kept, beside its flag
