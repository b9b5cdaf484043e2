"""Per-item results as a source kind (long, wide, inspect_ai `.eval`) and parity before rank.

The recorded payload is four real inspect_ai logs of its `popularity` task
(`sources/snapshots/inspect_popularity/`, see PROVENANCE.md).
"""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import duckdb
import pytest

from bench_pipeline.assets.sources import source_assets
from bench_pipeline.ingest.catalog import ItemBoardSpec, source_definitions
from bench_pipeline.ingest.item_matrix import MalformedFile, read_file
from bench_pipeline.ingest.parsers.item_results import parse_items
from bench_pipeline.ingest.payload import PayloadError, RawFile
from bench_pipeline.ingest.validation import PROBLEM_COLUMN, PROBLEM_FIELD_COLUMN
from bench_pipeline.scores.item_boards import BoardEntry, ItemResult, item_board
from bench_pipeline.scores.parity import parity

SNAPSHOT = Path(__file__).parents[1] / "sources" / "snapshots" / "inspect_popularity"
SPEC = ItemBoardSpec(benchmark="demo", items=10)


def _files() -> list[RawFile]:
    return [RawFile(p.name, p.read_bytes()) for p in sorted(SNAPSHOT.glob("*.eval"))]


def _problems(frame) -> list[tuple[str, int, str, str]]:
    bad = frame.filter(frame[PROBLEM_COLUMN].is_not_null())
    return list(bad.select("_file", "_record", PROBLEM_FIELD_COLUMN, PROBLEM_COLUMN).iter_rows())


@pytest.mark.unit
def test_real_eval_logs_read_one_system_each_with_the_scorer_value() -> None:
    read = {raw.name: read_file(raw.name, raw.content, "match") for raw in _files()}
    streaming = read["log_streaming.eval"]
    # Llama 3.1 405B ran samples 1 and 2 twice (epochs): 1 is I then C (0.5), 2 is C, C.
    assert streaming.form == "eval"
    assert [(c.system, c.item, c.score) for c in streaming.cells] == [
        ("azureai/Meta-Llama-3-1-405B-Instruct-jqf", "1", 0.5),
        ("azureai/Meta-Llama-3-1-405B-Instruct-jqf", "2", 1.0),
    ]
    assert [(s.metric, s.value) for s in streaming.stated] == [("accuracy", "0.75")]
    mini = read["2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"]
    assert len(mini.cells) == 10 and sum(c.score or 0 for c in mini.cells) == 8
    assert {r.stated[0].system for r in read.values()} == {
        "openai/gpt-4o-mini", "ollama/llama3.1", "ollama/gemma3",
        "azureai/Meta-Llama-3-1-405B-Instruct-jqf",
    }  # fmt: skip


