"""Proposed setups for models new on OpenRouter (no Dagster here).

A model listed by the live OpenRouter ingestion is proposed when no setup declared in
`setups/` calls its API id, it has not been proposed before (`setup_proposals` remembers
every proposal), it is new on OpenRouter, and it can be run and priced as listed:

- new: added to OpenRouter (its `created` time) at most `NEW_WITHIN` before the newest model
  of the same listing. A model listed for longer was a choice the setup files already made
  (or left out); proposing the whole catalogue on a first tick would register thousands of
  partitions nobody asked for. The listing's newest model, not the clock, is the reference,
  so a recorded snapshot behaves as it did on its day;

- not an alias (`~author/...-latest` moves to other models), not one of OpenRouter's own
  routers (`openrouter/auto`, `openrouter/free`) and not a routing variant (`:free`,
  `:batch`, `:thinking`, ...) of a listed model: a setup names one exact model;
- priced per token (routers with per-request prices are left out), reads and writes text,
  has a context length, and has not expired by the ingestion's day.

The proposal is the model's exact API id in the default harness (the first harness in
`harnesses.toml` that pairs with every model and runs as plain API calls), with no reasoning
effort or temperature sent, its context limit as listed, and the ingestion's day as pricing
date: the rates `runs/model_rates` takes from that ingestion are in effect from that day. Its
setup id is computed exactly as a declared setup's, and its record and harness are stored as
JSON, so the setup resolves the same way however `setups/` changes later.

The company is what drop verdicts and judge assignment compare, so it is spelled as the
config spells it when a declared model or a judge has the same API author (`mistralai/...` is
"Mistral AI"), else as OpenRouter's names do ("Qwen: Qwen3.8 27B" is Qwen).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import duckdb

from bench_pipeline.core.warehouse import transaction
from bench_pipeline.core.writer import insert_rows
from bench_pipeline.runs.plan import executable_cases, setup_partition_key
from bench_pipeline.taskbank import TaskBank
from bench_pipeline.taskbank.setups import Harness, ModelRecord, Setup, SetupCatalog

SOURCE = "openrouter_models"
PROPOSED = "proposed"
COLUMNS = (
    "model_id", "first_seen", "source_run_id", "setup_id", "label", "company", "model_record",
    "harness", "partition_keys", "status", "proposed_at",
)  # fmt: skip
_NOT_SLUG = re.compile(r"[^a-z0-9._-]+")
SLUG_CHARS = 80
ROUTER_AUTHOR = "openrouter"
"""`openrouter/auto`, `openrouter/free`, ...: routers that pick another model per request."""
NEW_WITHIN = timedelta(days=14)
"""How long after OpenRouter adds a model it still counts as new (see the module docstring)."""


@dataclass(frozen=True)
class Ingestion:
    """The accepted OpenRouter source run the live table holds."""

    run_id: str
    finished_at: datetime

    @property
    def day(self) -> date:
        """The day its rates take effect (`runs/model_rates`)."""
        return self.finished_at.date()


@dataclass(frozen=True)
class ListedModel:
    """One row of the live `openrouter_models` table, as far as a proposal needs it."""

    model_id: str
    name: str
    context_length: int | None
    input_modalities: str | None
    output_modalities: str | None
    priced: bool
    """Both the prompt and the completion rate are listed."""
    variable_pricing: bool
    alias_target: str | None
    expiration_date: str | None
    created_at: datetime | None = None
    """When OpenRouter added it (UTC)."""


@dataclass(frozen=True)
class Proposal:
    """A setup proposed for one model new on OpenRouter."""

    model_id: str
    first_seen: date
    source_run_id: str
    setup: Setup
    partition_keys: tuple[str, ...]
    status: str = PROPOSED

    @property
    def setup_id(self) -> str:
        return self.setup.setup_id


@dataclass(frozen=True)
class ProposalRound:
    """What one new ingestion gave: its proposals (stored) and why other models were not."""

    ingestion: Ingestion
    proposals: tuple[Proposal, ...]
    left_out: dict[str, int]
    """Models not proposed, counted by reason (covered, proposed before, an alias, ...)."""

    @property
    def partition_keys(self) -> list[str]:
        return [key for p in self.proposals for key in p.partition_keys]


def live_ingestion(conn: duckdb.DuckDBPyConnection) -> Ingestion | None:
    """The accepted source run whose rows the live OpenRouter table holds; None before one."""
    row = conn.execute(
        "SELECT run_id, finished_at FROM source_runs WHERE source = ? AND status = 'accepted' "
        f"AND run_id IN (SELECT DISTINCT source_run_id FROM {SOURCE}) "
        "ORDER BY finished_at DESC, run_id DESC LIMIT 1",
        [SOURCE],
    ).fetchone()
    return None if row is None else Ingestion(row[0], row[1])


def listed_models(conn: duckdb.DuckDBPyConnection, run_id: str) -> list[ListedModel]:
    """The models of one ingestion in the live table, by id."""
    rows = conn.execute(
        f"SELECT model_id, name, context_length, input_modalities, output_modalities, "
        f"prompt_usd_per_m IS NOT NULL AND completion_usd_per_m IS NOT NULL, "
        f"variable_pricing, alias_target, expiration_date, created_at "
        f"FROM {SOURCE} WHERE source_run_id = ? ORDER BY model_id",
        [run_id],
    ).fetchall()
    return [ListedModel(*row) for row in rows]


def why_not_runnable(model: ListedModel, day: date) -> str | None:
    """Why the model cannot be proposed as listed (None when it can)."""
    if model.model_id.startswith("~") or model.alias_target:
        return "an alias of another model"
    if api_author(model.model_id) == ROUTER_AUTHOR:
        return "an OpenRouter router (picks another model per request)"
    if ":" in model.model_id:
        return "a routing variant (:free, :batch, ...)"
    if model.variable_pricing or not model.priced:
        return "no per-token price"
    if "text" not in (model.input_modalities or "").split(","):
        return "does not read text"
    if "text" not in (model.output_modalities or "").split(","):
        return "does not write text"
    if not model.context_length or model.context_length <= 0:
        return "no context length"
    if model.expiration_date:
        try:
            if date.fromisoformat(model.expiration_date) <= day:
                return "expired"
        except ValueError:
            pass
    return None


def why_not_new(model: ListedModel, newest: datetime | None) -> str | None:
    """Why the model is not new on OpenRouter (None when it is): see `NEW_WITHIN`."""
    if model.created_at is None or newest is None:
        return "no listing date"
    if model.created_at < newest - NEW_WITHIN:
        return f"on OpenRouter for more than {NEW_WITHIN.days} days"
    return None


def api_author(api_id: str) -> str:
    """`mistralai` for `mistralai/mistral-medium-3.1` (and for `~mistralai/...`)."""
    return api_id.lstrip("~").split("/", 1)[0]


def companies_by_author(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Company by API author from (API id, company) pairs (declared models, judges); the
    first pair of an author wins."""
    found: dict[str, str] = {}
    for api_id, company in pairs:
        if "/" in api_id:
            found.setdefault(api_author(api_id), company)
    return found


