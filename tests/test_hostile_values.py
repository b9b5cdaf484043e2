"""One hostile value in one record of a real payload never harms the others.

Each recorded source is ingested clean, then again with a single value of a single record
replaced by something an upstream could send (numbers no float or decimal column holds, NaN,
lone surrogates, NULs, deep nesting, a megabyte of text, markup, a formula), spelled as raw
JSON or as a CSV cell. Whatever it is, the run is recorded and accepted; at most that record
is quarantined, with a reason naming its file, number and field; every other record keeps its
row; and the clean payload afterwards is accepted with the rows it had at first.
"""

from __future__ import annotations

import csv
import io
import json
import random
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from bench_pipeline.ingest.catalog import source_definitions
from bench_pipeline.ingest.contract import walk
from bench_pipeline.ingest.item_matrix import read_file

pytestmark = [pytest.mark.faults, pytest.mark.store]

SNAPSHOTS = Path(__file__).resolve().parents[1] / "sources" / "snapshots"
MARK = "\x01hostile\x01"
HOSTILE_JSON = {
    "huge exponent": "1E+999",
    "negative huge exponent": "-1E+999",
    "tiny exponent": "5E-400",
    "400-digit integer": "1" + "0" * 400,
    "negative zero": "-0.0",
    "NaN literal": "NaN",
    "Infinity literal": "-Infinity",
    "lone surrogate": '"a\\ud800b"',
    "NUL character": '"a\\u0000b"',
    "empty string": '""',
    "null": "null",
    "boolean": "true",
    "nested 40 deep": "[" * 40 + "]" * 40,
    "object": '{"$ref": "#", "__proto__": {}}',
    "megabyte of text": json.dumps("x" * 1_000_000),
    "markup": json.dumps("<script>alert(1)</script><img src=x onerror=alert(2)>"),
    "impossible date": '"2025-02-30T25:61:00Z"',
}
HOSTILE_CSV = {
    "huge exponent": "1E+999",
    "tiny exponent": "5E-400",
    "NaN": "NaN",
    "NUL character": "a\x00b",
    "formula": '=HYPERLINK("http://x","y")',
    "newline": "line one\nline two",
    "byte order mark": "\ufeff12",
    "megabyte of text": "x" * 1_000_000,
    "impossible date": "2025-02-30",
    "negative": "-42",
}


@dataclass(frozen=True)
class Case:
    """One hostile value put at `path` of record `number` (from 1) of `file_name`."""

    source: str
    file_name: str
    number: int
    path: str
    label: str
    content: bytes


def _files(source: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((SNAPSHOTS / source).iterdir())}


def _reserialised(source: str) -> dict[str, bytes]:
    """The recorded files, JSON ones written again by Python (so a case differs from the
    clean payload only where its hostile value stands)."""
    return {
        name: json.dumps(json.loads(content)).encode() if name.endswith(".json") else content
        for name, content in _files(source).items()
    }


def _json_case(content: bytes, records: str, raw: str, rng: random.Random):
    """`raw` as the value of a random field of a random record: (number, field, content)."""
    document = json.loads(content)
    found = list(walk(document, records))
    at = rng.choice([i for i, r in enumerate(found) if isinstance(r, dict) and r])
    path = rng.choice(sorted(found[at]))
    found[at][path] = MARK
    return at + 1, path, json.dumps(document).replace(json.dumps(MARK), raw, 1).encode()


def _csv_case(content: bytes, value: str, rng: random.Random):
    """`value` in a random cell of a random row: (number, column, content)."""
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"))))
    at, column = rng.randrange(1, len(rows)), rng.randrange(len(rows[0]))
    rows[at][column] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return at, rows[0][column], out.getvalue().encode()


def _eval_case(name: str, content: bytes, raw: str, rng: random.Random):
    """`raw` as the value of a random field of a random sample of an `.eval` log (a zip):
    (number, field, content), the sample numbered as the reader numbers it."""
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        members = {m: archive.read(m) for m in archive.namelist()}
    member = rng.choice(sorted(m for m in members if m.startswith("samples/")))
    sample = json.loads(members[member])
    path = rng.choice(sorted(sample))
    sample[path] = MARK
    members[member] = json.dumps(sample).replace(json.dumps(MARK), raw, 1).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member_name, data in members.items():
            archive.writestr(member_name, data)
    changed = out.getvalue()
    # a later epoch of a sample read well has no cell of its own (the epochs are averaged
    # into the first's): then nothing of it may be quarantined (number 0)
    number = next((c.number for c in read_file(name, changed).cells if c.where == member), 0)
    return number, path, changed


