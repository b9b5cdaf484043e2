"""Tests for licence classification and the openness score."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from bench_pipeline.indices.openness import (
    DEFAULT_LICENCE_TABLE_PATH,
    LicenceTable,
    OpennessInput,
    classify_licence,
    decide_openness,
    load_licence_table,
    normalise_licence,
    openness_score,
)

pytestmark = pytest.mark.unit

TABLE_PATH = Path(__file__).resolve().parents[1] / "sources" / "licences.toml"
SNAPSHOTS = TABLE_PATH.parent / "snapshots"


@pytest.fixture(scope="module")
def table() -> LicenceTable:
    return load_licence_table(TABLE_PATH)


def test_default_path_is_the_repository_table() -> None:
    assert DEFAULT_LICENCE_TABLE_PATH == TABLE_PATH
    assert load_licence_table().entries == load_licence_table(TABLE_PATH).entries


@pytest.mark.parametrize(
    ("licence", "expected"),
    [
        ("Proprietary", "proprietary"),
        ("Propretary", "proprietary"),
        ("Apache 2.0", "permissive"),
        ("Apache-2.0", "permissive"),
        ("apache-2.0", "permissive"),
        ("MIT", "permissive"),
        ("Modified MIT", "permissive"),
        ("BSD-3", "permissive"),
        ("CC-BY-4.0", "permissive"),
        ("Llama 3.1 Community", "commercial_restricted"),
        ("Llama 3.3", "commercial_restricted"),
        ("Llama-3.3", "commercial_restricted"),
        ("Llama 4", "commercial_restricted"),
        ("Llama 2 Community", "commercial_restricted"),
        ("Qwen", "commercial_restricted"),
        ("Qianwen LICENSE", "commercial_restricted"),
        ("Gemma license", "commercial_restricted"),
        ("Gemma", "commercial_restricted"),
        ("DeepSeek", "commercial_restricted"),
        ("NVIDIA Open Model", "commercial_restricted"),
        ("Nvidia Open Model", "commercial_restricted"),
        ("Jamba Open Model", "commercial_restricted"),
        ("Falcon-180B TII License", "commercial_restricted"),
        ("CC-BY-NC-4.0", "non_commercial"),
        ("CC-BY-NC-SA-4.0", "non_commercial"),
        ("Non-commercial", "non_commercial"),
        ("MRL", "non_commercial"),
        ("Mistral Research", "non_commercial"),
        ("Open weights (unrestricted)", "permissive"),
        ("Open weights (restricted use)", "commercial_restricted"),
        ("Open weights (non-commercial)", "non_commercial"),
        ("API access", "proprietary"),
        ("Hosted access (no API)", "proprietary"),
        ("Unreleased", "proprietary"),
    ],
)
def test_messy_licence_strings(table: LicenceTable, licence: str, expected: str) -> None:
    assert classify_licence(licence, table) == expected


@pytest.mark.parametrize(
    "spelling", ["Apache 2.0", "Apache-2.0", "apache-2.0", "APACHE_2.0", "  apache 2 . 0 "]
)
def test_matching_ignores_case_punctuation_and_whitespace(
    table: LicenceTable, spelling: str
) -> None:
    assert normalise_licence(spelling) == "apache20"
    assert classify_licence(spelling, table) == "permissive"


@pytest.mark.parametrize("licence", ["Open", "Other", "Nvidia", "Some New Licence", "", "  ", None])
def test_vague_or_unseen_licences_are_unknown(table: LicenceTable, licence: str | None) -> None:
    assert classify_licence(licence, table) is None


def test_every_licence_in_the_arena_snapshot_resolves_or_is_deliberately_unknown(
    table: LicenceTable,
) -> None:
    # Strings seen in LMArena's licence column; each is either classified or
    # listed in the table as "unknown" - none is simply missing.
    seen = [
        "Proprietary",
        "Llama 3.2",
        "Yi License",
        "DBRX LICENSE",
        "AI2 ImpACT Low-risk",
        "Jamba Open",
        "Nvidia Open",
        "DeepSeek License",
        "Llama",
        "NexusFlow",
    ]
    for licence in seen:
        assert normalise_licence(licence) in table.entries, licence


def licence_strings_in_snapshots() -> dict[str, str]:
    """Every licence string the recorded snapshots hold, each with the file it is in:
    LMArena's licence columns (the public table's `License`, the catalogue's `license`) and
    Epoch AI's `Model accessibility`. Read from the raw files, not through the parsers, so a
    parser that drops a column cannot hide a string."""
    found: dict[str, str] = {}

    def walk(value: object, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key.casefold() in ("license", "licence") and isinstance(item, str):
                    found.setdefault(item, where)
                walk(item, where)
        elif isinstance(value, list):
            for item in value:
                walk(item, where)

    for path in sorted(SNAPSHOTS.rglob("*")):
        where = str(path.relative_to(SNAPSHOTS))
        if path.suffix == ".csv":
            with path.open(newline="", encoding="utf-8-sig") as handle:
                for row in csv.DictReader(handle):
                    for column in ("License", "Licence", "Model accessibility"):
                        if row.get(column):
                            found.setdefault(row[column], where)
        elif path.suffix == ".json" and path.parent.name in ("arena", "models_dev"):
            walk(json.loads(path.read_text("utf-8")), where)
    return found


def test_every_licence_string_in_the_snapshots_is_in_the_table(table: LicenceTable) -> None:
    seen = licence_strings_in_snapshots()
    assert len(seen) >= 40  # LMArena's and Epoch AI's strings: the reader found them
    missing = {s: where for s, where in seen.items() if normalise_licence(s) not in table.entries}
    assert not missing, f"add these to sources/licences.toml: {missing}"
    assert classify_licence("Modified MIT", table) == "permissive"
    assert {seen["Modified MIT"], seen["Open weights (restricted use)"]} <= {
        "arena/chatbot_arena_elo_scores_2026_01_16.csv",
        "arena/scatterplot-data.json",
        "epoch/epoch_capabilities_index.csv",
    }


def write_table(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "licences.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_table_is_extendable(tmp_path: Path) -> None:
    path = write_table(
        tmp_path, '[licences]\n"My Licence v1" = "non_commercial"\n"Vague" = "unknown"\n'
    )
    table = load_licence_table(path)
    assert classify_licence("my-licence v1", table) == "non_commercial"
    assert classify_licence("Vague", table) is None
    assert dict(table.entries) == {"mylicencev1": "non_commercial", "vague": None}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[licences]\n"MIT" = "free"\n', "free"),
        ('[licences]\n"Apache 2.0" = "permissive"\n"apache-2.0" = "proprietary"\n', "same"),
        ('[licences]\n"--" = "permissive"\n', "no letters"),
        ('[licenses]\n"MIT" = "permissive"\n', "unexpected"),
        ('title = "x"\n', "unexpected"),
        ("", "missing"),
    ],
)
def test_invalid_tables_are_rejected(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_licence_table(write_table(tmp_path, body))


def test_agreeing_duplicate_spellings_are_allowed(tmp_path: Path) -> None:
    path = write_table(
        tmp_path, '[licences]\n"Apache 2.0" = "permissive"\n"apache-2.0" = "permissive"\n'
    )
    assert dict(load_licence_table(path).entries) == {"apache20": "permissive"}


@pytest.mark.parametrize(
    ("open_weights", "licence_class", "has_repository", "expected"),
    [
        (True, "permissive", True, 100),
        (True, "permissive", False, 90),
        (True, "commercial_restricted", True, 60),
        (True, "commercial_restricted", False, 60),
        (True, "non_commercial", True, 40),
        (True, "non_commercial", False, 40),
        (False, None, False, 5),
        (False, "permissive", True, 5),
        (None, "proprietary", False, 5),
        (True, "proprietary", True, 5),
        (None, None, False, None),
        (None, None, True, None),
        (True, None, True, None),
        (None, "permissive", True, 100),
        (None, "permissive", False, 90),
        (None, "commercial_restricted", False, 60),
        (None, "non_commercial", False, 40),
    ],
)
def test_openness_levels(
    open_weights: bool | None,
    licence_class: str | None,
    has_repository: bool,
    expected: int | None,
) -> None:
    assert openness_score(open_weights, licence_class, has_repository) == expected


def test_openness_from_classified_strings(table: LicenceTable) -> None:
    assert openness_score(True, classify_licence("Apache-2.0", table), True) == 100
    assert openness_score(True, classify_licence("Gemma", table), True) == 60
    assert openness_score(True, classify_licence("MRL", table), True) == 40
    assert openness_score(None, classify_licence("Propretary", table), False) == 5
    assert openness_score(True, classify_licence("Open", table), True) is None


def test_unknown_licence_class_is_rejected() -> None:
    with pytest.raises(ValueError, match="licence class"):
        openness_score(True, "free-ish", True)


REPOSITORY = (
    '[repositories."org/Weights"]\nlicence = "MIT"\nevidence = "https://example.org/LICENSE"\n'
    'reviewed_on = "2026-12-06"\nreviewed_by = "a person"\n'
)


def test_repository_licences_are_read_and_checked(tmp_path: Path) -> None:
    table = load_licence_table(
        write_table(tmp_path, '[licences]\n"MIT" = "permissive"\n' + REPOSITORY)
    )
    named = table.repository_licence("ORG/weights")
    assert named is not None and named.licence == "MIT" and named.reviewed_by == "a person"
    assert table.repository_licence("org/other") is None
    unknown = '[licences]\n"Apache 2.0" = "permissive"\n' + REPOSITORY
    with pytest.raises(ValueError, match="'MIT' is not in \\[licences\\]"):
        load_licence_table(write_table(tmp_path, unknown))
    blank = REPOSITORY.replace('reviewed_by = "a person"', 'reviewed_by = ""')
    with pytest.raises(ValueError, match=r"org/Weights.*reviewed_by"):
        load_licence_table(write_table(tmp_path, '[licences]\n"MIT" = "permissive"\n' + blank))


def test_the_repository_table_names_the_kimi_licences(table: LicenceTable) -> None:
    for repository in ("moonshotai/Kimi-K2.5", "moonshotai/Kimi-K2-Thinking"):
        named = table.repository_licence(repository)
        assert named is not None and classify_licence(named.licence, table) == "permissive"


def weigh(table: LicenceTable, *inputs: tuple[str, bool | None, str | None]):
    return decide_openness(
        [OpennessInput(kind, f"{kind}-key", weights, licence) for kind, weights, licence in inputs],
        table,
    )


def test_hosts_closed_never_overrides_an_earlier_open_licence(table: LicenceTable) -> None:
    decision = weigh(table, ("host_listings", False, None), ("arena_licence", None, "MIT"))
    assert (decision.openness, decision.open_weights, decision.licence) == (90, True, "MIT")
    assert [i.input for i in decision.inputs] == ["arena_licence", "host_listings"]
    assert decision.roles == ("decided", "overruled")


def test_the_labs_listing_comes_first(table: LicenceTable) -> None:
    closed = weigh(table, ("lab_listing", False, None), ("arena_licence", None, "Apache 2.0"))
    assert (closed.openness, closed.roles) == (5, ("decided", "overruled"))
    opened = weigh(
        table,
        ("lab_listing", True, None),
        ("arena_licence", None, "Proprietary"),
        ("epoch_accessibility", None, "Open weights (unrestricted)"),
        ("host_listings", False, None),
    )
    assert (opened.openness, opened.licence) == (90, "Open weights (unrestricted)")
    assert opened.roles == ("agrees", "overruled", "decided", "overruled")


def test_an_earlier_licence_sets_the_level(table: LicenceTable) -> None:
    decision = weigh(
        table,
        ("weights_repository", True, "Modified MIT"),
        ("epoch_accessibility", None, "Open weights (restricted use)"),
    )
    assert (decision.openness, decision.has_repository) == (100, True)
    assert decision.roles == ("decided", "overruled")


def test_vague_inputs_decide_nothing(table: LicenceTable) -> None:
    decision = weigh(table, ("arena_licence", None, "Open"))
    assert (decision.openness, decision.decided_by, decision.roles) == (None, None, ("silent",))
    assert decision.licence == "Open"
    unknown_level = weigh(table, ("lab_listing", True, None), ("arena_licence", None, "Open"))
    assert (unknown_level.openness, unknown_level.roles) == (None, ("decided", "silent"))
    with pytest.raises(ValueError, match="unknown openness input"):
        weigh(table, ("rumour", True, None))
