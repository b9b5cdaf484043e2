"""Links from a published figure to the publisher's evidence for it (Epoch AI's log viewer for
a run, SWE-bench's logs of an entry), where the release carries one. Pure functions over
release rows; nothing here renders."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

from bench_pipeline.site.layout import Row

S3 = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(\S*?)/?$")
"""An `s3://bucket/prefix` address (SWE-bench states its entries' logs so)."""


def evidence_url(value: object) -> str | None:
    """A link a reader can open for an evidence address: an https link as it is; an
    `s3://bucket/prefix` address (a public bucket's folder) as the bucket's https listing of
    that prefix; else None."""
    if not isinstance(value, str):
        return None
    if value.startswith("https://") and not any(c in value for c in " \"'<>"):
        return value
    found = S3.match(value)
    if found is None:
        return None
    bucket, prefix = found.groups()
    return f"https://{bucket}.s3.amazonaws.com/?prefix={quote(prefix + '/')}"


def index_evidence(lineage: Iterable[Row]) -> dict[str, str]:
    """The log viewer behind each model's score on each evaluation, from `index_lineage`,
    keyed `"<model_id> <evaluation_id>"` (as the Known Good Index page looks it up)."""
    found: dict[str, str] = {}
    for row in lineage:
        url = evidence_url(row.get("log_url"))
        if url is not None:
            found[f"{row.get('model_id')} {row.get('evaluation_id')}"] = url
    return found
