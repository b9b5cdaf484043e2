"""The site's fast paths write the bytes its plain ones write, on hostile and random releases:
the page environment against plain jinja2 (the oracle), a large table read through its
Parquet file against its JSON read whole, and the price chart against the way it was drawn
before each timestamp was parsed once."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import pytest
from markupsafe import Markup, escape

from bench_pipeline.site import build as site_build
from bench_pipeline.site import build_site, large_tables, workers
from bench_pipeline.site.charts import (
    BOTTOM,
    HEIGHT,
    LEFT,
    RIGHT,
    SERIES,
    TOP,
    WIDTH,
    price_history_svg,
)
from bench_pipeline.site.markup import usd, when
from bench_pipeline.site.reuse import RECORD
from bench_pipeline.site.views import load_release
from tests.synthetic import (
    copy_downloads,
    synthetic_boards,
    synthetic_item_boards,
    synthetic_tables,
    write_release,
)

pytestmark = pytest.mark.store


def _hostile_pairs(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`pairs` with rows a page must read as the JSON reader reads them, between entries
    its matrix shows (the small board shows all): a pair listed twice (the later one counts),
    one listed reversed, one whose significance is unknown, one naming an entry that is not
    on its board, and one of a board nobody ranks."""
    first, second, third = [p for p in pairs if p["board"] == "small"][:3]
    return [
        *pairs,
        first | {"significant": not first["significant"], "p_value": 0.001, "wins_a": 9},
        second | {"entry_key_a": second["entry_key_b"], "entry_key_b": second["entry_key_a"],
                  "significant": True, "wins_a": 0, "wins_b": 5},
        third | {"significant": None},
        third | {"entry_key_b": "not-on-the-board"},
        first | {"board": "nobody ranks this"},
    ]  # fmt: skip


def _release(root: Path, seed: int) -> Path:
    boards = synthetic_item_boards(seed)
    boards["item_board_pairs"] = _hostile_pairs(boards["item_board_pairs"])
    tables = synthetic_tables(40, seed) | synthetic_boards() | boards
    return write_release(root / "releases", "r-same", tables, created_at="2025-06-01T06:00:00Z")


def _site(release: Path, folder: Path, workers: int = 1) -> dict[str, bytes]:
    """Every file of a fresh site of `release` (the reuse record aside: it holds mtimes)."""
    copy_downloads(release, folder)
    build_site(release, folder, release.parent, workers=workers)
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name != RECORD
    }


@pytest.mark.parametrize("seed", [3, 11])
def test_the_page_environment_writes_the_bytes_plain_jinja2_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    release = _release(tmp_path, seed)
    fast = _site(release, tmp_path / "fast", workers=2)
    monkeypatch.setattr(site_build, "PageEnvironment", jinja2.Environment)
    plain = _site(release, tmp_path / "plain")
    assert sorted(fast) == sorted(plain)
    assert [name for name in fast if fast[name] != plain[name]] == []
    assert sum(name.startswith("models/") for name in fast) == 40
    assert any(name.startswith("item-boards/") for name in fast)


