"""When model runs go to the PostgreSQL run store, and how its rows survive the round trip
(no server needed: `tests/test_run_store.py` runs the store for real)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import pytest

from bench_pipeline.runs.costing import LongContextTier, Rates
from bench_pipeline.runs.plan import work_items
from bench_pipeline.runs.shared import (
    ItemError,
    StoreAddress,
    decode_item,
    decode_rates,
    decode_row,
    encode_item,
    encode_rates,
    encode_row,
)
from bench_pipeline.runs.store import RUN_COLUMNS
from bench_pipeline.taskbank import load_bank
from bench_pipeline.taskbank.setups import load_setups

pytestmark = pytest.mark.unit

PG = {
    "DAGSTER_PG_HOST": "db.internal",
    "DAGSTER_PG_PORT": "5433",
    "DAGSTER_PG_USER": "bench",
    "DAGSTER_PG_PASSWORD": "secret-password",
    "DAGSTER_PG_DB": "dagster",
}


def test_the_store_is_on_only_when_the_instance_names_postgres() -> None:
    assert StoreAddress.from_env({}) is None  # the offline default: the local warehouse
    address = StoreAddress.from_env(PG)
    assert address is not None and (address.host, address.port) == ("db.internal", 5433)
    assert "secret-password" not in str(address)
    assert StoreAddress.from_env(PG | {"BENCH_RUN_STORE": "local"}) is None


def test_rows_rates_and_items_survive_the_round_trip() -> None:
    row = dict.fromkeys(RUN_COLUMNS) | {
        "run_id": "r1",
        "cost_usd": Decimal("0.000000000025"),
        "run_date": date(2026, 3, 4),
        "recorded_at": datetime(2026, 3, 4, 5, 6, 7, 891011),
        "output": "é\u2028x",
        "repeat": 2,
    }
    assert decode_row(encode_row(row)) == [row[c] for c in RUN_COLUMNS]
    rates = [
        Rates(date(2026, 1, 1), Decimal("1.5"), Decimal("2"), None, Decimal("0.1"),
              LongContextTier(200_000, Decimal("3"), Decimal("4"))),
        Rates(date(2026, 2, 1), local=True),
    ]  # fmt: skip
    assert decode_rates(encode_rates(rates)) == rates

    bank = load_bank()
    setups = load_setups()
    key = next(iter({f"{s.model.id}@{s.harness.id}" for s in setups.setups if s.executable}))
    item = work_items([key], bank, setups)[-1]
    stored = encode_item(item)
    assert item.prompt.text not in str(stored)  # never the prompt's text
    assert decode_item(item.run_id, stored, bank) == item
    with pytest.raises(ItemError, match="case_version"):
        decode_item(item.run_id, stored | {"case_version": "other"}, bank)
