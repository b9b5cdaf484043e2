"""One hostile value in a submitted run or a review file costs that file only.

Each value of the sources' odd-value suite (`test_hostile_values.HOSTILE_JSON`) is put, one
file at a time, into every field of a valid submission and of a valid review, and the files
are dropped into the inboxes of a home whose sources, boards and first release are built.
Then the pipeline's own assets take them (submitted runs, reviews, the UseCaseRank board,
the release), as `bench run` does. Whatever the value, the run completes and a sound release
is published; every file is recorded, accepted or rejected with its field and reason; and a
clean file dropped in afterwards is taken by the next run.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from signing import SECRETS, SUBMITTER, register, signed_json
from stages import database_of, materialize_in, materialize_recorded, simulated_runs
from test_hostile_values import HOSTILE_JSON, MARK
from test_submissions import for_bank, valid

from bench_pipeline.assets.grading import reviews
from bench_pipeline.assets.release import release_dataset
from bench_pipeline.assets.runs import submitted_runs
from bench_pipeline.assets.scores import usecase_board_asset
from bench_pipeline.core import settings
from bench_pipeline.release.verify import verify_latest
from bench_pipeline.runs.submitters import signature
from bench_pipeline.taskbank import load_bank

pytestmark = pytest.mark.assets

INTAKE_ASSETS = [submitted_runs, reviews, usecase_board_asset, release_dataset]
"""What takes the inboxes in, scores them and publishes, as `bench run` runs them."""
EXTRA = {
    "date before the earliest start": '"0001-01-01T00:00:00+14:00"',
    "date past the last one": '"9999-12-31T23:59:59-14:00"',
    "number no column holds": "1" + "0" * 20,
}
"""Values of the issue that stopped every release, beside the sources' suite."""
VALUES = HOSTILE_JSON | EXTRA


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with every recorded source, the boards, a first release and simulated PM runs
    (something for a review to be about)."""
    home = tmp_path_factory.mktemp("intake") / "home"
    simulated_runs(materialize_recorded(home), ("pm",))
    return home


def fresh_home(built: Path, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(built / "warehouse", home / "warehouse")
    register(home)
    return home


def paths(document: Any, prefix: str = "") -> Iterator[str]:
    """Every field of a document, nested ones and list items too, as dotted paths."""
    items = document.items() if isinstance(document, dict) else enumerate(document)
    for key, value in items:
        path = f"{prefix}[{key}]" if isinstance(key, int) else f"{prefix}.{key}".lstrip(".")
        yield path
        if isinstance(value, dict | list) and value:
            yield from paths(value, path)


def with_value(document: dict[str, Any], path: str, raw: str) -> bytes:
    """The document as JSON with `raw` (JSON text) as the value at `path`."""
    copy = json.loads(json.dumps(document))
    node: Any = copy
    parts = path.replace("[", ".[").split(".")
    keys = [int(p[1:-1]) if p.startswith("[") else p for p in parts if p]
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = MARK
    return json.dumps(copy).replace(json.dumps(MARK), raw, 1).encode("utf-8", "surrogatepass")


def signed_bytes(data: bytes) -> bytes:
    """A submission file's bytes with the test submitter's signature added, computed over the
    document as the intake will read it (a file that does not parse stays as it is)."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
        proof = signature(document, SECRETS[SUBMITTER].encode())
    except ValueError:
        return data
    return data.replace(b"{", b'{"signature": "' + proof.encode() + b'", ', 1)


def review_document(run_id: str, number: int) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "run_id": run_id,
        "reviewer": f"reviewer {number}",
        "score": 4,
        "understood": "The deadline moved and the vendor must be told today.",
        "missed": "nothing",
        "decisive_reason": "It names the owner of every next step.",
        "critical_failure": None,
    }