def test_a_release_split_between_processes_renders_the_bytes_plain_jinja2_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enough models for two processes, built fresh and again from its own record (every
    page kept), against one process of plain jinja2."""
    models = 2 * workers.MIN_PART + 7
    tables = synthetic_tables(models, 5) | synthetic_boards() | synthetic_item_boards(5)
    release = write_release(tmp_path / "releases", "r-large", tables,
                            created_at="2025-06-01T06:00:00Z")  # fmt: skip
    fast = _site(release, tmp_path / "fast", workers=2)
    assert _site(release, tmp_path / "fast", workers=2) == fast
    monkeypatch.setattr(site_build, "PageEnvironment", jinja2.Environment)
    plain = _site(release, tmp_path / "plain")
    assert sorted(fast) == sorted(plain)
    assert [name for name in fast if fast[name] != plain[name]] == []
    assert sum(name.startswith("models/") for name in fast) >= models


@pytest.mark.parametrize("seed", [3, 11])
def test_a_large_table_read_through_parquet_writes_the_bytes_its_json_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    release = _release(tmp_path, seed)
    loaded = load_release(release)
    assert set(loaded.large) == {"item_board_pairs"} and "item_board_pairs" not in loaded.tables
    assert "item_board_pairs" in loaded.present
    through_parquet = _site(release, tmp_path / "parquet")
    monkeypatch.setattr(large_tables, "LARGE_TABLES", {})
    assert load_release(release).large == {}
    whole_json = _site(release, tmp_path / "json")
    assert sorted(through_parquet) == sorted(whole_json)
    assert [n for n in through_parquet if through_parquet[n] != whole_json[n]] == []
    board = next(n for n in whole_json if n.startswith("item-boards/script"))
    assert "pairs differ significantly" in whole_json[board].decode()


# ------------------------------------------------------------------------- the price chart


def _time(value: str) -> float:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _price(value: Any) -> float | None:
    return None if value is None or value == "" else float(value)


def _chart_as_before(points: list[dict[str, Any]], label: str) -> Markup:
    """The price chart as it was drawn before its timestamps were parsed once (the oracle)."""
    rows = sorted(
        (p for p in points if p.get("observed_at")), key=lambda p: _time(p["observed_at"])
    )
    prices = [v for p in rows for key, *_ in SERIES if (v := _price(p.get(key))) is not None]
    if not prices:
        return Markup("")
    start, end = _time(rows[0]["observed_at"]), _time(rows[-1]["observed_at"])
    top = max(prices) * 1.1 or 1.0
    span_x, span_y = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(row: dict[str, Any]) -> float:
        return LEFT + (span_x * (_time(row["observed_at"]) - start) / (end - start) if end > start
                       else span_x / 2)  # fmt: skip

    def y(value: float) -> float:
        return TOP + span_y * (1 - value / top)

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(label)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{TOP + span_y}" x2="{WIDTH - RIGHT}" '
        f'y2="{TOP + span_y}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + span_y}"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end">{escape(usd(f"{top:.4g}"))}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + span_y + 4}" text-anchor="end">$0</text>',
        f'<text x="{LEFT}" y="{HEIGHT - 8}">{escape(when(rows[0]["observed_at"]))}</text>',
    ]
    if end > start:
        last = escape(when(rows[-1]["observed_at"]))
        parts.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{last}</text>')
    for key, css, title in SERIES:
        series = [(x(r), y(v), r) for r in rows if (v := _price(r.get(key))) is not None]
        steps: list[str] = []
        for index, (px, py, _) in enumerate(series):
            if index:
                steps.append(f"{px:.1f},{series[index - 1][1]:.1f}")
            steps.append(f"{px:.1f},{py:.1f}")
        if len(series) > 1:
            parts.append(f'<polyline class="{css}" points="{" ".join(steps)}"/>')
        for px, py, row in series:
            tip = f"{title} {usd(row.get(key))} per 1M tokens, {when(row['observed_at'])}"
            parts.append(
                f'<circle class="{css}" cx="{px:.1f}" cy="{py:.1f}" r="3">'
                f"<title>{escape(tip)}</title></circle>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def _observations(rng: random.Random) -> list[dict[str, Any]]:
    stamps = ["2025-06-01T06:00:00Z", "2025-06-01T06:00:00+02:00", "2025-05-30T23:59:59.5Z",
              "2025-06-01", "2024-12-31T00:00:00Z", "", None]  # fmt: skip
    prices = [None, "", "0", "0.0000001", "3.437500", "20", "0.05", "1e3", 2.5, 0, "-1"]
    return [
        {"observed_at": rng.choice(stamps), "input_usd_per_1m": rng.choice(prices),
         "output_usd_per_1m": rng.choice(prices), "source_run_id": f"run-{rng.randint(1, 3)}"}
        for _ in range(rng.randint(0, 9))
    ]  # fmt: skip


def test_the_price_chart_draws_what_it_drew_before() -> None:
    rng = random.Random(21)
    for _ in range(400):
        points = _observations(rng)
        label = rng.choice(["Price history of <script>", "Model & 'quotes'", ""])
        assert price_history_svg(points, label) == _chart_as_before(points, label), points