def listing_companies(models: Iterable[ListedModel], known: Mapping[str, str]) -> dict[str, str]:
    """Company by API author: `known` first, else the prefix OpenRouter's names use most for
    the author ("Qwen: Qwen3.8 27B"; alphabetically first on a tie), else the author."""
    prefixes: dict[str, Counter[str]] = defaultdict(Counter)
    for model in models:
        prefix, colon, _rest = model.name.partition(": ")
        counts = prefixes[api_author(model.model_id)]
        if colon and prefix.strip():
            counts[prefix.strip()] += 1
    companies = {}
    for author, counts in prefixes.items():
        most = min(counts.items(), key=lambda item: (-item[1], item[0]))[0] if counts else author
        companies[author] = known.get(author, most)
    return companies


def record_id(api_id: str) -> str:
    """A record id (slug) for an API id: `qwen-qwen3.8-27b` for `qwen/qwen3.8-27b`."""
    slug = _NOT_SLUG.sub("-", api_id.lower()).strip("-._")[:SLUG_CHARS].rstrip("-._")
    return slug or "model"


def default_harness(catalog: SetupCatalog) -> Harness:
    """The first harness that pairs with every model and runs as plain API calls.

    Raises:
        ValueError: `harnesses.toml` has none, so nothing can be proposed.
    """
    for harness in catalog.harnesses.values():
        if harness.models is None and harness.environment == "api":
            if not harness.skills and not harness.tools:
                return harness
    raise ValueError(
        'no harness pairs with every model as plain API calls (environment = "api", no '
        "skills or tools, no `models` list): new models cannot be proposed"
    )


def proposed_setup(
    model: ListedModel, ingestion: Ingestion, company: str, harness: Harness
) -> Setup:
    """The model's exact API id in `harness`, costed from the ingestion's day."""
    record = ModelRecord(
        id=record_id(model.model_id),
        api_id=model.model_id,
        company=company,
        context_limit=int(model.context_length or 0),
        pricing_date=ingestion.day,
        notes=f"Proposed for {model.name}, new on OpenRouter (ingestion {ingestion.run_id}).",
    )
    return Setup(record, harness)


def plan_proposals(
    ingestion: Ingestion,
    models: Sequence[ListedModel],
    catalog: SetupCatalog,
    bank: TaskBank,
    known_companies: Mapping[str, str],
    proposed_before: Iterable[str],
) -> tuple[list[Proposal], dict[str, int]]:
    """The proposals for one ingestion's models, and the others counted by reason.

    Args:
        ingestion: The accepted OpenRouter run the models come from.
        models: Its listed models.
        catalog: The declared setups (a model any of them calls is covered).
        bank: The task bank: a proposal gets its setup's partition when the bank has an executable
            case version.
        known_companies: Company by API author, as the config spells it.
        proposed_before: Model ids already proposed (by any earlier ingestion).
    """
    covered = {s.model.api_id for s in catalog.setups if s.setup_id not in catalog.proposed}
    before = set(proposed_before)
    harness = default_harness(catalog)
    companies = listing_companies(models, known_companies)
    cases = executable_cases(bank)
    proposals: list[Proposal] = []
    left_out: Counter[str] = Counter()
    newest = max((m.created_at for m in models if m.created_at), default=None)
    for model in models:
        if model.model_id in covered:
            left_out["a declared setup calls it"] += 1
            continue
        if model.model_id in before:
            left_out["proposed before"] += 1
            continue
        reason = why_not_runnable(model, ingestion.day) or why_not_new(model, newest)
        if reason:
            left_out[reason] += 1
            continue
        setup = proposed_setup(model, ingestion, companies[api_author(model.model_id)], harness)
        keys = (setup_partition_key(setup),) if cases else ()
        proposals.append(Proposal(model.model_id, ingestion.day, ingestion.run_id, setup, keys))
    return proposals, dict(sorted(left_out.items()))