@pytest.mark.unit
def test_a_corrupt_eval_zip_is_refused_naming_the_file_and_member() -> None:
    good = (SNAPSHOT / "log_formats.eval").read_bytes()
    with pytest.raises(MalformedFile, match=r"cut\.eval: not a readable \.eval log \(zip"):
        read_file("cut.eval", good[: len(good) // 2])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("header.json", '{"eval": {"task": "t"}}')
    with pytest.raises(MalformedFile, match=r"nomodel\.eval: header\.json, field 'eval\.model'"):
        read_file("nomodel.eval", buffer.getvalue())
    # A sample that is not JSON quarantines that sample alone, naming member and field.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("header.json", '{"eval": {"model": "m"}}')
        archive.writestr("samples/1_epoch_1.json", '{"id": 1, "scores": {"s": {"value": "C"}}}')
        archive.writestr("samples/2_epoch_1.json", "{not json")
        archive.writestr("samples/3_epoch_1.json", '{"id": 3, "scores": {"s": {"value": "x"}}}')
    cells = read_file("odd.eval", buffer.getvalue()).cells
    assert [(c.where, c.field, c.problem is None) for c in cells] == [
        ("samples/1_epoch_1.json", "scores.s.value", True),
        ("samples/2_epoch_1.json", "record", False),
        ("samples/3_epoch_1.json", "scores.s.value", False),
    ]
    assert "not JSON" in (cells[1].problem or "") and "'x' is not a number" in (
        cells[2].problem or ""
    )


@pytest.mark.unit
def test_malformed_long_and_wide_files_name_file_record_and_field() -> None:
    long = b"system,item,score\nA,i1,1\nA,i2,maybe\nB,,1\n"
    staged = parse_items([RawFile("long.csv", long)], "demo_source", SPEC)["item_matrix_results"]
    assert _problems(staged) == [
        ("long.csv", 2, "score", "line 3: 'maybe' is not a number"),
        ("long.csv", 3, "item", "line 4: empty"),
    ]
    wide = b"system,i1,i2\nA,1,0\nB,1,2\n"
    staged = parse_items([RawFile("wide.csv", wide)], "demo_source", SPEC)["item_matrix_results"]
    assert _problems(staged) == [
        ("wide.csv", 4, "i2", "line 3: score 2 is outside the board's scale 0 to 1"),
    ]
    with pytest.raises(PayloadError, match=r"twice\.csv: header, column 3: item 'i1' twice"):
        parse_items([RawFile("twice.csv", b"system,i1,i1\nA,1,0\n")], "demo_source", SPEC)
    with pytest.raises(PayloadError, match="11 distinct item ids"):
        many = "system," + ",".join(f"i{n}" for n in range(11)) + "\nA" + ",1" * 11 + "\n"
        parse_items([RawFile("many.csv", many.encode())], "demo_source", SPEC)


@pytest.mark.unit
def test_duplicate_item_ids_count_once_and_the_run_says_so() -> None:
    long = b"system,item,score\nA,i1,1\nA,i2,0\nA,i1,1\nB,i1,0\nB,i1,1\n"
    staged = parse_items([RawFile("dup.csv", long)], "demo_source", SPEC)["item_matrix_results"]
    assert _problems(staged) == [
        ("dup.csv", 3, "score",
         "line 4: system 'A' item 'i1' given again (first at line 2), counted once"),
        ("dup.csv", 4, "score", "line 5: system 'B' item 'i1' has score 0 here and 1 at line 6"),
        ("dup.csv", 5, "score", "line 6: system 'B' item 'i1' has score 1 here and 0 at line 5"),
    ]  # fmt: skip
    assert staged.filter(staged[PROBLEM_COLUMN].is_null()).height == 2


@pytest.mark.unit
def test_parity_at_the_published_rounding() -> None:
    assert parity(66.0, 66.0).agrees and parity(0.75, "0.75").agrees
    assert parity(64.925, "64.93").agrees and parity(8.0, "8").agrees and parity(8.4, "8").agrees
    claude = parity(10.2, 52.8, basis="51 of 500 items", unit="%")
    assert not claude.agrees and claude.decimals == 1
    assert claude.reason is not None
    assert "10.2% (51 of 500 items)" in claude.reason and "52.8%" in claude.reason
    sonnet = parity(64.8, 64.93)  # 324 of 500; the publisher's 64.93 is 324 of 499
    assert not sonnet.agrees and sonnet.decimals == 2 and "64.80" in (sonnet.reason or "")


@pytest.mark.unit
def test_an_entry_at_odds_with_its_published_score_gets_no_rank() -> None:
    def entry(key: str, resolved: int, published: float) -> BoardEntry:
        items = {f"i{n:02d}": ItemResult(n < resolved) for n in range(20)}
        return BoardEntry(key, key, published_percent=published, items=items)

    board = item_board("b", [entry("a", 18, 90.0), entry("b", 10, 50.0), entry("c", 2, 52.8)])
    rows = {r.key: r for r in board.rows}
    assert (rows["a"].rank_best, rows["b"].rank_best) == (1, 2)
    held = rows["c"]
    assert (held.score, held.published_percent) == (10.0, 52.8)
    assert held.rank_best is None and held.rank_worst is None and held.tied is None
    assert held.parity is not None and "10.0%" in held.parity and "52.8%" in held.parity
    assert [(p.key_a, p.key_b) for p in board.pairs] == [("a", "b")]


@pytest.mark.assets
def test_the_recorded_logs_publish_a_board_with_its_card(recorded_warehouse) -> None:
    rows = recorded_warehouse.execute(
        "SELECT entry, items, score, rank_best, rank_worst, published_percent, parity "
        "FROM item_boards WHERE board = 'inspect_ai popularity' ORDER BY score DESC, entry"
    ).fetchall()
    assert {r[0]: (r[1], r[2]) for r in rows} == {
        "ollama/gemma3": (1, 100.0),
        "openai/gpt-4o-mini": (10, 80.0),
        "azureai/Meta-Llama-3-1-405B-Instruct-jqf": (2, 75.0),
        "ollama/llama3.1": (1, 0.0),
    }
    # Every log's stated accuracy agrees with its samples: all four are ranked.
    assert all(r[3] is not None and r[6] is None for r in rows)
    assert {r[0]: r[5] for r in rows}["openai/gpt-4o-mini"] == 80.0
    card = recorded_warehouse.execute(
        "SELECT systems, items, data_type, missing_cells FROM item_board_cards "
        "WHERE board = 'inspect_ai popularity'"
    ).fetchone()
    assert card == (4, 10, "continuous", 4 * 10 - 14)
    sets = recorded_warehouse.execute(
        "SELECT count(*) FROM item_board_rank_sets WHERE board = 'inspect_ai popularity'"
    ).fetchone()
    assert sets == (4,)
    # Its pairs carry the card's per-pair figures too, wherever two logs share an item.
    figures = recorded_warehouse.execute(
        "SELECT items, difference, sd FROM item_board_pairs WHERE board = 'inspect_ai popularity'"
    ).fetchall()
    assert any(n > 0 for n, _, _ in figures)
    assert all(d is not None for n, d, _ in figures if n > 0), figures
    # The SWE-bench boards: Claude 3.7 Sonnet (10.2 from items, 52.8 published) is held.
    held = recorded_warehouse.execute(
        "SELECT board, entry, score, published_percent, rank_best, parity FROM item_boards "
        "WHERE parity IS NOT NULL AND entry LIKE '%Claude 3.7 Sonnet%' ORDER BY board"
    ).fetchall()
    assert sorted((b, s, p, r) for b, _, s, p, r, _ in held) == [
        ("Verified", 10.2, 52.8, None),
        ("bash-only", 10.2, 52.8, None),
    ]
    assert all("10.2%" in reason and "52.8%" in reason for *_, reason in held)


@pytest.mark.assets
def test_a_corrupt_log_rejects_the_run_and_changes_nothing(tmp_path: Path) -> None:
    from stages import database_of, materialize_in

    definition = source_definitions()["inspect_popularity"]
    snapshots = tmp_path / "snapshots"
    shutil.copytree(SNAPSHOT, snapshots / "inspect_popularity")
    home = tmp_path / "home"
    materialize_in(home, source_assets(definition), snapshots=snapshots)

    def live() -> list[tuple]:
        with duckdb.connect(str(database_of(home)), read_only=True) as conn:
            return conn.execute(
                "SELECT system, item, score FROM item_matrix_results ORDER BY ALL"
            ).fetchall()

    before = live()
    assert len(before) == 14
    log = snapshots / "inspect_popularity" / "log_formats.eval"
    log.write_bytes(log.read_bytes()[:1000])
    materialize_in(home, source_assets(definition), snapshots=snapshots)
    with duckdb.connect(str(database_of(home)), read_only=True) as conn:
        status, reason = conn.execute(
            "SELECT status, reason FROM source_runs WHERE source = 'inspect_popularity' "
            "ORDER BY started_at DESC LIMIT 1"
        ).fetchone()
    assert status == "rejected" and "log_formats.eval: not a readable .eval log" in reason
    assert live() == before


@pytest.mark.unit
def test_a_log_whose_headline_disagrees_with_its_samples_is_listed_not_ranked() -> None:
    import polars as pl

    from bench_pipeline.scores.item_matrix_boards import source_board

    spec = ItemBoardSpec(benchmark="logs", items=4)
    cells = {"a": [1, 1, 1, 0], "b": [1, 0, 0, 0], "c": [0, 1, 1, 1]}
    results = pl.DataFrame(
        [(s, f"i{n}", float(v), None, None) for s, vs in cells.items() for n, v in enumerate(vs)],
        schema=["system", "item", "score", "item_group", "cost_usd"],
        orient="row",
    )
    # a states 0.75 (its mean), b states 0.5 where its samples give 0.25, c states nothing
    stated = pl.DataFrame({"system": ["a", "b"], "stated_score": ["0.75", "0.5"]})
    board, computed, _ = source_board("demo", spec, results, stated)
    rows = {r.key: r for r in board.rows}
    assert rows["a"].rank_best is not None and rows["c"].rank_best is not None
    held = rows["b"]
    assert (held.score, held.published_percent, held.rank_best) == (25.0, 50.0, None)
    assert held.parity is not None and "0.25" in held.parity and "0.5" in held.parity
    assert computed is not None and computed.systems == 2  # b has no rank set either
    assert set(board.pair_frame["entry_key_a"]) | set(board.pair_frame["entry_key_b"]) == {"a", "c"}


@pytest.mark.unit
def test_bench_card_reads_a_real_eval_log(capsys, tmp_path: Path) -> None:

    from bench_pipeline.cli.card import run

    path = SNAPSHOT / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
    # One log is one system: the card needs two, and says what it read (10 items).
    status = run(path, None, None, True)
    out = capsys.readouterr().out
    assert status == 2 and "at least two systems" in out and "got 1 × 10" in out
    cut = tmp_path / "cut.eval"
    cut.write_bytes(path.read_bytes()[:5000])
    assert run(cut, None, None, True) == 2
    assert "cut.eval: not a readable .eval log" in capsys.readouterr().out


@pytest.mark.unit
def test_items_nobody_lists_still_count_and_groups_come_from_the_rule() -> None:
    import polars as pl

    from bench_pipeline.scores.item_matrix_boards import source_board

    # A publisher that lists only the items someone solved, of a benchmark of 8: with
    # absent = "failed" each system is scored over all 8 (the unlisted ones failed).
    spec = ItemBoardSpec(benchmark="solved only", items=8, absent="failed", group_by=r"^(\w+)-")
    long = b"system,item,score\nA,x-1,1\nA,x-2,1\nA,y-1,1\nB,x-1,1\nC,y-1,1\n"
    staged = parse_items([RawFile("solved.csv", long)], "demo_source", spec)
    results = staged["item_matrix_results"].with_columns(pl.col("score").cast(pl.Float64))
    assert results["item_group"].to_list() == ["x", "x", "y", "x", "y"]
    board, computed, _ = source_board("demo_source", spec, results, staged["item_matrix_entries"])
    scores = {r.key: (r.items, r.resolved, r.score) for r in board.rows}
    assert scores == {"A": (8, 3, 37.5), "B": (8, 1, 12.5), "C": (8, 1, 12.5)}
    assert computed is not None and computed.items == 8 and computed.missing_cells == 0
    # the unlisted items are groups of their own beside the rule's x and y
    assert computed.groups == 2 + 5
