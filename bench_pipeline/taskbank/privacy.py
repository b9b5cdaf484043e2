"""What of a case may be published, and the private texts a release must never contain.

`public_view` is the only form in which a case leaves the project:

- a private case shows only its identity and bookkeeping (suite, id, task, category, version,
  provenance, flags) and `withheld: true`: no title, brief, context, rubric or input, because
  a held-out case is never published, not even its text;
- any other case shows its text and rubric, but never an answer key: each input shows its
  id, text, check kind and tier, never the expected values, schema, pattern, hidden tests or
  judge rubric, and each browser check only its question, never its selector or expected
  text (receipts never show check details).

`private_texts` lists what the release's privacy check searches every file for: each private
case's brief, context and input texts, whole, and each of their paragraphs of at least
`MIN_PARAGRAPH_CHARS` characters (so a copied paragraph is caught too, while a short generic
line cannot match unrelated text and block a release).
"""

from __future__ import annotations

from typing import Any

from bench_pipeline.taskbank.bank import TaskBank
from bench_pipeline.taskbank.models import (
    Case,
    ExactFieldsCheck,
    JsonSchemaCheck,
    JudgeCheck,
    RegexCheck,
    UnitTestsCheck,
    canonical_json,
    check_tier,
)

MIN_PARAGRAPH_CHARS = 40

_IDENTITY = ("suite", "id", "task", "category", "provenance", "private", "noisy", "core")


def public_view(case: Case) -> dict[str, Any]:
    """The publishable form of `case` (JSON-ready; see the module docstring)."""
    view: dict[str, Any] = {name: getattr(case, name) for name in _IDENTITY}
    view["version"] = case.version
    if case.suite == "pm":
        view["prototype"] = case.prototype
    if case.private:
        view["withheld"] = True
        return view
    view.update(
        withheld=False,
        title=case.title,
        brief=case.brief,
        context=case.context,
        measures=case.measures,
        rubric=[c.model_dump(mode="json") for c in case.rubric],
        critical_failures=[f.model_dump(mode="json") for f in case.critical_failures],
        # The question only: a check's selector and expected text are its answer key.
        browser_checks=[{"id": b.id, "question": b.question} for b in case.browser_checks],
        inputs=[
            {"id": i.id, "text": i.text, "check_kind": i.check.kind, "tier": check_tier(i.check)}
            for i in case.inputs
        ],
    )
    return view


def _texts(case: Case) -> list[str]:
    return [case.brief, case.context, *(i.text for i in case.inputs)]


def private_texts(bank: TaskBank) -> list[str]:
    """Every text of a private case that must never be published (whole texts, then their
    long paragraphs), stripped, without empties or repeats, in bank order."""
    found: list[str] = []
    for case in bank:
        if not case.private:
            continue
        for text in _texts(case):
            paragraphs = [p.strip() for p in text.split("\n\n")]
            candidates = [text.strip()] + [p for p in paragraphs if len(p) >= MIN_PARAGRAPH_CHARS]
            found.extend(t for t in candidates if t)
    return list(dict.fromkeys(found))


def _answer_keys(case: Case) -> list[str]:
    """The texts of `case` that grade an answer and are never shown: each input's expected
    fields and schema (as canonical JSON), pattern, hidden tests (each call with its expected
    value, as canonical JSON) and judge rubric, and each
    browser check's selector, click and expected text. A numeric check's expected number is
    left out: a bare number is too short to search for without matching unrelated text."""
    keys: list[str] = []
    for item in case.inputs:
        check = item.check
        if isinstance(check, ExactFieldsCheck):
            keys.append(canonical_json(check.expected))
        elif isinstance(check, JsonSchemaCheck):
            keys.append(canonical_json(check.json_schema))
        elif isinstance(check, RegexCheck):
            keys.append(check.pattern)
        elif isinstance(check, UnitTestsCheck):
            keys.extend(canonical_json(call.model_dump(mode="json")) for call in check.calls)
        elif isinstance(check, JudgeCheck):
            for criterion in check.rubric:
                keys += [
                    criterion.question,
                    criterion.pass_when or "",
                    criterion.partial_when or "",
                ]
                keys.append(criterion.fail_when or "")
    for browser in case.browser_checks:
        keys += [browser.selector or "", browser.click or "", browser.expect_text or ""]
    return keys


def secret_texts(bank: TaskBank) -> list[str]:
    """Everything a receipt must never show: `private_texts`, and every answer key of every
    case (`_answer_keys`) that its own public brief, context and inputs do not already show
    (a key the prompt itself contains, such as a field value copied from the input, is not a
    secret). Stripped, without empties or repeats, in bank order."""
    found = private_texts(bank)
    for case in bank:
        public = "\n".join(_texts(case)) if not case.private else ""
        for key in _answer_keys(case):
            key = key.strip()
            if key and key not in public:
                found.append(key)
    return list(dict.fromkeys(found))
