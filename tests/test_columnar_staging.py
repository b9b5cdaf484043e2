"""Columnar staging gives exactly what record-by-record staging gives: the same contract
problems and null counts, the same staged frames (values, types, order), the same errors.

The reference is the record-by-record path kept beside the columnar one: the contract checked
by `contract.check_document`, rows built one dict per record and `staged_frame_by_record`.
Both run on every recorded snapshot, on the snapshots enlarged by the benchmarks' generator,
and on hostile variants of each (wrong types, nulls, blanks, extra and deep fields, look-alike
characters, huge numbers, NaN, duplicate keys, truncated or undecodable JSON).
"""

from __future__ import annotations

import copy
import json
import random
import struct
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from bench_pipeline.core import settings
from bench_pipeline.ingest import contract as contracts
from bench_pipeline.ingest import contract_screen, engine, payload
from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.parsers import arena, epoch, models_dev, openrouter, swebench
from bench_pipeline.ingest.payload import RawFile, read_csv
from bench_pipeline.ingest.sources import PARSERS
from benchmarks.enlarge_snapshots import enlarge

pytestmark = pytest.mark.unit

SNAPSHOTS = settings.REPO_ROOT / "sources" / "snapshots"
SOURCES = sorted(PARSERS)
PARSER_MODULES = (arena, epoch, models_dev, openrouter, swebench)
BY_RECORD = {
    "models_dev": models_dev.parse_by_record,
    "arena": arena.parse_by_record,
    "swebench": swebench.parse_by_record,
}