def cases(source: str, seed: int = 20261203) -> Iterator[Case]:
    """Every hostile value once, each in a record of a file of the source chosen at random
    (seeded), so the values between them reach many files, records and fields."""
    rng = random.Random(f"{seed}:{source}")
    definition = source_definitions()[source]
    files = _reserialised(source)
    specs = []
    for name in files:  # each file with the contract's records, under its first spec
        spec = next((s for s in definition.contract.records if fnmatchcase(name, s.files)), None)
        if spec is not None:
            specs.append((name, spec))
    if not specs and all(name.endswith(".eval") for name in files):
        # inspect_ai logs (the per-item results kind): a value in a field of one sample
        for label, value in HOSTILE_JSON.items():
            name = rng.choice(sorted(files))
            number, path, content = _eval_case(name, files[name], value, rng)
            yield Case(source, name, number, path, label, content)
        return
    csv_file = all(spec.records == "csv" for _, spec in specs)
    for label, value in (HOSTILE_CSV if csv_file else HOSTILE_JSON).items():
        name, spec = rng.choice(specs)
        if spec.records == "csv":
            number, path, content = _csv_case(files[name], value, rng)
        else:
            number, path, content = _json_case(files[name], spec.records, value, rng)
        yield Case(source, name, number, path, label, content)


SOURCES = sorted(source_definitions())


@pytest.mark.parametrize("source", SOURCES)
def test_one_hostile_value_never_harms_the_other_records(source: str, warehouse) -> None:
    clean = _reserialised(source)
    first = warehouse.ingest(source, files=clean)
    assert first.status == "accepted", first.reason
    baseline = {
        (row["file_name"], row["record_number"]) for row in warehouse.quarantine(first.run_id)
    }
    failures = []
    for case in cases(source):
        files = clean | {case.file_name: case.content}
        try:
            run = warehouse.ingest(source, files=files)
        except BaseException as error:  # a panic too: nothing may escape the engine
            failures.append(f"{case.label} at {case.path}: escaped: {error!r}"[:300])
            continue
        recorded = warehouse.run_row(run.run_id)
        where = f"{case.label} in {case.file_name} record {case.number} field {case.path}"
        if recorded is None or recorded["status"] != run.status:
            failures.append(f"{where}: run not recorded as {run.status}")
        if run.status != "accepted":
            failures.append(f"{where}: run {run.status}: {(run.reason or '')[:160]}")
            continue
        quarantined = warehouse.quarantine(run.run_id)
        others = (
            {(q["file_name"], q["record_number"]) for q in quarantined}
            - baseline
            - {(case.file_name, case.number)}
        )
        if others:
            failures.append(f"{where}: other records quarantined: {sorted(others)[:5]}")
        for row in quarantined:
            if (row["file_name"], row["record_number"]) == (case.file_name, case.number):
                if not row["reason"] or not row["field"]:
                    failures.append(f"{where}: quarantined without field or reason: {row}")
        for table, rows in first.rows_valid.items():
            lost = rows - run.rows_valid.get(table, 0)
            # an entry's per-item results are read from its own field, so go with it
            owned = table == "swebench_item_results" and case.path == "per_instance_details"
            if lost > 1 and not owned:
                failures.append(f"{where}: {table} lost {lost} rows")
    assert not failures, "\n".join(failures)
    again = warehouse.ingest(source, files=clean)  # the next run works
    assert again.status == "accepted", again.reason
    assert again.rows_valid == first.rows_valid


def test_a_megabyte_name_quarantines_its_record_with_a_short_reason(warehouse) -> None:
    """No page or download carries a megabyte-long name: every live text column is bounded
    (`MAX_TEXT`), and the reason quotes the start of the value and its length, not all of it."""
    from bench_pipeline.ingest.tables import MAX_TEXT

    document = json.loads(_files("openrouter_models")["models.json"])
    document["data"][3]["name"] = "n" * 1_000_000
    document["data"][5]["id"] = "lab/" + "m" * MAX_TEXT  # one past the bound
    document["data"][7]["name"] = "k" * MAX_TEXT  # at the bound: kept
    run = warehouse.ingest(
        "openrouter_models", files={"models.json": json.dumps(document).encode()}
    )
    assert run.status == "accepted", run.reason
    assert run.rows_valid == {"openrouter_models": len(document["data"]) - 2}
    found = {
        (q["record_number"], q["field"]): q["reason"] for q in warehouse.quarantine(run.run_id)
    }
    assert found.keys() == {(4, "name"), (6, "model_id")}
    assert found[(4, "name")].endswith("… (1000000 characters)")
    assert all(len(reason) < 300 for reason in found.values())


LEADERBOARD = "leaderboard-text.json"


def _arena_with(edit) -> dict[str, bytes]:
    """The recorded arena payload with `edit(text)` applied to the real text leaderboard."""
    files = _files("arena")
    files[LEADERBOARD] = edit(files[LEADERBOARD].decode()).encode()
    return files


def _published_rating(warehouse, category: str, model: str) -> list[tuple]:
    return warehouse.query(
        "SELECT rating, rating_low, rating_high FROM arena_ratings WHERE leaderboard = 'text' "
        "AND category = ? AND model_key = ?",
        [category, model],
    )


