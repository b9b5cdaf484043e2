"""The registry's host-id rule as it was before its fast paths: the oracle the sameness tests
compare `forms.unwrap_host_id` and the registry tables with."""

from __future__ import annotations

from bench_pipeline.registry.forms import HOST_SUFFIX, REVISION


def old_unwrap_host_id(identifier: str, prefixes: tuple[str, ...]) -> tuple[str, ...]:
    text = identifier
    changed = True
    while changed:
        changed = False
        for prefix in prefixes:
            for joiner in ("/", ".", "-"):
                if text.lower().startswith(prefix.lower() + joiner) and len(text) > len(prefix) + 1:
                    text, changed = text[len(prefix) + 1 :], True
    forms = [text, REVISION.sub("", text), HOST_SUFFIX.sub("", text)]
    return tuple(dict.fromkeys(f for f in forms if f))