def _files(folder: Path) -> list[RawFile]:
    return [RawFile(p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()]


def _check_contract_by_record(contract: contracts.Contract, files: list[RawFile]):
    """`engine.check_contract` as it was: every record through `contract.check_document`."""
    report = contracts.ContractReport()
    report.missing = contracts.missing_files(
        contract, [f.name for f in files], {f.name: len(f.content) for f in files}
    )
    if report.missing:
        return report
    for raw in files:
        spec = next(
            (r for r in contract.records if contracts.fnmatch.fnmatchcase(raw.name, r.files)),
            None,
        )
        if spec is None:
            continue
        document = read_csv(raw, ()) if spec.records == "csv" else payload.load_json(raw)
        contracts.check_document(contract, raw.name, document, report)
    return report


@contextmanager
def _rows_by_record() -> Iterator[None]:
    """Every parser's `staged_frame` replaced by the record-by-record reference."""
    with ExitStack() as stack:
        for module in PARSER_MODULES:
            stack.enter_context(
                mock.patch.object(module, "staged_frame", payload.staged_frame_by_record)
            )
        yield


def stage(source: str, files: list[RawFile], by_record: bool) -> Any:
    """What staging makes of the files: (problems, null counts, frames) or the error."""
    files = [RawFile(f.name, f.content) for f in files]  # no parse cached from another run
    definition = source_definitions()[source]
    contract = definition.contract
    try:
        if by_record:
            report = _check_contract_by_record(contract, files)
            with _rows_by_record():
                frames = BY_RECORD.get(source, PARSERS[source])(files)
        else:
            report = engine.check_contract(contract, files)
            frames = PARSERS[source](files)
    except Exception as error:  # the engine turns any of these into the run's reason
        return ("error", type(error).__name__, str(error))
    if report.missing:
        return ("missing", report.missing)
    problems = engine._problem_frame(report, definition)
    staged = {t: engine._with_problems(f, problems.get(t)) for t, f in frames.items()}
    return report.problems, list(report.fields.items()), staged


def assert_same(source: str, files: list[RawFile]) -> Any:
    columnar, reference = stage(source, files, False), stage(source, files, True)
    if isinstance(reference, tuple) and reference and reference[0] in ("error", "missing"):
        assert columnar == reference
        return reference
    assert columnar[0] == reference[0]  # contract problems, in order
    assert columnar[1] == reference[1]  # null counts per field, in order
    assert columnar[2].keys() == reference[2].keys()
    for table, frame in reference[2].items():
        assert_frame_equal(columnar[2][table], frame, check_exact=True)
    return reference


@pytest.mark.parametrize("source", SOURCES)
def test_recorded_snapshots_stage_the_same(source: str) -> None:
    reference = assert_same(source, _files(SNAPSHOTS / source))
    assert sum(frame.height for frame in reference[2].values()) > 0


@pytest.fixture(scope="module")
def enlarged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("enlarged")
    enlarge(SNAPSHOTS, target, 3)
    return target


@pytest.mark.parametrize("source", SOURCES)
def test_enlarged_snapshots_stage_the_same(source: str, enlarged: Path) -> None:
    reference = assert_same(source, _files(enlarged / source))
    recorded = stage(source, _files(SNAPSHOTS / source), True)
    for table, frame in reference[2].items():
        assert frame.height >= 2 * recorded[2][table].height or frame.height == 0


# --- hostile variants ------------------------------------------------------------------------

DEEP: Any = "bottom"
for _ in range(40):
    DEEP = {"d": [DEEP]}

VALUE_MUTATIONS: list[Callable[[Any], Any]] = [
    lambda v: None,
    lambda v: "",
    lambda v: "12",
    lambda v: 12,
    lambda v: 31.0,
    lambda v: 1e-07,
    lambda v: True,
    lambda v: 10**30,
    lambda v: -(10**19),
    lambda v: float("nan"),
    lambda v: float("inf"),
    lambda v: "free",
    lambda v: ["a", 1],
    lambda v: {"nested": {"x": 1.5, "a": None}},
    lambda v: "gpt\u20114o\u200b",  # a non-breaking hyphen and a zero-width space
    lambda v: "gрt-4о",  # Cyrillic look-alikes
    lambda v: "x\u0000y",
    lambda v: DEEP,
    lambda v: -1,
    lambda v: "-1",
    lambda v: "0.000002",
]
RECORD_MUTATIONS: list[Callable[[Any], Any]] = [
    lambda r: [r],
    lambda r: "record",
    lambda r: 7,
    lambda r: None,
    lambda r: {},
    lambda r: {**r, "zz_extra": DEEP} if isinstance(r, dict) else r,
    lambda r: {**r, "zz_extra": float("nan")} if isinstance(r, dict) else r,
    lambda r: {**r, "zz_extra": 1e308 * 10} if isinstance(r, dict) else r,
]


def _set_path(record: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for step in parents:
        child = record.get(step)
        if not isinstance(child, dict):
            child = record[step] = {}
        record = child
    record[last] = value


def _records_spec(source: str, name: str) -> contracts.RecordSpec | None:
    contract = source_definitions()[source].contract
    return next((r for r in contract.records if contracts.fnmatch.fnmatchcase(name, r.files)), None)


def _mutated_json(source: str, raw: RawFile, rng: random.Random) -> bytes:
    """The file with one mutation in each of many records (a field of the contract or one the
    parser reads set to an odd value, or the whole record replaced)."""
    document = copy.deepcopy(json.loads(raw.content))
    spec = _records_spec(source, raw.name)
    records_path = spec.records if spec else "[]"
    if records_path == "data.endpoints[]":  # two endpoints a file: give the mutations room
        listed = document["data"]["endpoints"]
        listed += [copy.deepcopy(listed[n % len(listed)]) for n in range(40)]
    records = list(contracts.walk(document, records_path))
    paths = list(spec.fields) if spec else []
    paths += ["created", "pricing.input_cache_read", "limit.output", "hidden", "status"]
    mutations = [(p, m) for p in paths for m in VALUE_MUTATIONS]
    rng.shuffle(mutations)
    dicts = [r for r in records if isinstance(r, dict)]
    for record, (path, mutation) in zip(dicts[1::2], mutations, strict=False):
        _set_path(record, path, mutation(None))
    text = json.dumps(document)
    if records and isinstance(records[0], dict):  # whole-record replacements, by text
        for number, mutation in enumerate(RECORD_MUTATIONS):
            if 2 * number + 2 >= len(dicts):  # record 0 stays whole: its fields stay present
                break
            target = dicts[2 * number + 2]
            before = json.dumps(target)
            if before in text:
                text = text.replace(before, json.dumps(mutation(copy.deepcopy(target))), 1)
    return text.encode()


def _mutated_csv(raw: RawFile, rng: random.Random) -> bytes:
    lines = raw.content.decode("utf-8-sig").splitlines(keepends=True)
    odd = ["n/a", "1_000", " 12 ", "nan", "inf", "1e999", "", "±3", "12,5", "\u0661\u0662", "x\x00"]
    for index in range(1, len(lines), 3):
        cells = lines[index].split(",")
        cells[rng.randrange(len(cells))] = rng.choice(odd)
        lines[index] = ",".join(cells)
    return "".join(lines).encode()


def _hostile(source: str, files: list[RawFile], seed: int) -> list[RawFile]:
    rng = random.Random(seed)
    out = []
    for raw in files:
        if raw.name.endswith(".json"):
            out.append(RawFile(raw.name, _mutated_json(source, raw, rng)))
        elif raw.name.endswith(".csv"):
            out.append(RawFile(raw.name, _mutated_csv(raw, rng)))
        else:
            out.append(raw)
    return out


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("seed", [1, 2])
def test_hostile_records_stage_the_same(source: str, seed: int) -> None:
    reference = assert_same(source, _hostile(source, _files(SNAPSHOTS / source), seed))
    assert reference[0] != "error", reference  # one odd record never fails the whole run
    if reference[0] != "missing" and source != "epoch":
        # (epoch's contract checks no CSV column the variant breaks)
        assert reference[0], "the hostile variant should break some record's contract"


def test_a_nested_decimal_in_swebench_is_staged_not_fatal() -> None:
    """SWE-bench reads numbers exactly (Decimal); a nested value holding one is staged as the
    JSON a float parser would write, and the rest of the file is read."""
    (raw,) = [f for f in _files(SNAPSHOTS / "swebench") if f.name == "leaderboards.json"]
    document = json.loads(raw.content)
    document["leaderboards"][0]["results"][0]["tags"] = {"odd": [1.50, "x"]}
    hostile = [RawFile(raw.name, json.dumps(document).encode())]
    reference = assert_same("swebench", hostile)
    assert reference[0] != "error", reference
    entries = reference[2]["swebench_entries"]
    assert entries.height == sum(len(b["results"]) for b in document["leaderboards"])
    assert '{"odd": [1.5, "x"]}' in entries["tags"].to_list()


TEXT_EDITS: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda b: b[: len(b) // 2],
    "html": lambda b: b"<!DOCTYPE html><html><body>502</body></html>",
    "bom": lambda b: b"\xef\xbb\xbf" + b,
    "not utf-8": lambda b: b.replace(b'"', b'"\xff', 1),
    "duplicate key": lambda b: b.replace(b'"name": ', b'"name": "first", "name": ', 3),
    "lone surrogate": lambda b: b.replace(b'"name": "', b'"name": "\\ud800', 2),
    "escaped quote and bracket": lambda b: b.replace(b'"name": "', b'"name": "\\"]}[{\\\\', 5),
    "escaped NUL": lambda b: b.replace(b'"name": "', b'"name": "\\u0000', 1),
    "NaN literal": lambda b: b.replace(b": 0", b": NaN", 1),
    "Infinity literal": lambda b: b.replace(b": 0", b": -Infinity", 1),
    "huge exponent": lambda b: b.replace(b": 0", b": 1e999", 1),
    "signed exponent": lambda b: b.replace(b": 0", b": 2.5E+400", 1),
    "long digits": lambda b: b.replace(b": 0", b": 1" + b"0" * 400 + b".5", 1),
    "tiny exponent": lambda b: b.replace(b": 0", b": 5e-400", 1),
    "big integer": lambda b: b.replace(b": 0", b": 123456789012345678901234567890", 3),
    "deep": lambda b: b.replace(b'"name": ', b'"zz": ' + b"[" * 60 + b"]" * 60 + b', "name": ', 2),
    "too deep for Python": lambda b: b.replace(
        b'"name": ', b'"zz": ' + b"[" * 100_000 + b"]" * 100_000 + b', "name": ', 1
    ),
}


@pytest.mark.parametrize("edit", sorted(TEXT_EDITS))
@pytest.mark.parametrize("source", ["models_dev", "openrouter_models", "swebench", "arena"])
def test_hostile_text_stages_the_same(source: str, edit: str) -> None:
    files = _files(SNAPSHOTS / source)
    edited = [
        RawFile(f.name, TEXT_EDITS[edit](f.content) if f.name.endswith(".json") else f.content)
        for f in files
    ]
    assert edited != files or edit == "deep"
    assert_same(source, edited)


def test_screen_finds_what_the_record_check_finds() -> None:
    """The whole-file screen: clean real files, and each kind of trouble caught."""
    raw = _files(SNAPSHOTS / "models_dev")[0].content
    assert contract_screen.whole_file_clean(raw, csv=False)
    for edit in ("NaN literal", "huge exponent", "signed exponent", "long digits", "deep"):
        assert not contract_screen.whole_file_clean(TEXT_EDITS[edit](raw), csv=False), edit
    quoted = b'{"a": "NaN Infinity 1e999 [[[[", "b": "\\"[[[["}'
    assert contract_screen.whole_file_clean(quoted, csv=False)


NON_FINITE = (b"NaN", b"-Infinity", b"1e999", b"2.5E+400", b"1" + b"0" * 400 + b".5")


def _with_field(content: bytes, value: bytes) -> bytes:
    """The file with a field `zz` of this JSON value before its first `name`."""
    return content.replace(b'"name": ', b'"zz": ' + value + b', "name": ', 1)


def test_only_a_file_python_read_may_hold_non_finite_numbers() -> None:
    """The screen skips its NaN search when msgspec read the file (`numbers_finite`): that
    is sound only if every file with a NaN or an infinity goes to Python's parser."""
    raw = _files(SNAPSHOTS / "models_dev")[0].content
    assert RawFile("api.json", raw).numbers_finite
    for number in NON_FINITE:
        edited = RawFile("api.json", _with_field(raw, number))
        assert not edited.numbers_finite, number
        records = list(contracts.walk(edited.document, "*.models.*"))
        assert any(contracts.non_finite(r) for r in records), number  # really there
    for number in (b"5e-400", b"123456789012345678901234567890", b"[" * 60 + b"]" * 60):
        assert RawFile("api.json", _with_field(raw, number)).numbers_finite, number
    deep = TEXT_EDITS["deep"](raw)  # the depth screen still runs
    assert not contract_screen.whole_file_clean(deep, csv=False, finite=True)
    assert contract_screen.whole_file_clean(raw, csv=False, finite=True)


def _depth_by_array(content: bytes) -> int:
    """`max_depth` as the array screen measures it (the reference of `strict_json_depth`)."""
    data = np.frombuffer(content, dtype=np.uint8)
    return contract_screen.max_depth(data, contract_screen.delimiting_quotes(data))


@pytest.mark.parametrize("edit", sorted(TEXT_EDITS))
def test_strict_depth_is_the_array_depth(edit: str) -> None:
    """The skeleton depth of a file msgspec reads is the depth the array screen measures."""
    for source in ("models_dev", "openrouter_models", "swebench", "arena"):
        for raw in _files(SNAPSHOTS / source):
            edited = RawFile(raw.name, TEXT_EDITS[edit](raw.content))
            try:
                strict = raw.name.endswith(".json") and edited.numbers_finite
            except payload.PayloadError:  # no JSON at all: no depth either
                strict = False
            if strict:
                expected = _depth_by_array(edited.content)
                assert contract_screen.strict_json_depth(edited.content) == expected


@pytest.mark.parametrize(
    "text",
    [
        b"[]",
        b"7",
        b'"[[["',
        b'{"a": "\\\\", "b": [[["\\"]"]]]}',
        b'{"a": "\\\\\\"[[", "b": [{"c": "]]]\\\\"}]}',
        b'["\\u005c", ["\\/\\"{"]]',
        b'{"k\\"[": [[[]]], "v": "}}}}"}',
    ],
)
def test_strict_depth_reads_escapes_as_a_reader_does(text: bytes) -> None:
    json.loads(text)  # each is valid JSON
    assert contract_screen.strict_json_depth(text) == _depth_by_array(text)


def _walk_recursively(value: Any, steps: list[str]) -> Iterator[Any]:
    """`contract.walk` as it was written first: one generator frame per value."""
    if not steps:
        yield value
        return
    step, rest = steps[0], steps[1:]
    if step == "*":
        if isinstance(value, dict):
            for item in value.values():
                yield from _walk_recursively(item, rest)
        return
    key, listed = (step[:-2], True) if step.endswith("[]") else (step, False)
    if key:
        if not isinstance(value, dict) or key not in value:
            return
        value = value[key]
    if listed:
        if isinstance(value, list):
            for item in value:
                yield from _walk_recursively(item, rest)
        return
    yield from _walk_recursively(value, rest)


@pytest.mark.parametrize("seed", range(40))
def test_walk_reads_records_in_the_recursive_walks_order(seed: int) -> None:
    rng = random.Random(seed)

    def value(level: int) -> Any:
        kind = rng.randrange(5 if level < 4 else 2)
        if kind == 0:
            return rng.choice([None, 1, "x", 2.5, True])
        if kind == 1:
            return f"leaf{rng.randrange(100)}"
        if kind == 2:
            return [value(level + 1) for _ in range(rng.randrange(4))]
        keys = rng.sample(["data", "models", "endpoints", "results", "a", "b"], rng.randrange(4))
        return {k: value(level + 1) for k in keys}

    document = value(0)
    for path in ("[]", "*.*", "*.models.*", "data[]", "data.endpoints[]", "a[].results[]"):
        steps = [s for s in path.split(".") if s] if path != "[]" else ["[]"]
        assert list(contracts.walk(document, path)) == list(_walk_recursively(document, steps))


@pytest.mark.parametrize(
    "values",
    [
        ["a", "", None, "é"],
        [True, False, None],
        [1, -5, None, 10**30],
        [1.0, 31, None, 1e-07, float("nan")],
        [None, None],
        [],
        ["x", 1, True, 2.5, {"b": 1, "a": [1, 2]}, [1, "x"], ""],
        ["x", "", 1, True, False, 2.5, None, 1e-07, 10**30, "n/a", 0, 0.0],
        ["300", 300, 300.0, "", None],
    ],
)
def test_staged_text_is_text_of_each_value(values: list[Any]) -> None:
    expected = pl.Series("c", [payload.text(v) for v in values], pl.Utf8)
    assert payload.staged_text("c", values).to_list() == expected.to_list()
    assert payload.staged_text("c", values).dtype == pl.Utf8


def test_number_text_is_repr_of_every_float() -> None:
    """Floats of every magnitude (random bit patterns), with integers and nulls among them."""
    rng = random.Random(7)
    floats = [
        struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(50_000)
    ]
    floats += [round(rng.uniform(0, 100), rng.randrange(6)) for _ in range(50_000)]
    floats += [rng.uniform(-1e-3, 1e-3) for _ in range(20_000)] + [1e16, 9999999999999998.0, 1e-4]
    values: list[Any] = [v for f in floats for v in (f, None, rng.randrange(-(2**63), 2**63))]
    for column in (floats, values, [*values, 2**64]):
        expected = [payload.text(v) for v in column]
        assert payload.staged_text("c", column).to_list() == expected