def test_a_key_written_twice_in_a_record_quarantines_that_record(warehouse) -> None:
    """Every JSON parser keeps the last of two values silently: `gemini-3-pro`'s rating given
    twice, the second far outside its interval, would have been published. The record is
    quarantined, naming the file, the record and the key; the others are published."""
    first = warehouse.ingest("arena", files=_files("arena"))
    assert first.status == "accepted", first.reason
    real = (
        '"gemini-3-pro": {\n            "rating": 1525.1042120660923,\n'
        '            "rating_q975": 1545.4822145503822,'
    )
    forged = real.replace('"rating_q975"', '"rating": 1900.0,\n            "rating_q975"')
    files = _arena_with(lambda text: text.replace(real, forged, 1))
    run = warehouse.ingest("arena", files=files)
    assert run.status == "accepted", run.reason
    held = [q for q in warehouse.quarantine(run.run_id) if q["file_name"] == LEADERBOARD]
    assert [(q["record_number"], q["field"]) for q in held] == [(1, "rating")]
    assert "key 'rating' appears more than once" in held[0]["reason"]
    assert _published_rating(warehouse, "chinese", "gemini-3-pro") == []
    assert _published_rating(warehouse, "chinese", "gemini-2.5-pro")  # the next record stays
    lost = {t: first.rows_valid[t] - run.rows_valid[t] for t in first.rows_valid}
    assert lost == {"arena_ratings": 1, "arena_models": 0}
    again = warehouse.ingest("arena", files=_files("arena"))  # the next run works
    assert again.status == "accepted" and again.rows_valid == first.rows_valid


def test_a_model_listed_twice_in_one_category_is_quarantined(warehouse) -> None:
    """A key repeated in the object holding the records (one model twice in a category):
    the record kept under that key is quarantined, no other."""
    second = '"gemini-2.5-pro": {'
    files = _arena_with(lambda text: text.replace(second, '"gemini-3-pro": {', 1))
    run = warehouse.ingest("arena", files=files)
    assert run.status == "accepted", run.reason
    held = [q for q in warehouse.quarantine(run.run_id) if q["file_name"] == LEADERBOARD]
    assert [(q["record_number"], q["field"]) for q in held] == [(1, "record")]
    assert "key 'gemini-3-pro' appears more than once in its container" in held[0]["reason"]
    assert _published_rating(warehouse, "chinese", "gemini-3-pro") == []


def test_both_parsers_mark_the_same_repeated_keys() -> None:
    """msgspec (the fast parser) and Python's `json` (the slow one, for what msgspec refuses)
    read a repeated key alike, and `load_json` marks it whichever read the file."""
    from bench_pipeline.ingest import payload
    from bench_pipeline.ingest.contract import RepeatedKeys, repeated_key

    text = b'{"data": [{"id": "a", "name": "x", "id": "b"}, {"id": "c", "n": NUMBER}]}'
    for number, fast_reads in ((b"1", True), (b"NaN", False)):  # NaN: only `json` reads it
        raw = payload.RawFile("models.json", text.replace(b"NUMBER", number))
        fast, slow = (payload._parse_json(raw, fast=f) for f in (True, False))
        assert raw.numbers_finite is fast_reads and raw.repeats_keys
        for document in (raw.document, fast, slow):
            record = document["data"][0]
            assert isinstance(record, RepeatedKeys) and record == {"id": "b", "name": "x"}
            assert repeated_key(record)[0] == "id"
            assert type(document["data"][1]) is dict


def test_a_rating_outside_its_own_interval_is_quarantined(warehouse) -> None:
    real = '"rating": 1517.2954756980423,'
    files = _arena_with(lambda text: text.replace(real, '"rating": 1600.0,', 1))
    run = warehouse.ingest("arena", files=files)
    assert run.status == "accepted", run.reason
    held = [q for q in warehouse.quarantine(run.run_id) if q["file_name"] == LEADERBOARD]
    assert [(q["record_number"], q["field"]) for q in held] == [(2, "rating")]
    assert held[0]["reason"].startswith("1600.0 outside its own interval [1506.27")
    assert _published_rating(warehouse, "chinese", "gemini-2.5-pro") == []


def test_a_column_named_twice_in_a_csv_header_rejects_the_run(warehouse) -> None:
    """A CSV reader keeps the last of two cells under one name silently, in every row: the
    payload is ambiguous as a whole, so the run is rejected naming the file and the column."""
    first = warehouse.ingest("epoch")
    assert first.status == "accepted", first.reason
    files = _files("epoch")
    lines = files["gpqa_diamond.csv"].decode().splitlines()
    lines = [lines[0] + ",Model version"] + [line + ",impostor/model" for line in lines[1:]]
    files["gpqa_diamond.csv"] = "\n".join(lines).encode()
    run = warehouse.ingest("epoch", files=files)
    assert run.status == "rejected"
    assert "gpqa_diamond.csv: column(s) 'Model version' appear more than once" in run.reason
    assert warehouse.query("SELECT DISTINCT source_run_id FROM evaluation_rows") == [
        (first.run_id,)
    ]
