"""Registered submitters, and the proof that a submission comes from one of them.

A submitter is known only when registered: a TOML file kept outside the repository
(`BENCH_SUBMITTERS`, default `$BENCH_HOME/submitters.toml`) gives each name its own secret::

    [submitters."Ada Lovelace"]
    secret = "…"  # 32 characters or more: python -c 'import secrets; print(secrets.token_hex(32))'

A submission names its submitter in `submitter` and proves it in `signature`: the HMAC-SHA256
(lower-case hex) keyed with that submitter's secret (its UTF-8 bytes) over the file's
*canonical bytes*: the JSON object as read, without its `signature` member, written back
with sorted keys, no white space (`","` and `":"` separators), non-ASCII characters as
themselves, numbers as Python's `json` writes them, encoded as UTF-8 (`canonical_bytes`). So
re-indenting a signed file or reordering its keys keeps the proof; changing any value breaks
it. `bench sign FILE --submitter NAME` (`sign_file`) fills in both fields.

A file naming no submitter, an unknown one, or a signature that does not match is rejected
with the field and the reason (`check_signature`). When the submitters file itself cannot be
used (missing, not TOML, a secret too short), no submission is judged on it: they wait,
unrecorded, until it can (`Submitters.problem`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_pipeline.core.files import write_text
from bench_pipeline.core.text import skeleton

SIGNATURE_FIELD = "signature"
SUBMITTER_FIELD = "submitter"
MIN_SECRET_CHARS = 32
"""A secret shorter than this is refused (32 hex digits are 128 bits)."""
MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class Submitters:
    """The registered submitters: name → secret, or why the file cannot be used."""

    source: str
    """The file read (for reasons)."""
    secrets: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    """Never in a repr (nor in a log, a reason or metadata): only the names are shown."""
    problem: str | None = None
    """Why nobody can be checked now (missing or malformed file); None when usable."""


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers (see the module docstring)."""
    unsigned = {k: v for k, v in document.items() if k != SIGNATURE_FIELD}
    text = json.dumps(unsigned, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8")


def signature(document: Mapping[str, Any], secret: bytes) -> str:
    """HMAC-SHA256 (hex) of `canonical_bytes(document)` under `secret`."""
    return hmac.new(secret, canonical_bytes(document), hashlib.sha256).hexdigest()


def signed(document: Mapping[str, Any], name: str, secret: bytes) -> dict[str, Any]:
    """`document` naming `name` as its submitter, with that submitter's signature."""
    named = {**document, SUBMITTER_FIELD: name}
    return named | {SIGNATURE_FIELD: signature(named, secret)}


def _person(name: str) -> str:
    return " ".join(skeleton(name).split())


def load_submitters(path: Path) -> Submitters:
    """The submitters file at `path` (never raises: a problem is kept in `problem`)."""
    source = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Submitters(source, problem=f"no submitters file at {source}")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Submitters(source, problem=f"cannot read the submitters file {source}: {exc}")
    table = data.get("submitters", {})
    if not isinstance(table, dict) or set(data) - {"submitters"}:
        return Submitters(source, problem=f"{source}: only a [submitters] table is expected")
    found: dict[str, bytes] = {}
    people: dict[str, str] = {}
    for name, entry in table.items():
        where = f"{source}: submitters.{json.dumps(name, ensure_ascii=True)}"
        secret = entry.get("secret") if isinstance(entry, dict) else None
        if not name.strip() or len(name) > MAX_NAME_CHARS:
            return Submitters(source, problem=f"{where}: a name of 1 to {MAX_NAME_CHARS} chars")
        if not isinstance(secret, str) or len(secret) < MIN_SECRET_CHARS:
            return Submitters(
                source, problem=f"{where}.secret: a string of {MIN_SECRET_CHARS}+ characters"
            )
        if (twin := people.get(_person(name))) is not None:
            return Submitters(source, problem=f"{where}: reads as the same name as {twin!r}")
        people[_person(name)] = name
        found[name] = secret.encode("utf-8")
    return Submitters(source, secrets=found)


def check_signature(document: Mapping[str, Any], submitters: Submitters) -> tuple[str, str] | None:
    """(field, reason) when `document` does not prove a registered submitter; None when it
    does. `submitters` must be usable (`problem` None)."""
    name = document.get(SUBMITTER_FIELD)
    how = "name a registered submitter and sign the file: bench sign FILE --submitter NAME"
    if not isinstance(name, str) or not name:
        return SUBMITTER_FIELD, f"missing: {how}"
    secret = submitters.secrets.get(name)
    if secret is None:
        return SUBMITTER_FIELD, f"{name!r} is not a registered submitter"
    given = document.get(SIGNATURE_FIELD)
    if not isinstance(given, str) or not given:
        return SIGNATURE_FIELD, f"missing: {how}"
    if not hmac.compare_digest(given.strip().lower(), signature(document, secret)):
        return (
            SIGNATURE_FIELD,
            f"does not prove {name!r}: not the HMAC-SHA256 of the file's canonical bytes "
            "under their secret (was the file changed after signing?)",
        )
    return None


def sign_file(path: Path, name: str, submitters: Submitters) -> str:
    """Sign the submission file at `path` in place as `name` (2-space indented JSON, keys
    kept in their order); returns the signature. Raises ValueError with the reason."""
    if submitters.problem is not None:
        raise ValueError(submitters.problem)
    secret = submitters.secrets.get(name)
    if secret is None:
        raise ValueError(f"{name!r} is not in {submitters.source}")
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable JSON file: {exc}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"{path}: a submission is one JSON object")
    result = signed(document, name, secret)
    write_text(path, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return str(result[SIGNATURE_FIELD])


def demo_submitters(path: Path, name: str) -> Submitters:
    """The offline demo's own submitters file at `path`, holding `name` with a secret made
    the first time (random, never committed); created when missing, then read."""
    current = load_submitters(path)
    if current.problem is None and name in current.secrets:
        return current
    path.parent.mkdir(parents=True, exist_ok=True)
    body = (
        "# The offline demo's own submitter, made at demo time (not a real one: the intake\n"
        "# reads BENCH_SUBMITTERS, never this file).\n"
        f"[submitters.{json.dumps(name)}]\n"
        f'secret = "{secrets.token_hex(32)}"\n'
    )
    write_text(path, body)
    os.chmod(path, 0o600)
    return load_submitters(path)