def drop_files(home: Path, labels: list[str]) -> dict[str, dict[str, str]]:
    """Every value of `labels` in every field of a submission and of a review, one file
    each; returns {inbox: {file name: field}}."""
    bank = load_bank()
    submission = {**for_bank(bank, valid()), "submitter": SUBMITTER}
    with duckdb.connect(str(database_of(home)), read_only=True) as conn:
        run_id = conn.execute(
            "SELECT min(run_id) FROM model_runs WHERE suite = 'pm' AND simulated"
        ).fetchone()[0]  # type: ignore[index]
    dropped: dict[str, dict[str, str]] = {"submissions": {}, "reviews": {}}
    number = 0
    for label in labels:
        for kind, document in (("submissions", submission), ("reviews", None)):
            inbox = home / "inbox" / kind
            inbox.mkdir(parents=True, exist_ok=True)
            for path in paths(document or review_document(run_id, 0)):
                number += 1
                chosen = document or review_document(run_id, number)
                name = f"{number:04d}.json"
                data = with_value(chosen, path, VALUES[label])
                (inbox / name).write_bytes(signed_bytes(data) if document else data)
                dropped[kind][name] = path
    return dropped


def fates(home: Path, table: str) -> dict[str, tuple[str, str | None, str | None]]:
    with duckdb.connect(str(database_of(home)), read_only=True) as conn:
        rows = conn.execute(f"SELECT file_name, status, field, reason FROM {table}").fetchall()
    return {name: (status, field, reason) for name, status, field, reason in rows}


def problems_with(dropped: dict[str, str], recorded: dict[str, tuple]) -> list[str]:
    """What is wrong with the recorded fates of the dropped files: one missing, recorded
    twice, or rejected without naming the field the value was put in (a file that is not
    JSON at all is rejected as a whole, and its reason says where)."""
    found = []
    for name, path in dropped.items():
        if name not in recorded:
            found.append(f"{name} ({path}): not recorded")
            continue
        status, field, reason = recorded[name]
        if status == "accepted":
            continue
        if not reason:
            found.append(f"{name} ({path}): rejected without a reason")
        elif field is None or field == "file":
            if "JSON" not in reason:
                found.append(f"{name} ({path}): rejected without a field: {reason}")
        elif not (path.startswith(field) or field.startswith(path)):
            found.append(f"{name} ({path}): rejected naming {field}: {reason}")
    return found


def assert_run_and_release_complete(home: Path) -> None:
    result = materialize_in(home, INTAKE_ASSETS)
    assert result.success
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCH_HOME", str(home))
        named, problems = verify_latest(settings.releases_dir())
    assert named is not None and not problems, problems


@pytest.mark.parametrize("label", list(VALUES))
def test_a_hostile_value_rejects_its_own_file_and_the_release_completes(
    label: str, built: Path, tmp_path: Path
) -> None:
    home = fresh_home(built, tmp_path)
    dropped = drop_files(home, [label])
    assert_run_and_release_complete(home)
    problems = problems_with(dropped["submissions"], fates(home, "submission_files"))
    problems += problems_with(dropped["reviews"], fates(home, "review_files"))
    assert not problems, "\n".join(problems)


def test_after_every_hostile_value_the_next_run_takes_a_clean_file(
    built: Path, tmp_path: Path
) -> None:
    home = fresh_home(built, tmp_path)
    dropped = drop_files(home, list(VALUES))
    for kind in ("submissions", "reviews"):  # a name that is not UTF-8, on a file not JSON
        (home / "inbox" / kind / os.fsdecode(b"bad-\xff.json")).write_bytes(b"{")
    assert_run_and_release_complete(home)
    recorded = fates(home, "submission_files")
    assert len(recorded) == len(dropped["submissions"]) + 1  # each file once, nothing lost
    assert recorded["bad-\\udcff.json"][0] == "rejected"
    assert fates(home, "review_files")["bad-\\udcff.json"][0] == "rejected"
    assert {s for s, _f, _r in recorded.values()} == {"accepted", "rejected"}
    clean = for_bank(load_bank(), valid(started_at="2026-11-21T10:00:00+00:00"))
    (home / "inbox" / "submissions" / "clean.json").write_text(signed_json(clean))
    assert_run_and_release_complete(home)
    assert fates(home, "submission_files")["clean.json"][0] == "accepted"