def _row(proposal: Proposal, now: datetime) -> list:
    setup = proposal.setup
    return [
        proposal.model_id, proposal.first_seen, proposal.source_run_id, setup.setup_id,
        setup.label, setup.model.company, setup.model.model_dump_json(),
        setup.harness.model_dump_json(), list(proposal.partition_keys), proposal.status,
        now.astimezone(UTC).replace(tzinfo=None),
    ]  # fmt: skip


def record_proposals(
    conn: duckdb.DuckDBPyConnection, proposals: Sequence[Proposal], now: datetime
) -> int:
    """Insert the proposals of models not proposed yet (insert-only, in one transaction);
    returns how many were new."""
    with transaction(conn):
        seen = {m for (m,) in conn.execute("SELECT model_id FROM setup_proposals").fetchall()}
        new = [p for p in proposals if p.model_id not in seen]
        insert_rows(conn, "setup_proposals", COLUMNS, [_row(p, now) for p in new])
    return len(new)


def stored_proposals(
    conn: duckdb.DuckDBPyConnection, source_run_id: str | None = None
) -> list[Proposal]:
    """The stored proposals (of one ingestion, or all), in the order they were made."""
    where = "WHERE status = ?" + (" AND source_run_id = ?" if source_run_id else "")
    params = [PROPOSED, *([source_run_id] if source_run_id else [])]
    rows = conn.execute(
        "SELECT model_id, first_seen, source_run_id, model_record, harness, partition_keys, "
        f"status FROM setup_proposals {where} ORDER BY proposed_at, model_id",
        params,
    ).fetchall()
    proposals = []
    for model_id, first_seen, run_id, record, harness, keys, status in rows:
        setup = Setup(ModelRecord.model_validate_json(record), Harness.model_validate_json(harness))
        proposals.append(Proposal(model_id, first_seen, run_id, setup, tuple(keys), status))
    return proposals


def with_proposals(conn: duckdb.DuckDBPyConnection, catalog: SetupCatalog) -> SetupCatalog:
    """The declared setups and, marked proposed, every stored proposal's setup: what the
    model-run partitions are planned from and resolved against."""
    return catalog.with_proposed(p.setup for p in stored_proposals(conn))


def benchmarked_companies(conn: duckdb.DuckDBPyConnection, catalog: SetupCatalog) -> list[str]:
    """The companies whose models are benchmarked: every declared setup's, and a proposed
    setup's once it has runs stored (a PM judge must come from none of them)."""
    ran = {row[0] for row in conn.execute("SELECT DISTINCT setup_id FROM model_runs").fetchall()}
    proposed = [p.setup for p in stored_proposals(conn) if p.setup_id in ran]
    return sorted({s.model.company for s in [*catalog.setups, *proposed]})


def mark_proposed(conn: duckdb.DuckDBPyConnection, catalog: SetupCatalog) -> None:
    """Set `setups.proposed` from the catalog (a proposal later declared becomes false)."""
    conn.execute(
        "UPDATE setups SET proposed = list_contains(?::VARCHAR[], setup_id)",
        [sorted(catalog.proposed)],
    )


def propose_new_models(
    conn: duckdb.DuckDBPyConnection,
    handled: str | None,
    catalog: SetupCatalog,
    bank: TaskBank,
    known_companies: Mapping[str, str],
    now: datetime,
) -> ProposalRound | None:
    """Propose setups for the live OpenRouter ingestion unless it is `handled` (the sensor's
    cursor): None when there is no accepted ingestion or it was handled.

    The round's proposals are every stored proposal of that ingestion, so a round cut short
    after storing them (before the cursor moved) gives the same proposals when run again.
    """
    ingestion = live_ingestion(conn)
    if ingestion is None or ingestion.run_id == handled:
        return None
    before = {m for (m,) in conn.execute(
        "SELECT model_id FROM setup_proposals WHERE source_run_id <> ?", [ingestion.run_id]
    ).fetchall()}  # fmt: skip
    proposals, left_out = plan_proposals(
        ingestion, listed_models(conn, ingestion.run_id), catalog, bank, known_companies, before
    )
    record_proposals(conn, proposals, now)
    return ProposalRound(ingestion, tuple(stored_proposals(conn, ingestion.run_id)), left_out)
