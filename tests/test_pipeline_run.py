"""`bench run` end to end in a fresh BENCH_HOME, as `make run` does it."""

import csv
import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from itertools import combinations
from pathlib import Path

import duckdb
import pytest
from stages import bench_env

from bench_pipeline.core import settings
from bench_pipeline.ingest.catalog import evaluations

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
pytestmark = pytest.mark.integration


def bench_run(home: Path, snapshots: Path | None = None) -> subprocess.CompletedProcess:
    env = bench_env(home, snapshots)
    return subprocess.run(
        [sys.executable, "-m", "bench_pipeline.cli", "run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def csv_records(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def expected_valid_rows() -> dict[str, int]:
    """Valid records in the recorded snapshots, counted straight from the files."""
    models = json.loads((SNAPSHOTS / "openrouter_models" / "models.json").read_text())["data"]
    endpoints = sum(
        len(json.loads(p.read_text())["data"]["endpoints"])
        for p in (SNAPSHOTS / "openrouter_endpoints").glob("*.json")
    )
    catalogue = json.loads((SNAPSHOTS / "models_dev" / "api.json").read_text())
    arena = SNAPSHOTS / "arena"
    ratings = sum(
        len(models_in)
        for p in arena.glob("leaderboard-*.json")
        for models_in in json.loads(p.read_text()).values()
    ) + sum(len(csv_records(p)) for p in arena.glob("*.csv"))
    swebench = json.loads((SNAPSHOTS / "swebench" / "leaderboards.json").read_text())
    swebench = swebench["leaderboards"]
    scored = 0
    for spec in evaluations():
        for record in csv_records(SNAPSHOTS / "epoch" / spec.file):
            scored += bool(record["Model version"]) and bool(record[spec.score_column])
    return {
        "openrouter_models": len(models),
        "openrouter_endpoints": endpoints,
        "modelsdev_models": sum(len(p["models"]) for p in catalogue.values()),
        "arena_ratings": ratings,
        "arena_models": len(json.loads((arena / "scatterplot-data.json").read_text())),
        "evaluation_rows": scored,
        "epoch_models": len(csv_records(SNAPSHOTS / "epoch" / "epoch_capabilities_index.csv")),
        "swebench_entries": sum(len(b["results"]) for b in swebench),
        "swebench_item_results": sum(
            len(r.get("per_instance_details") or {}) for b in swebench for r in b["results"]
        ),
        # the inspect_ai logs: one row per scored sample id (epochs averaged), one per log
        "item_matrix_results": sum(_sample_ids(p) for p in LOGS),
        "item_matrix_entries": len(LOGS),
    }


LOGS = sorted((SNAPSHOTS / "inspect_popularity").glob("*.eval"))


def _sample_ids(log: Path) -> int:
    members = zipfile.ZipFile(log).namelist()
    return len({m.split("_epoch_")[0] for m in members if m.startswith("samples/")})


def distinct_openrouter_models() -> int:
    """OpenRouter ids less the `:variant` and `~alias` ids that name a listed model, and the
    ids that add a reasoning effort (`sources/aliases.toml`) to a listed id."""
    listing = json.loads((SNAPSHOTS / "openrouter_models" / "models.json").read_text())["data"]
    ids = {m["id"] for m in listing}
    aliases = tomllib.loads((SNAPSHOTS.parent / "aliases.toml").read_text())
    suffixes = [
        s for group in aliases["setting_suffixes"]["openrouter_models"].values() for s in group
    ]
    folded = [
        m
        for m in listing
        if (":" in m["id"] and m["id"].split(":")[0] in ids)
        or (m["id"].startswith("~") and (m.get("alias_target") or {}).get("slug") in ids)
        or any(m["id"].endswith(s) and m["id"].removesuffix(s) in ids for s in suffixes)
    ]
    return len(ids) - len(folded)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    result = bench_run(home)
    assert result.returncode == 0, result.stdout + result.stderr
    return home


def live_counts(database: Path) -> dict[str, int]:
    with duckdb.connect(str(database), read_only=True) as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in expected_valid_rows()
        }


def test_live_tables_hold_every_valid_snapshot_record(home: Path) -> None:
    assert live_counts(home / "warehouse" / "bench.duckdb") == expected_valid_rows()


def test_analyst_copy_matches_the_warehouse(home: Path) -> None:
    assert live_counts(home / "build" / "warehouse" / "bench.duckdb") == expected_valid_rows()


def test_every_source_run_is_recorded_and_accepted(home: Path) -> None:
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        rows = conn.execute("SELECT source, status, content_sha256 FROM source_runs").fetchall()
    assert sorted(r[0] for r in rows) == sorted(
        ["openrouter_models", "openrouter_endpoints", "models_dev", "arena", "epoch", "swebench",
         "inspect_popularity"]
    )  # fmt: skip
    assert {r[1] for r in rows} == {"accepted"}
    assert all(len(r[2]) == 64 for r in rows)


def test_every_asset_reports_its_row_counts_and_seconds(home: Path) -> None:
    """Observability: each asset's last materialisation says how many rows (pages, for the
    site) and how long it took."""
    import dagster as dg

    from bench_pipeline.definitions import build_definitions

    graph = build_definitions().resolve_asset_graph()
    with dg.DagsterInstance.from_config(str(home / "build" / "dagster")) as instance:
        found = {}
        for key in graph.get_all_asset_keys():
            event = instance.get_latest_materialization_event(key)
            found[key.to_user_string()] = event and set(event.asset_materialization.metadata)
    assert len(found) > 30
    for asset, metadata in found.items():
        assert metadata is not None, f"{asset} was never materialised"
        assert "seconds" in metadata, f"{asset}: no seconds in {metadata}"
        counts = [m for m in metadata if m.endswith("rows") or m.startswith("rows") or m == "pages"]
        assert counts, f"{asset}: no row count in {sorted(metadata)}"


def test_bench_run_stages_payloads_ahead_in_its_worker(home: Path) -> None:
    """`bench run` hands each new payload to its staging worker at fetch time; the stagings
    after the first ones (the worker needs a moment to start) take what it staged, and the
    live tables hold every record (`test_live_tables_hold_every_valid_snapshot_record`)."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home / "build" / "dagster")) as instance:
        ahead = {}
        for source in ("openrouter_models", "openrouter_endpoints", "models_dev", "arena",
                       "epoch", "swebench"):  # fmt: skip
            event = instance.get_latest_materialization_event(dg.AssetKey([source, "staging"]))
            assert event is not None, source
            ahead[source] = event.asset_materialization.metadata["staged_ahead"].value
    assert any(ahead.values()), ahead


def test_demo_navigator_board_has_significant_pairs_and_ties(home: Path) -> None:
    """The offline demo's simulated setups differ in latent skill, so its Navigator board
    separates some pairs and not others (and says the data is simulated)."""
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        (significant,) = conn.execute(
            "SELECT count(*) FROM navigator_pairs WHERE rejected"
        ).fetchone()
        (tied,) = conn.execute("SELECT count(*) FROM navigator_models WHERE tied").fetchone()
        (simulated,) = conn.execute("SELECT bool_and(simulated) FROM navigator_models").fetchone()
    assert significant >= 1 and tied >= 1 and simulated is True


def _separated(a: dict[str, str], b: dict[str, str]) -> bool:
    """Two groups' 90% intervals do not overlap: the board tells them apart."""
    return float(a["ci_low"]) > float(b["ci_high"]) or float(b["ci_low"]) > float(a["ci_high"])


def test_demo_usecase_board_has_separated_pairs_and_ties(home: Path) -> None:
    """The offline demo submits simulated use-case runs from each model's latent skill, so
    its UseCaseRank board ranks groups, tells some apart (90% intervals that do not overlap)
    and not others (intervals that overlap: a tie), and labels every row simulated, in the
    warehouse and in the downloads."""
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        flags = conn.execute(
            "SELECT bool_and(simulated) FROM usecase_runs UNION ALL "
            "SELECT bool_and(simulated) FROM usecase_groups UNION ALL "
            "SELECT bool_and(simulated) FROM submitted_runs"
        ).fetchall()
    assert flags == [(True,)] * 3
    groups = csv_records(home / "build" / "site" / "data" / "usecase_groups.csv")
    assert groups and all(g["simulated"] == "true" for g in groups)
    runs = csv_records(home / "build" / "site" / "data" / "usecase_runs.csv")
    assert runs and all(r["simulated"] == "true" for r in runs)
    ranked: dict[str, list[dict[str, str]]] = {}
    for g in groups:
        if g["rank"] and g["ci_low"]:
            ranked.setdefault(g["use_case"], []).append(g)
    pairs = [(a, b) for board in ranked.values() for a, b in combinations(board, 2)]
    assert any(_separated(a, b) for a, b in pairs)
    assert any(not _separated(a, b) for a, b in pairs)
    scores = {round(float(g["score"]), 3) for g in groups if g["score"]}
    assert len(scores) > len(ranked)  # real spread, not one score per use case


def test_demo_navigator_v1_shows_the_cap_triggering_and_the_waiting_splits(home: Path) -> None:
    """The demo's v1 library run (simulated) holds stored 5s with a weak dimension: published
    as shown 4, mixed, and marked so on the Navigator page beside the judge-split count."""
    site = home / "build" / "site"
    rows = csv_records(site / "data" / "navigator_v1_results.csv")
    mixed = [r for r in rows if r["label"] == "mixed"]
    assert mixed and all((r["stored_overall"], r["displayed_overall"]) == ("5.0", "4.0")
                         for r in mixed)  # fmt: skip
    assert {r["task"] for r in csv_records(site / "data" / "navigator_v1_tasks.csv")} == {
        r["task"] for r in rows
    }  # every library task was run on the demo setups
    page = (site / "navigator.html").read_text("utf-8")
    assert "badge mixed" in page and 'id="navigator-pending"' in page


def test_demo_shows_waiting_splits_graded_prototypes_and_a_contamination_comparison(
    home: Path,
) -> None:
    """Issue 18's items the offline demo must show: Navigator runs waiting for a person on a
    (seeded, simulated) judge split, listed by `bench splits`; prototypes opened in Chromium
    with the vision step's answers, some passing and some failing; and each setup's private
    PM case compared with a public case of its category."""
    site = home / "build" / "site"
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        (splits,) = conn.execute(
            "SELECT count(*) FROM (SELECT run_id, input_id, question FROM grades "
            "WHERE suite = 'navigator' AND grader_kind = 'judge' AND NOT sentinel AND NOT held "
            "GROUP BY ALL HAVING count(DISTINCT outcome) = 2 "
            "AND bool_and(outcome IN ('pass', 'fail')))"
        ).fetchone()
        pages = conn.execute(
            "SELECT outcome, reason <> 'the output holds no HTML document' FROM grades "
            "WHERE suite = 'pm' AND grader_kind = 'browser' AND question = 'browser'"
        ).fetchall()
        vision = dict(conn.execute(
            "SELECT outcome, count(*) FROM grades WHERE grader_kind = 'vision' AND simulated "
            "GROUP BY outcome"
        ).fetchall())  # fmt: skip
    assert splits >= 1
    pending = sum(
        int(r["pending_runs"]) for r in csv_records(site / "data" / "navigator_models.csv")
    )
    assert pending >= 1
    page = (site / "navigator.html").read_text("utf-8")
    assert f"{pending} run{'s' if pending != 1 else ''}</strong> wait" in page
    listed = subprocess.run(
        [sys.executable, "-m", "bench_pipeline.cli", "splits"], env=bench_env(home),
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert f"{splits} judge split(s) wait for a person:" in listed
    opened = [outcome for outcome, is_page in pages if is_page]
    # Pages Chromium opened: some pass, some not; the weakest answers build no page and fail.
    assert "pass" in opened and {"partial", "fail"} & set(opened), pages
    assert ("fail", False) in pages, pages
    assert vision.get("pass", 0) >= 1 and vision.get("fail", 0) >= 1, vision
    contamination = csv_records(site / "data" / "pm_contamination.csv")
    assert contamination and all(int(r["matched_by_category"]) >= 1 for r in contamination)
    assert all(r["p_value"] for r in contamination)


def test_item_boards_are_published_and_linked_from_home(home: Path) -> None:
    site = home / "build" / "site"
    assert 'href="item-boards.html"' in (site / "index.html").read_text("utf-8")
    index = (site / "item-boards.html").read_text("utf-8")
    assert 'href="item-boards/bash-only.html"' in index
    page = (site / "item-boards" / "bash-only.html").read_text("utf-8")
    # the two charts (interval whiskers, cost scatter), beside the tiers' small rank-set bars
    assert page.count('<svg class="chart') == 2 and 'id="item-pairs"' in page
    assert "statistically tied" in page
    rows = csv_records(site / "data" / "item_boards.csv")
    with_items = [r for r in rows if r["board"] == "bash-only" and r["items"]]
    ranked = [r for r in with_items if r["rank_best"]]
    # parity before rank: 3 of the 25 disagree with their published percentage
    assert (len(with_items), len(ranked)) == (25, 22)
    assert "Not ranked because the per-item results disagree" in page
    pairs = csv_records(site / "data" / "item_board_pairs.csv")
    assert sum(r["board"] == "bash-only" for r in pairs) == 231
    # the per-item results source kind: the inspect_ai logs' board and its card
    assert "inspect_ai popularity" in index
    assert sum(r["board"] == "inspect_ai popularity" for r in rows) == 4


def _materialized_since(home: Path, since: float) -> list[str]:
    """Asset keys materialised by the Dagster runs created after `since` (a Unix time)."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home / "build" / "dagster")) as instance:
        runs = [r for r in instance.get_run_records() if r.create_timestamp.timestamp() >= since]
        return sorted(
            record.event_log_entry.dagster_event.asset_key.to_user_string()
            for run in runs
            for record in instance.get_records_for_run(
                run.dagster_run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
            ).records
        )


def _counts(home: Path) -> dict[str, int]:
    tables = ("raw_files", "source_runs", "source_run_claims", "price_history", "releases")
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def test_a_second_run_that_changes_nothing_records_and_rebuilds_nothing(home: Path) -> None:
    import time

    before = _counts(home)
    site = (home / "build" / "site").resolve()
    release = (home / "build" / "releases" / "latest").read_text()
    since = time.time()
    result = bench_run(home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert live_counts(home / "warehouse" / "bench.duckdb") == expected_valid_rows()
    # Every payload is the live one: recorded as a check, never as a new run or raw file.
    assert _counts(home) == before
    with duckdb.connect(str(home / "warehouse" / "bench.duckdb"), read_only=True) as conn:
        checks = conn.execute(
            "SELECT c.source, c.live_run_id = r.run_id FROM source_checks c "
            "JOIN source_runs r ON r.source = c.source AND r.status = 'accepted' ORDER BY 1"
        ).fetchall()
    assert checks == [(name, True) for name in sorted(expected_sources())]
    # Dagster materialised only the fetches; the release and the site stayed as they were.
    assert _materialized_since(home, since) == sorted(f"{n}/raw" for n in expected_sources())
    assert (home / "build" / "site").resolve() == site
    assert (home / "build" / "releases" / "latest").read_text() == release
    assert "nothing changed" in result.stdout


def expected_sources() -> list[str]:
    from bench_pipeline.ingest.catalog import source_definitions

    return list(source_definitions())


def test_missing_source_folder_is_a_rejected_run_not_a_failure(tmp_path: Path) -> None:
    partial = tmp_path / "snapshots"
    shutil.copytree(SNAPSHOTS / "openrouter_models", partial / "openrouter_models")
    (partial / "arena").mkdir()  # present but empty
    result = bench_run(tmp_path / "home", partial)
    assert result.returncode == 0, result.stdout + result.stderr
    with duckdb.connect(str(tmp_path / "home" / "warehouse" / "bench.duckdb"), read_only=True) as c:
        status = dict(c.execute("SELECT source, status FROM source_runs").fetchall())
        reasons = dict(c.execute("SELECT source, reason FROM source_runs").fetchall())
        models = c.execute("SELECT count(*) FROM models").fetchone()[0]
    assert status == {
        "openrouter_models": "accepted",
        "openrouter_endpoints": "rejected",
        "models_dev": "rejected",
        "arena": "rejected",
        "epoch": "rejected",
        "swebench": "rejected",
        "inspect_popularity": "rejected",
    }
    assert "empty" in reasons["arena"] and "no snapshot folder" in reasons["epoch"]
    assert models == distinct_openrouter_models()
    assert "rejected" in result.stdout


def test_a_rejected_fetch_reaches_the_next_release_and_keeps_the_live_rows(
    home: Path, tmp_path: Path
) -> None:
    """The release publishes every source's last run: a rejected one leaves the live tables
    (so every asset input) as they were, yet a reader must see it in a new release."""
    snapshots = tmp_path / "snapshots"
    shutil.copytree(SNAPSHOTS, snapshots)
    cut = sorted((snapshots / "openrouter_endpoints").glob("*.json"))[0]
    cut.write_bytes(cut.read_bytes()[:100])  # a download cut short
    database = home / "warehouse" / "bench.duckdb"
    before = live_counts(database)
    latest = home / "build" / "releases" / "latest"
    previous = latest.read_text()
    result = bench_run(home, snapshots)
    assert result.returncode == 0, result.stdout + result.stderr
    assert live_counts(database) == before
    release = latest.read_text()
    assert release != previous, result.stdout
    runs = csv_records(home / "build" / "releases" / release / "data" / "source_runs.csv")
    last = {row["source"]: row for row in runs}
    assert last["openrouter_endpoints"]["status"] == "rejected"
    assert cut.name in last["openrouter_endpoints"]["reason"]
    assert {row["status"] for s, row in last.items() if s != "openrouter_endpoints"} == {"accepted"}
    assert release in (home / "build" / "site" / "downloads.html").read_text()
    # the analyst copy is rewritten too: it holds the rejected run
    rejected = last["openrouter_endpoints"]["run_id"]
    with duckdb.connect(str(home / "build" / "warehouse" / "bench.duckdb"), read_only=True) as copy:
        held = copy.execute("SELECT status FROM source_runs WHERE run_id = ?", [rejected])
        assert held.fetchall() == [("rejected",)], result.stdout

    # the same cut download again: judged and rejected again, and nothing below the source's
    # live tables (which kept their data version) is rebuilt for it
    import time

    since = time.time()
    again = bench_run(home, snapshots)
    assert again.returncode == 0, again.stdout + again.stderr
    stages = [f"openrouter_endpoints/{stage}" for stage in ("live", "staging", "validated")]
    fetched = [f"{name}/raw" for name in expected_sources()]
    # (only the analyst copy below them: the warehouse holds one more rejected run)
    copied = ["warehouse/analyst_copy"]
    assert _materialized_since(home, since) == sorted(fetched + stages + copied), again.stdout
    assert latest.read_text() == release
