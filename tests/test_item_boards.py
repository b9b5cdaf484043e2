"""Item boards: a hand-computed 4-entry board, the SWE-bench source, and the real board."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from earlier_registry import entry_models

from bench_pipeline.core import settings
from bench_pipeline.ingest.parsers.swebench import model_tags
from bench_pipeline.registry.candidates import all_candidates
from bench_pipeline.registry.entries import entry_tags, stored_entry_models
from bench_pipeline.registry.matching import AliasFile, Candidate, host_matches
from bench_pipeline.scores.item_boards import (
    BoardEntry,
    ItemResult,
    board_frames,
    clopper_pearson,
    item_board,
)
from bench_pipeline.scores.item_boards_store import load_boards

pytestmark = pytest.mark.assets

ITEMS = [f"i{k:02d}" for k in range(12)]


def _entry(key: str, solved: int, cost: str | None, missing_cost: str | None = None) -> BoardEntry:
    """Resolves the first `solved` items; every item costs `cost` (one may have no cost)."""
    return BoardEntry(
        key=key,
        entry=f"Entry {key}",
        model_id=f"model-{key}",
        published_percent=100.0 * solved / len(ITEMS),
        items={
            item: ItemResult(
                number < solved, None if item == missing_cost or cost is None else Decimal(cost)
            )
            for number, item in enumerate(ITEMS)
        },
    )


@pytest.fixture
def board():
    # A solves 12/12 at $1.00 an item, B 9/12 at $0.10, C 2/12 at $0.05, D 0/12 (one item
    # without a cost); E publishes only a percentage.
    entries = [
        _entry("D", 0, "0.20", missing_cost="i05"),
        _entry("C", 2, "0.05"),
        _entry("A", 12, "1.00"),
        _entry("B", 9, "0.10"),
        BoardEntry(key="E", entry="Entry E", published_percent=30.0),
    ]
    return item_board("toy", entries)


def test_pairs_have_the_hand_counted_discordant_items_and_exact_p_values(board) -> None:
    pairs = {(p.key_a, p.key_b): p for p in board.pairs}
    # Discordant items are those one entry solved and the other did not; with 0/1 outcomes
    # and all discordant items on one side, p = 2 / 2**discordant.
    expected = {
        ("A", "B"): (3, 2 / 2**3),
        ("A", "C"): (10, 2 / 2**10),
        ("A", "D"): (12, 2 / 2**12),
        ("B", "C"): (7, 2 / 2**7),
        ("B", "D"): (9, 2 / 2**9),
        ("C", "D"): (2, 2 / 2**2),
    }
    assert {k: (p.discordant, p.p_value) for k, p in pairs.items()} == expected
    assert all(p.items == 12 for p in board.pairs)
    # Holm over the 6 pairs: 2^-11 <= .05/6, 2^-9 <= .05/5, 2^-8 <= .05/4, 2^-6 <= .05/3,
    # then 0.25 > .05/2 stops: A-B and C-D are not significant.
    significant = {k: p.better for k, p in pairs.items() if p.significant}
    assert significant == {
        ("A", "C"): "Entry A",
        ("A", "D"): "Entry A",
        ("B", "C"): "Entry B",
        ("B", "D"): "Entry B",
    }


def test_rank_ranges_and_ties_follow_the_significant_pairs(board) -> None:
    rows = {r.key: r for r in board.rows}
    assert [r.key for r in board.rows] == ["A", "B", "C", "D", "E"]
    # A and B each beat two entries and are beaten by none: ranks 1-2; C and D: 3-4.
    assert {k: (r.rank_best, r.rank_worst, r.tied) for k, r in rows.items()} == {
        "A": (1, 2, True),
        "B": (1, 2, True),
        "C": (3, 4, True),
        "D": (3, 4, True),
        "E": (None, None, None),
    }
    assert rows["E"].items is None and rows["E"].published_percent == 30.0


def test_dominance_needs_significance_and_a_lower_cost_per_resolved(board) -> None:
    pairs = {(p.key_a, p.key_b): p for p in board.pairs}
    rows = {r.key: r for r in board.rows}
    assert rows["A"].cost_per_success_usd == Decimal("1")
    assert rows["B"].cost_usd == Decimal("1.20")
    assert rows["C"].cost_per_success_usd == Decimal("0.3")
    # B is better than C and cheaper per resolved instance (0.1333… < 0.30): B dominates C.
    assert pairs[("B", "C")].dominates == "Entry B"
    # A is better than C but dearer per resolved instance (1.00 > 0.30): no dominance.
    assert pairs[("A", "C")].significant and pairs[("A", "C")].dominates is None
    # Not significant, however cheap: A-B (B is cheaper) has no dominance either way.
    assert pairs[("A", "B")].dominates is None
    assert rows["C"].dominated_by == ("Entry B",)


def test_an_item_without_a_cost_leaves_the_total_unknown(board) -> None:
    d = next(r for r in board.rows if r.key == "D")
    assert d.cost_usd is None and d.cost_per_success_usd is None
    # An unknown cost never dominates nor is dominated (B beats D significantly).
    pair = next(p for p in board.pairs if (p.key_a, p.key_b) == ("B", "D"))
    assert pair.significant and pair.dominates is None


def test_clopper_pearson_at_the_edges_and_inside() -> None:
    # k = 0: [0, 1 - 0.025^(1/n)]; k = n: [0.025^(1/n), 1] (the beta quantiles in closed form).
    low, high = clopper_pearson(0, 12)
    assert low == 0.0 and high == pytest.approx(100 * (1 - 0.025 ** (1 / 12)), rel=1e-12)
    low, high = clopper_pearson(12, 12)
    assert high == 100.0 and low == pytest.approx(100 * 0.025 ** (1 / 12), rel=1e-12)
    # k = 1 of n = 2 is symmetric: low = 1 - high.
    low, high = clopper_pearson(1, 2)
    assert low == pytest.approx(100 - high, rel=1e-12)
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


def test_board_frames_publish_exact_costs_and_the_issue_columns(board) -> None:
    frames = board_frames([board])
    boards, pairs = frames["item_boards"], frames["item_board_pairs"]
    assert boards.columns[:13] == [
        "board", "entry", "model_id", "items", "resolved", "score", "ci_low", "ci_high",
        "rank_best", "rank_worst", "tied", "cost_usd", "cost_per_success_usd",
    ]  # fmt: skip
    assert pairs.columns[:9] == [
        "board", "entry_a", "entry_b", "items", "discordant", "p_value", "significant",
        "better", "dominates",
    ]  # fmt: skip
    b = boards.filter(boards["entry_key"] == "B").row(0, named=True)
    assert b["cost_usd"] == "1.2" and b["cost_per_success_usd"] == "0.133333333333"
    assert b["score"] == 75.0


# The SWE-bench source -----------------------------------------------------------------------


def _payload(entries: list[dict]) -> bytes:
    return json.dumps({"leaderboards": [{"name": "bash-only", "results": entries}]}).encode()


def _record(folder: str, checked, **extra) -> dict:
    return {
        "name": f"Entry {folder}",
        "folder": folder,
        "date": "2025-11-24",
        "resolved": 50.0,
        "cost": 1.5,
        "checked": checked,
        "tags": [f"Model: model-{folder}", "Org: Someone"],
        **extra,
    }


def test_checked_is_read_from_a_boolean_or_a_string(warehouse) -> None:
    note = "false (See README.md for info on how to get your results verified)"
    entries = [
        _record("a", True),
        _record("b", False),
        _record("c", note),
        _record("d", None),
        _record(
            "e",
            True,
            per_instance_details={
                "x__y-1": {"resolved": True, "cost": 0.22785100000000003, "api_calls": 14},
                "x__y-2": {"resolved": False, "cost": None, "api_calls": 3},
            },
        ),
    ]
    run = warehouse.ingest("swebench", files={"leaderboards.json": _payload(entries)})
    assert run.status == "accepted", run.reason
    rows = warehouse.query(
        "SELECT folder, checked, checked_as_sent, model_tags, per_item_results "
        "FROM swebench_entries ORDER BY folder"
    )
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("a", True, "true"),
        ("b", False, "false"),
        ("c", False, note),
        ("d", None, None),
        ("e", True, "true"),
    ]
    assert json.loads(rows[0][3]) == ["model-a"] and rows[4][4] == 2
    items = warehouse.query(
        "SELECT instance_id, resolved, cost_usd, api_calls FROM swebench_item_results "
        "ORDER BY instance_id"
    )
    # The cost keeps every published digit (read as a decimal, never through a float).
    assert items == [
        ("x__y-1", True, Decimal("0.22785100000000003"), 14),
        ("x__y-2", False, None, 3),
    ]


def test_a_bad_record_is_quarantined_by_file_record_and_field(warehouse) -> None:
    entries = [
        _record("a", "maybe"),
        _record("b", True, per_instance_details={"x__y-1": {"resolved": "sometimes"}}),
        _record("c", True),
    ]
    run = warehouse.ingest("swebench", files={"leaderboards.json": _payload(entries)})
    assert run.status == "accepted"
    reasons = {
        (q["file_name"], q["record_number"], q["field"]) for q in warehouse.quarantine(run.run_id)
    }
    assert ("leaderboards.json", 1, "checked") in reasons
    assert ("leaderboards.json", 1, "resolved") in reasons
    assert warehouse.query("SELECT folder FROM swebench_entries ORDER BY folder") == [
        ("b",),
        ("c",),
    ]


def test_an_unreadable_payload_rejects_the_run_and_changes_nothing(warehouse) -> None:
    first = warehouse.ingest(
        "swebench", files={"leaderboards.json": _payload([_record("a", True)])}
    )
    assert first.status == "accepted"
    run = warehouse.ingest("swebench", files={"leaderboards.json": b'{"leaderboards": {}}'})
    assert run.status == "rejected"
    assert "leaderboards.json" in run.reason and "leaderboards" in run.reason
    assert warehouse.query("SELECT folder FROM swebench_entries") == [("a",)]


# The real board -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_boards(recorded_warehouse):
    return {b.board: b for b in load_boards(recorded_warehouse)}


def test_the_recorded_bash_only_board(real_boards) -> None:
    board = real_boards["bash-only"]
    ranked = [r for r in board.rows if r.rank_best is not None]
    # Parity before rank: 25 entries publish per-item results, and 3 of them disagree with
    # their published percentage at its rounding (Claude 3.7 Sonnet 10.2 from items, 52.8
    # published; Claude 4 Sonnet 64.80 and 64.93; Llama 4 Maverick 21.00 and 21.04, the last
    # two as if over 499 instances): they are listed with both numbers, not ranked.
    held = {r.entry: r.parity for r in board.rows if r.parity is not None}
    assert sorted(held) == [
        "Claude 3.7 Sonnet (20250219)", "Claude 4 Sonnet (20250514)",
        "Llama 4 Maverick Instruct",
    ]  # fmt: skip
    assert (
        "64.80%" in held["Claude 4 Sonnet (20250514)"]
        and "64.93%" in held["Claude 4 Sonnet (20250514)"]
    )
    assert len([r for r in board.rows if r.items]) == 25
    assert len(ranked) == 22 and len(board.rows) == 31 and len(board.pairs) == 22 * 21 // 2
    top = ranked[0]
    # Claude 4.5 Opus resolves 372 of 500 in the recorded file (74.4%, as published).
    assert (top.entry, top.resolved, top.items, top.score) == (
        "Claude 4.5 Opus medium (20251101)",
        372,
        500,
        74.4,
    )
    assert top.cost_usd == sum(
        (Decimal(str(v["cost"])) for v in _details(top.key).values()), Decimal(0)
    )
    assert any(p.significant for p in board.pairs) and any(not p.significant for p in board.pairs)
    assert all(r.rank_best is None for r in board.rows if not r.items)


def _details(folder: str) -> dict:
    path = Path(settings.REPO_ROOT) / "sources" / "snapshots" / "swebench" / "leaderboards.json"
    document = json.loads(path.read_bytes(), parse_float=Decimal)
    board = next(b for b in document["leaderboards"] if b["name"] == "bash-only")
    return next(r for r in board["results"] if r["folder"] == folder)["per_instance_details"]


def test_model_tags_match_the_registry_only_where_the_rules_allow(recorded_warehouse) -> None:
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    models = entry_models(
        recorded_warehouse,
        aliases,
        {
            "exact id": ["Model: gpt-5.1-codex", "Org: OpenAI", "System: Attempts - 1"],
            "two models": ["Model: gpt-5.1-codex", "Model: gpt-5", "Org: OpenAI"],
            "unknown": ["Model: no-such-model-anywhere-7", "Org: OpenAI"],
        },
    )
    assert models == {"exact id": "openai/gpt-5.1-codex", "two models": None, "unknown": None}


# The page ------------------------------------------------------------------------------------


def test_the_page_reads_the_board_in_words_and_escapes_names() -> None:
    from bench_pipeline.site.item_boards import intervals_svg, pair_matrix, reading, scatter_svg

    hostile = BoardEntry(key="X", entry="<script>alert(1)</script>", items={})
    entries = [_entry("A", 12, "1.00"), _entry("B", 9, "0.10"), _entry("C", 2, "0.05"), hostile]
    frames = board_frames([item_board("toy", entries)])
    rows, pairs = frames["item_boards"].to_dicts(), frames["item_board_pairs"].to_dicts()
    sentences = reading(rows, pairs)
    # A and B share ranks 1-2; 2 of 3 pairs separate (A-C, B-C); B dominates C.
    assert sentences[0].startswith("The top two are statistically tied (Entry A, Entry B)")
    assert sentences[1].startswith("2 of 3 pairs differ significantly")
    assert "1 entries are dominated" in sentences[2]
    assert sentences[-1] == "1 entries publish only a percentage; they are listed without a rank."
    svg = intervals_svg(rows, "toy") + scatter_svg(rows, "toy")
    assert "<script>" not in svg and svg.count("<svg") == 2
    # C is dominated by B (better and cheaper): its point alone is drawn hollow
    hollow = re.findall(r'class="point hollow" data-label="([^"]*)"', str(scatter_svg(rows, "t")))
    assert hollow == [r["entry"] for r in rows if r["dominated_by"]] == ["Entry C"]
    drawn = re.findall(
        r'data-label="([^"]*)" data-value="([^"]*)" data-low="([^"]*)" data-high="([^"]*)" '
        r'data-rank-best="(\d+)" data-rank-worst="(\d+)"',
        str(intervals_svg(rows, "toy")),
    )
    ranked = [r for r in rows if r["items"] is not None]
    assert drawn == [
        (r["entry"], repr(r["score"]), repr(r["ci_low"]), repr(r["ci_high"]),
         str(r["rank_best"]), str(r["rank_worst"]))
        for r in ranked
    ]  # fmt: skip
    marks = [[c["mark"] for c in cells] for _, cells in pair_matrix(rows, pairs)]
    assert marks == [["", "·", "▲"], ["·", "", "▲"], ["▼", "▼", ""]]


def test_a_board_of_hundreds_of_entries_keeps_its_page_light(tmp_path) -> None:
    """Pairs grow with the square of the entries: the page draws the top entries, a top
    corner of the matrix and the first page of the table, says so, and stays small."""
    import random

    from bench_pipeline.site import build_site
    from bench_pipeline.site.item_boards import MATRIX_ENTRIES, NAMED, reading
    from bench_pipeline.site.paging import CHART_ROWS, PAGE_ROWS
    from tests.synthetic import copy_downloads, synthetic_tables, write_release

    rng = random.Random(7)
    entries = [
        BoardEntry(
            key=f"k{n}", entry=f"Entry <{n}>", model_id=None, published_percent=None,
            items={item: ItemResult(rng.random() < n / 700, Decimal("0.01")) for item in ITEMS},
        )
        for n in range(PAGE_ROWS + 100)
    ]  # fmt: skip
    frames = board_frames([item_board("Huge", entries)])
    rows, pairs = frames["item_boards"].to_dicts(), frames["item_board_pairs"].to_dicts()
    assert len(pairs) == len(entries) * (len(entries) - 1) // 2
    releases, site = tmp_path / "releases", tmp_path / "site"
    release = write_release(
        releases, "r-huge", synthetic_tables(6) | {"item_boards": rows, "item_board_pairs": pairs},
        created_at="2025-06-01T06:00:00Z",
    )  # fmt: skip
    copy_downloads(release, site)
    build_site(release, site, releases, workers=1)
    page = (site / "item-boards" / "huge.html").read_text()
    assert len(page.encode()) < 1_100_000, len(page.encode())
    assert page.count('class="entry"') == CHART_ROWS  # whiskers drawn
    assert f"The top {CHART_ROWS} of {len(entries)} ranked entries" in page
    matrix = page[page.index("<tbody>", page.index('id="item-pairs"')) :]
    assert matrix.count("<tr><th>") == MATRIX_ENTRIES
    assert f"The top {MATRIX_ENTRIES} of {len(entries)} ranked entries" in page
    table = page[page.index('id="item-board"') : page.index('id="item-pairs"')]
    assert table.count("<tr><td") == PAGE_ROWS and f"of {len(entries):,} entries" in page
    top = str(rows[0]["entry"])
    assert "<" in top and top not in page and top.replace("<", "&lt;").replace(">", "&gt;") in page
    sentences = reading(rows, pairs)
    assert all(s.count("Entry <") <= NAMED for s in sentences)


def test_the_matrix_marks_two_entries_that_share_a_name_by_their_wins() -> None:
    from dataclasses import replace

    from bench_pipeline.site.item_boards import pair_matrix

    twins = [replace(_entry("A", 12, "1.00"), entry="Twin"), replace(_entry("C", 0, "1.00"),
             entry="Twin")]  # fmt: skip
    frames = board_frames([item_board("twins", twins)])
    rows, pairs = frames["item_boards"].to_dicts(), frames["item_board_pairs"].to_dicts()
    assert pairs[0]["significant"]
    marks = [[c["mark"] for c in cells] for _, cells in pair_matrix(rows, pairs)]
    assert marks == [["", "▲"], ["▼", ""]]


def test_entries_match_as_when_every_host_listing_is_made(recorded_warehouse) -> None:
    """Matching board entries without making the models.dev hosts' listings (which
    `host_matches` sets aside) gives every recorded entry the model it got with them."""
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    every = all_candidates(recorded_warehouse, aliases)
    without = all_candidates(recorded_warehouse, aliases, hosts=False)
    assert any(c.role == "host" for c in every)
    assert without == [c for c in every if c.role != "host"]
    rows = recorded_warehouse.execute(
        "SELECT leaderboard, folder, tags FROM swebench_entries"
    ).fetchall()
    tags = {f"{b}\0{f}": json.loads(t or "[]") for b, f, t in rows}
    models = entry_models(recorded_warehouse, aliases, tags)
    listings = [
        Candidate(source="swebench", key=key, name=found[0], organization=None, role="host",
                  host="swebench", api_ids=(found[0],),
                  provider_ids=(found[0],) if "/" in found[0] else ())
        for key, listed in tags.items() if len(found := model_tags(listed)) == 1
    ]  # fmt: skip
    assert any(models.values())
    matched = host_matches(every, aliases, listings)
    assert host_matches(without, aliases, listings) == matched


def test_stored_entry_models_are_the_rebuilt_registrys(recorded_warehouse) -> None:
    """The models the registry asset placed the entries on, from its own build, are what a
    registry rebuilt for them (the item boards' earlier path) gives every recorded entry."""
    aliases = AliasFile.load(settings.sources_dir() / "aliases.toml")
    tags = entry_tags(recorded_warehouse)
    stored = stored_entry_models(recorded_warehouse)
    assert stored == entry_models(recorded_warehouse, aliases, tags)
    assert set(stored) == set(tags) and any(stored.values()) and None in stored.values()
