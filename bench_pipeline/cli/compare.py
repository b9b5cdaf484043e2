"""`bench compare`: a requested Navigator classic v1 comparison, on the requester's own key.

The project pays for no v1 run (its v1 budget is $0), so a comparison runs only on an API
key the person requesting it brings: typed at a hidden prompt (`getpass`) or read from a file
they name. It is never the project's key (`OPENROUTER_API_KEY` is never read as a fallback,
and a key equal to it is refused), and it is never stored or logged: it lives in this
process's memory, goes only into the Authorization header of the comparison's calls, and
every text kept (warehouse rows, receipts, messages) is scrubbed of it first.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TextIO

from bench_pipeline.cli.terminal import safe
from bench_pipeline.core import settings
from bench_pipeline.providers.keys import OPENROUTER_KEY_VARIABLE as PROJECT_KEY_VARIABLE

PROMPT = "Your own API key for this comparison (hidden; never stored): "


class KeyRefused(ValueError):
    """No usable key of the requester's own."""


def read_key(key_file: Path | None, ask: Callable[[str], str] = getpass.getpass) -> tuple[str, str]:
    """(key, where it came from: `file` or `prompt`).

    Raises:
        KeyRefused: An empty or unreadable key file, an empty answer, or the project's key.
    """
    if key_file is not None:
        try:
            key, source = key_file.read_text(encoding="utf-8").strip(), "file"
        except (OSError, UnicodeDecodeError) as error:
            raise KeyRefused(
                f"key file {key_file}: not readable ({type(error).__name__})"
            ) from None
    else:
        key, source = ask(PROMPT).strip(), "prompt"
    if not key or any(c.isspace() for c in key):
        raise KeyRefused(f"key ({source}): empty, or not a single line without spaces")
    if key == os.environ.get(PROJECT_KEY_VARIABLE, "").strip():
        raise KeyRefused(
            f"key ({source}): that is the project's key ({PROJECT_KEY_VARIABLE}); a v1 "
            "comparison runs only on the requester's own key"
        )
    return key, source


def _budget(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"budget: not a number: {text!r}") from None
    if not value.is_finite() or value < 0:
        raise ValueError(f"budget: must be a non-negative amount of USD, not {text!r}")
    return value


def compare(
    task_id: str,
    volume: int,
    budget_text: str,
    models: Sequence[str],
    key_file: Path | None,
    base_url: str,
    out: TextIO = sys.stdout,
    ask: Callable[[str], str] = getpass.getpass,
) -> int:
    """Run the comparison, store it, write its receipts and print the fit ranking.

    Exit 0 when it ran; 2 when the request or the key is refused, or a call failed for good
    (then nothing is stored).
    """
    from bench_pipeline.core.warehouse import connect, migrate
    from bench_pipeline.grading.blind_names import load_blind_names
    from bench_pipeline.providers import OpenAICompatibleProvider, ProviderError
    from bench_pipeline.providers.scrubbing import scrub
    from bench_pipeline.runs.rates import rates_by_api_id, refresh_model_rates
    from bench_pipeline.runs.v1_comparison import (
        V1Candidate,
        comparison_id,
        run_comparison,
        store_comparison,
    )
    from bench_pipeline.runs.v1_receipts import write_receipts
    from bench_pipeline.scores.navigator import V1Call, v1_fit_rows
    from bench_pipeline.taskbank.v1_library import library_task, load_config, load_library

    out = safe(out)  # model ids and outputs are untrusted text
    try:
        if volume < 0:
            raise ValueError(f"volume: must not be negative, not {volume}")
        if not models:
            raise ValueError("model: name at least one model (--model API_ID)")
        budget = _budget(budget_text)
        config = load_config()
        task = library_task(load_library(), task_id)
        key, source = read_key(key_file, ask)
    except ValueError as problem:
        print(f"not run: {problem}", file=out)
        return 2
    started = datetime.now(UTC)
    candidates = [V1Candidate(m, m) for m in dict.fromkeys(models)]
    comparison = comparison_id("compare", [task], candidates, config, salt=started.isoformat())
    with connect(settings.warehouse_path()) as conn:
        migrate(conn, settings.migrations_dir())
        refresh_model_rates(conn)  # setups/pricing.toml and every accepted OpenRouter run
        rates = rates_by_api_id(conn)
        names = load_blind_names(conn)  # what the judge's copy of each answer leaves out

    async def run():
        async with OpenAICompatibleProvider(key, base_url=base_url) as provider:
            return await run_comparison(
                provider,
                provider,
                candidates,
                [task],
                config,
                rates,
                comparison=comparison,
                names=names,
            )

    print(f"comparison {comparison}: {task.title} ({task.id}, tier {task.tier}), "
          f"{len(candidates)} model(s) x {config.calls_per_task} call(s), on your key "
          f"(from the {source}) at {base_url}", file=out)  # fmt: skip
    try:
        result = scrub_result(asyncio.run(run()), key)
    except ProviderError as error:
        print(f"not run: {scrub(str(error), [key])}; nothing was stored", file=out)
        return 2
    fits = v1_fit_rows(
        task.id, volume, budget,
        [V1Call(r.candidate.label, task.id, r.display.displayed_overall, r.cost_usd)
         for r in result.results if r.display is not None],
    )  # fmt: skip
    folder = settings.bench_home() / "build" / "v1-compare" / comparison
    request = {"task": task.id, "monthly_volume": volume, "monthly_budget_usd": str(budget),
               "models": [c.api_id for c in candidates], "endpoint": base_url,
               "key_source": source, "requested_at": started.isoformat()}  # fmt: skip
    write_receipts(folder, result, config, fits, request, [key])
    with connect(settings.warehouse_path()) as conn:
        store_comparison(
            conn, result, config, origin="compare", key_source=source,
            endpoint=base_url, task_id=task.id, monthly_volume=volume, monthly_budget=budget,
            receipts_dir=str(folder), now=started,
        )  # fmt: skip
    _print_fit(out, fits, result, volume, budget)
    print(f"receipts: {folder}", file=out)
    return 0


def scrub_result(result, key: str):
    """The comparison with every output and reason scrubbed of `key` (a server may echo it)."""
    from dataclasses import replace

    from bench_pipeline.providers.scrubbing import scrub

    return replace(
        result,
        results=tuple(
            replace(r, output=scrub(r.output, [key]),
                    score=replace(r.score, reason=scrub(r.score.reason, [key])))
            for r in result.results
        ),
    )  # fmt: skip


def _print_fit(out: TextIO, fits, result, volume: int, budget: Decimal) -> None:
    from bench_pipeline.runs.costing import format_usd

    print(f"fit ranking at {volume:,} calls a month within ${budget}:", file=out)
    if not fits:
        print("  (no model fits)", file=out)
    labels: dict[str, set[str]] = {}
    for r in result.results:
        if r.display is not None:
            labels.setdefault(r.candidate.label, set()).add(r.display.label)
    for fit in fits:
        marks = ", ".join(sorted(labels.get(fit.model, set()) - {"clean"}))
        shown = f"{fit.displayed_overall:.2f}/5" + (f" ({marks})" if marks else "")
        print(f"  {fit.rank}. {fit.model}  overall shown {shown}  "
              f"${format_usd(fit.mean_cost_per_call_usd)} per call, "
              f"${format_usd(fit.monthly_cost_usd)} a month", file=out)  # fmt: skip
    left_out = sorted({r.candidate.label for r in result.results} - {f.model for f in fits})
    for model in left_out:
        print(f"  -  {model}: does not fit (over budget, unpriced, or not scored)", file=out)
