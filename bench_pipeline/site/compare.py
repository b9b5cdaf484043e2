"""The compare page: two to four models side by side on every figure the site publishes.

The site is static, so the page (`compare.html`) is one template and a small script
(`static/compare.js`) that reads the models named in its address (`compare.html?m=a,b,c`,
model page slugs), finds them in `compare/index.json` (every model's slug, id, name and
page, for the chooser) and fetches each one's own page, whose `#compare-data` JSON holds
`model_document`: its board entries from `hub.board_entries` and the figures each board
publishes beside its main one (the Known Good Index's components, the market's rates). No
file per model is written beside the page that already exists, and the data is rendered
and kept with the page (`reuse.py`). Every figure, interval, rank range and cost is
formatted here, by the site's own formatters, so the page shows what the boards show; the
script only lays them out and marks a difference where the board's own rule separates it
(`hub.py` names the rules), never otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from markupsafe import Markup

from bench_pipeline.site import markup
from bench_pipeline.site.hub import BOARD_ORDER, SOURCES, entry, shaped
from bench_pipeline.site.layout import Row

MAX_MODELS = 4
MARKET_FIGURES = (
    ("input_usd_per_1m", "Input, $ per 1M tokens", "openrouter_models", "usd"),
    ("output_usd_per_1m", "Output, $ per 1M tokens", "openrouter_models", "usd"),
    ("output_speed_tps", "Output speed (median, tokens/s)", "openrouter_endpoints", "1"),
    ("latency_ttft_s", "Time to first token (median, s)", "openrouter_endpoints", "2"),
    ("openness", "Openness", "openrouter_models", "0"),
)
"""The market figures beside the blended price: column, title, the source dating it, and
how it is shown (`usd`, or the decimals)."""


def _shown(value: Any, how: str = "1") -> str:
    if how == "usd":
        return markup.usd(value)
    return markup.number(value, int(how))


def extra_figures(
    model: Any, dates: dict[str, Any], components: Iterable[tuple[str, str]]
) -> list[Row]:
    """The figures a model's boards publish beside their main one: each Known Good Index
    component (normalised 0-1) and the market's rates, speed, latency and openness."""
    out = []
    kgi = model.kgi or {}
    for column, title in components:
        if not markup.missing(kgi.get(column)):
            out.append(entry(
                "known_good_index", f"Known Good Index: {title}", "known-good-index.html",
                "Normalised, 0-1", kgi.get(column), row=f"kgi:{column}",
                as_of=dates.get(SOURCES["known_good_index"]),
                dated_by=SOURCES["known_good_index"], value_text=markup.number(kgi.get(column), 3),
            ))  # fmt: skip
    market = model.market or {}
    for column, title, source, how in MARKET_FIGURES:
        if not markup.missing(market.get(column)):
            out.append(entry(
                "market", f"Market: {title}", "market.html", title, market.get(column),
                row=f"market:{column}", as_of=dates.get(source), dated_by=source,
                value_text=_shown(market.get(column), how),
            ))  # fmt: skip
    return out


def model_document(model: Any, dates: dict[str, Any], components: list[tuple[str, str]]) -> Row:
    """What `compare/<slug>.json` holds for one model."""
    order = {board: i for i, board in enumerate(BOARD_ORDER)}
    # boards in the hub's order, each one's main figures before those beside them
    main = [e | {"order": 2 * order[e["board"]]} for e in model.boards]
    beside = [
        e | {"order": 2 * order[e["board"]] + 1} for e in extra_figures(model, dates, components)
    ]
    entries = shaped([*main, *beside])
    return {"id": model.id, "name": model.name, "slug": model.slug, "href": model.href,
            "entries": entries}  # fmt: skip


SHOWN = (
    "row", "title", "href", "figure", "separation", "label", "value_text", "interval_text",
    "interval", "rank_text", "cost_text", "cost_what", "as_of", "dated_by", "beats", "key",
    "low", "high", "simulated", "order",
)  # fmt: skip
"""What the script reads of an entry (the rest stays on the model page's own table)."""


def model_data(model: Any, dates: dict[str, Any], components: list[tuple[str, str]]) -> Markup:
    """`model_document`, only what the script reads, as the JSON its model page carries for
    the compare page (`<script type="application/json" id="compare-data">`)."""
    document = model_document(model, dates, components)
    document["entries"] = [{k: e.get(k) for k in SHOWN} for e in document["entries"]]
    return markup.script_json(document)


def render_compare(builder: Any, models: Sequence[Any]) -> None:
    """`compare.html` and `compare/index.json`: every model's slug, id, name and page, for
    the chooser (each model's figures are on its own page, see `model_data`)."""
    index = [{"slug": m.slug, "id": m.id, "name": m.name, "href": m.href,
              "boards": len(m.boards)} for m in models]  # fmt: skip
    text = json.dumps(index, ensure_ascii=False, sort_keys=True, default=str)
    builder.write(builder.out / "compare" / "index.json", text.encode("utf-8"))
    builder.render("compare.html", "compare.html", max_models=MAX_MODELS)
