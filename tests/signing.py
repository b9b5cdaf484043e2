"""Registered submitters for the tests: a registry of made-up names with made-up secrets, and
helpers that sign a submission document the way `bench sign` does (`runs.submitters`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_pipeline.runs.submitters import Submitters, load_submitters, signed

SECRETS = {
    name: f"test-secret-of-{name.lower().replace(' ', '-')}-{'0' * 32}"
    for name in ("Ada Lovelace", "Bob", "Cy", "Dee", "Fay", "Gus", "Hal", "tester")
}
"""Name → secret of every test submitter (none of them real)."""
SUBMITTER = "Ada Lovelace"
SUBMITTERS = Submitters("tests/signing.py", {n: s.encode() for n, s in SECRETS.items()})


def sign(document: dict[str, Any], name: str = SUBMITTER) -> dict[str, Any]:
    """`document` named as `name`'s and signed with their test secret."""
    return signed(document, name, SECRETS[name].encode())


def signed_json(document: dict[str, Any], name: str = SUBMITTER) -> str:
    return json.dumps(sign(document, name))


def register(home: Path) -> Submitters:
    """Write the test submitters to `home`'s default submitters file; return them read."""
    path = home / "submitters.toml"
    path.write_text("".join(f'[submitters."{n}"]\nsecret = "{s}"\n' for n, s in SECRETS.items()))
    return load_submitters(path)
