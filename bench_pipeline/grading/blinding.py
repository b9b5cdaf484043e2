"""What may reveal a run's identity to a grader or a reviewer, so it can be redacted from
the copy of the output they see (the stored output is never edited)."""

from __future__ import annotations

from bench_pipeline.grading.decision import redact


def identity_terms(api_id: str, company: str, *names: str) -> list[str]:
    """The API id, its model part (`openai/gpt-5.4` → `gpt-5.4`), the company and any other
    names (model record, harness, setup label)."""
    terms = [api_id, api_id.rsplit("/", 1)[-1], company, *names]
    return [term for term in terms if term]


def blind_copy(output: str, api_id: str, company: str, *names: str) -> str:
    """`output` with every identity term replaced by `[redacted]`."""
    return redact(output, identity_terms(api_id, company, *names))
