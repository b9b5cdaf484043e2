"""The model page as the hub: every board a model appears on, as one list of entries.

`board_entries` turns the release's boards (Known Good Index, capability indices, market,
Arena, PM suite, Navigator, UseCaseRank, item boards) into entries by model id, each with
its board, the row's label (a setup, an Arena name, an item-board entry), its figure with
the interval the board publishes, its rank range, its cost, the date of the data behind it,
and a link to the board. The model page lists them; the compare page sets them side by side
(`compare.py`). Which differences the data separates is each board's own published rule,
named in `separation`:

- `pairs`: the board publishes pairwise tests (Navigator: `navigator_pairs`; item boards:
  `item_board_pairs`); an entry's `beats` lists the keys of the linked entries it is
  significantly better than, so a difference is marked only where the board's test says so.
- `intervals`: the board's methodology reads two figures apart only when their intervals do
  not overlap (Arena's 95% rating intervals, UseCaseRank's 90% intervals).
- none: the board publishes no interval or test (Known Good Index, capability indices,
  market prices, PM suite), so no difference on it is marked.

A board row whose model the registry does not know (an item-board entry with no single
`Model:` tag, a setup no source lists) has no model page: `model_link` shows its name
unlinked and says so. Pure functions of the release: nothing here reads or writes files.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from markupsafe import Markup, escape

from bench_pipeline.site import markup
from bench_pipeline.site.item_boards import BoardPairs, board_pairs, board_paths, pair_winner
from bench_pipeline.site.layout import Row
from bench_pipeline.site.release_view import Release

BOARD_ORDER = (
    "known_good_index",
    "capability",
    "market",
    "arena",
    "pm",
    "navigator",
    "usecase",
    "item_board",
)
"""The boards in the order a model page and the compare page list them."""
SOURCES = {
    "known_good_index": "epoch",
    "capability": "epoch",
    "market": "openrouter_models",
    "arena": "arena",
    "item_board": "swebench",
}
"""The source whose data date a board's figures carry; the other boards are this project's
own runs, dated by the release that published them."""
UNLINKED = "not matched to a model in the registry, so it has no model page"


def model_link(root: str, hrefs: Mapping[str, str], model_id: Any, name: Any) -> Markup:
    """A board row's name linked to its model's page, or the name unlinked with a note that
    the row has no model page (its model is not in the registry)."""
    shown = escape(markup.text(name))
    href = hrefs.get(model_id) if isinstance(model_id, str) else None
    if href is None:
        return Markup('{} <span class="basis unlinked" title="{}">(no model page)</span>').format(
            shown, UNLINKED
        )
    return Markup('<a class="model-link" href="{}{}">{}</a>').format(root, href, shown)


def name_matches(release: Release) -> dict[str, str]:
    """The registry model each model id or name (lower-cased) names: how a UseCaseRank
    group, which names its model as submitted, finds its model page."""
    found: dict[str, str] = {}
    for row in release.rows("models"):
        found.setdefault(str(row["model_id"]).lower(), row["model_id"])
    for row in release.rows("models"):
        if not markup.missing(row.get("name")):
            found.setdefault(str(row["name"]).lower(), row["model_id"])
    return found


def _float(value: Any) -> float | None:
    if markup.missing(value) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _rank(value: Any) -> int | None:
    number = _float(value)
    return None if number is None else int(number)


def entry(board: str, title: str, href: str, figure: str, value: Any, **fields: Any) -> Row:
    """One entry, every field present (a missing one is None)."""
    entry: Row = {
        "board": board, "title": title, "href": href, "row": board, "label": None,
        "figure": figure, "value": _float(value), "low": None, "high": None,
        "interval": None, "rank_low": None, "rank_high": None, "cost": None,
        "cost_what": None, "as_of": None, "dated_by": None, "simulated": False,
        "separation": None, "key": None, "beats": [], "money": False, "places": 1,
    }  # fmt: skip
    entry.update(fields)
    return entry


def board_entries(release: Release, dates: Mapping[str, Any]) -> dict[str, list[Row]]:
    """Every board entry of every registry model, by model id, in board order. `dates` is
    each source's data date (`views.data_dates`' `as_of`, by source)."""
    made = str(release.manifest.get("created_at") or "")[:10] or None
    out: dict[str, list[Row]] = defaultdict(list)

    def add(model_id: Any, entry: Row) -> None:
        source = SOURCES.get(entry["board"])
        entry["as_of"] = dates.get(source) if source else made
        entry["dated_by"] = source or "release"
        if isinstance(model_id, str) and model_id:
            out[model_id].append(entry)

    _kgi(release, add)
    _market(release, add)
    _arena(release, add)
    _pm(release, add)
    _navigator(release, add)
    _usecase(release, add)
    _item_boards(release, add)
    order = {b: i for i, b in enumerate(BOARD_ORDER)}
    return {
        model_id: shaped(sorted(entries, key=lambda e: (order[e["board"]], str(e["row"]))))
        for model_id, entries in out.items()
    }


def shaped(entries: Iterable[Row]) -> list[Row]:
    """Entries with their figures as the site prints them (`*_text`)."""
    out = []
    for item in entries:
        value = item.get("value_text") or (
            markup.usd(item["value"])
            if item["money"]
            else markup.number(item["value"], item["places"])
        )
        interval = (
            f"{markup.number(item['low'], 1)}–{markup.number(item['high'], 1)}"
            if item["low"] is not None and item["high"] is not None
            else None
        )
        ranks = item["rank_low"], item["rank_high"]
        rank = (
            None if ranks[0] is None else
            str(ranks[0]) if ranks[1] in (None, ranks[0]) else f"{ranks[0]}–{ranks[1]}"
        )  # fmt: skip
        cost = None if markup.missing(item["cost"]) else markup.usd(item["cost"])
        out.append(item | {"value_text": value, "interval_text": interval, "rank_text": rank,
                           "cost_text": cost})  # fmt: skip
    return out


def _index_interval(row: Row, column: str) -> Row:
    """An index's interval where the release publishes one (`<column>_low`, `_high`: 95%,
    from the publishers' standard errors); the index boards state no rule that separates
    two models by it, so no difference on them is marked."""
    low, high = _float(row.get(f"{column}_low")), _float(row.get(f"{column}_high"))
    if low is None or high is None:
        return {}
    return {"low": low, "high": high, "interval": "95% interval"}


def _kgi(release: Release, add: Any) -> None:
    schema = release.schema
    kgi_rank = schema.rank_column("known_good_index", "known_good_index")
    market = {r["model_id"]: r for r in release.rows("market")}
    components = len(schema.parameters("known_good_index").get("components", []))
    for row in release.rows("known_good_index"):
        price = market.get(row["model_id"], {}).get("blended_price_usd_per_1m")
        add(row["model_id"], entry(
            "known_good_index", "Known Good Index", "known-good-index.html", "Index",
            row.get("known_good_index"), rank_low=_rank(row.get(kgi_rank or "")),
            rank_high=_rank(row.get(kgi_rank or "")), cost=price,
            **_index_interval(row, "known_good_index"),
            cost_what="blended, $ per 1M tokens", places=2,
            label=f"{row.get('index_components')} of {components} evaluations"
            if not markup.missing(row.get("index_components")) else None,
            simulated=markup.is_simulated(row)))  # fmt: skip
    for row in release.rows("capability_indices"):
        for name in schema.parameters("capability_indices"):
            if markup.missing(row.get(name)):
                continue
            rank = _rank(row.get(schema.rank_column("capability_indices", name) or ""))
            add(row["model_id"], entry(
                "capability", f"{schema.title('capability_indices', name)} index",
                f"capability-indices.html#{name}", "Index", row.get(name),
                row=f"capability:{name}", rank_low=rank, rank_high=rank,
                **_index_interval(row, name),
                simulated=markup.is_simulated(row)))  # fmt: skip


def _market(release: Release, add: Any) -> None:
    for row in release.rows("market"):
        add(row["model_id"], entry(
            "market", "Market", "market.html", "Blended price, $ per 1M tokens",
            row.get("blended_price_usd_per_1m"), cost=row.get("blended_price_usd_per_1m"),
            cost_what="blended, $ per 1M tokens",
            label=f"hosts tracked: {row.get('providers_tracked') or 0}", money=True,
            simulated=markup.is_simulated(row)))  # fmt: skip


def _arena(release: Release, add: Any) -> None:
    for row in release.rows("arena_elo"):
        board = str(row.get("leaderboard"))
        add(row["model_id"], entry(
            "arena", f"Arena: {board}", f"arena.html#{board}", "Rating", row.get("rating"),
            row=f"arena:{board}", label=row.get("model_key"), low=_float(row.get("rating_low")),
            high=_float(row.get("rating_high")), interval="95% interval",
            rank_low=_rank(row.get("rank_best")), rank_high=_rank(row.get("rank_worst")),
            separation="intervals", key=row.get("model_key"),
            simulated=markup.is_simulated(row)))  # fmt: skip


def _pm(release: Release, add: Any) -> None:
    for row in release.rows("pm_setups"):
        overall, margin = _float(row.get("overall")), _float(row.get("margin95"))
        both = overall is not None and margin is not None
        add(row.get("model_id"), entry(
            "pm", "PM suite", "pm-suite.html", "Overall", overall,
            label=row.get("setup") or row.get("setup_id"),
            low=overall - margin if both else None,  # type: ignore[operator]
            high=overall + margin if both else None,  # type: ignore[operator]
            interval="95% margin over runs" if both else None,
            rank_low=_rank(row.get("rank")), rank_high=_rank(row.get("rank")),
            key=row.get("setup_id"), simulated=markup.is_simulated(row)))  # fmt: skip


def _navigator(release: Release, add: Any) -> None:
    beats: dict[str, list[str]] = defaultdict(list)
    for pair in release.rows("navigator_pairs"):
        if pair.get("rejected") and pair.get("better") in (pair["model_a"], pair["model_b"]):
            worse = pair["model_b"] if pair["better"] == pair["model_a"] else pair["model_a"]
            beats[str(pair["better"])].append(str(worse))
    for row in release.rows("navigator_models"):
        add(row.get("model_id"), entry(
            "navigator", "Navigator", "navigator.html", "Index", row.get("index"),
            label=row.get("model"), rank_low=_rank(row.get("rank_best")),
            rank_high=_rank(row.get("rank_worst")), cost=row.get("cost_per_success_usd"),
            cost_what="per success", separation="pairs", key=row.get("model"),
            beats=sorted(beats.get(str(row.get("model")), [])),
            simulated=markup.is_simulated(row)))  # fmt: skip


def _usecase(release: Release, add: Any) -> None:
    matches = name_matches(release)
    for row in release.rows("usecase_groups"):
        use_case = str(row.get("use_case"))
        simulated = markup.is_simulated(row)
        low, high = _float(row.get("ci_low")), _float(row.get("ci_high"))
        add(matches.get(str(row.get("model") or "").lower()), entry(
            "usecase", f"UseCaseRank: {use_case}",
            f"usecase-rank.html#{use_case}{'-simulated' if simulated else ''}", "Score",
            row.get("score"), row=f"usecase:{use_case}:{simulated}", label=row.get("group"),
            low=low, high=high, interval="90% interval" if low is not None else None,
            rank_low=_rank(row.get("rank")), rank_high=_rank(row.get("rank")),
            separation="intervals", key=row.get("group"), simulated=simulated))  # fmt: skip


def usecase_model(release: Release) -> dict[str, str]:
    """The registry model of each UseCaseRank group, by group (the groups `model_link` links)."""
    matches = name_matches(release)
    return {
        str(row["group"]): matches[str(row.get("model") or "").lower()]
        for row in release.rows("usecase_groups")
        if str(row.get("model") or "").lower() in matches
    }


def _item_boards(release: Release, add: Any) -> None:
    rows = release.rows("item_boards")
    linked: dict[str, set[Any]] = defaultdict(set)
    for row in rows:
        if not markup.missing(row.get("model_id")):
            linked[str(row["board"])].add(row["entry_key"])
    pairs: Iterable[Row] | Any = release.large.get("item_board_pairs") or release.rows(
        "item_board_pairs"
    )
    counted = board_pairs(pairs, linked) if linked else {}
    beats: dict[tuple[str, Any], list[Any]] = defaultdict(list)
    for board, held in counted.items():
        for pair in BoardPairs.of(held).shown:
            if pair["significant"]:
                winner = pair_winner(pair)
                loser = (
                    pair["entry_key_b"] if winner == pair["entry_key_a"] else pair["entry_key_a"]
                )
                beats[(board, winner)].append(loser)
    paths = board_paths({str(r["board"]) for r in rows})
    for row in rows:
        board = str(row["board"])
        low, high = _float(row.get("ci_low")), _float(row.get("ci_high"))
        add(row.get("model_id"), entry(
            "item_board", f"SWE-bench {board}", paths[board], "Resolved, %", row.get("score"),
            row=f"item_board:{board}", label=row.get("entry"), low=low, high=high,
            interval="95% interval (exact)" if low is not None else None,
            rank_low=_rank(row.get("rank_best")), rank_high=_rank(row.get("rank_worst")),
            cost=row.get("cost_per_success_usd"), cost_what="per resolved item",
            separation="pairs", key=row.get("entry_key"),
            beats=sorted(beats.get((board, row.get("entry_key")), []), key=str),
            simulated=markup.is_simulated(row)))  # fmt: skip
