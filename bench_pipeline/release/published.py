"""Every table a dataset release publishes, declared once (adding a table is one entry).

Each table is a query over the warehouse (or a Python `build(conn)` for one that is not in
it) with a total ORDER BY, so the same warehouse content always gives the same rows in the
same order, and the declaration of every column (name, type, description), its key, its
lineage and its rank rules (see `schema.py`). `key` names a row for release diffs; a rank
rule names a board's rank column (competition ranking, `scores/ranking.py`); `lineage`
lists the columns that say where or when a value came from (source run ids, run times).
Lineage is published and shown beside every change in a diff, but it is not compared and not
part of the release id: re-ingesting an unchanged payload gives a new run id and new times,
and that must not produce a new release. Evaluation titles come from
`sources/evaluations.toml`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import duckdb
import polars as pl

from bench_pipeline.indices.rules import (
    CAPABILITY_INDICES,
    KNOWN_GOOD_COMPONENTS,
    KNOWN_GOOD_REQUIREMENTS,
)
from bench_pipeline.ingest import freshness
from bench_pipeline.ingest.catalog import evaluations, source_definitions
from bench_pipeline.release.pm_checks_tables import PM_CHECKS_PUBLISHED
from bench_pipeline.release.receipts import RECEIPT_TABLES
from bench_pipeline.release.schema import (
    SCHEMA_VERSION,
    Column,
    PublishedTable,
    RankRule,
)
from bench_pipeline.release.tasks import TASKS_TABLE
from bench_pipeline.scores import pm, usecase
from bench_pipeline.taskbank import NAVIGATOR_CATEGORIES

# The version of each methodology a release was computed with. Bump a version when its rules
# change: the release id covers these, so the same data under new rules is a new release.
METHODOLOGY_VERSIONS: dict[str, str] = {
    "known_good_index": "1",
    "capability_indices": "1",
    "market": "3",  # 2: one row per canonical model; hosts' listings are provider_prices rows
    # 3: openness weighed by precedence (the lab's own record first); $0 trials flagged
    "arena": "1",
    "registry": "2",  # 2: one canonical model per lab's model, hosts folded in, impostors held
    "provenance": "1",
    "pm_suite": "1",
    "usecase_rank": "2",  # 2: signed submitters, near copies, own evidence, implausible
    # cost; real and simulated groups ranked apart, as the page shows them
    "navigator_index": "2",  # 2: a person's decision on a judge split enters the score
    "item_boards": "1",
    "navigator_v1": "1",  # classic v1: its own library, the pinned judge, the display rule
    "receipts": "1",
    "pm_checks": "1",
}

ARENA_SQL = """
SELECT a.model_id, m.name AS model_name, r.leaderboard, r.category, r.model_key, r.rating,
       r.rating_low, r.rating_high, r.votes, r.rank, r.rank_best, r.rank_worst, r.preliminary,
       r.published_on, r.source_run_id
FROM arena_ratings r
JOIN model_aliases a ON a.source = 'arena' AND a.source_key = r.model_key
JOIN models m USING (model_id)
WHERE r.category = 'full'
ORDER BY r.leaderboard, r.rating DESC, r.model_key
"""

MARKET_DOWNLOAD = [
    "model_id",
    "model_name",
    "input_usd_per_1m",
    "output_usd_per_1m",
    "blended_price_usd_per_1m",
    "output_speed_tps",
    "latency_ttft_s",
    "providers_tracked",
    "openness",
    "licence_class",
    "openness_input",
    "openness_source_key",
    "price_flag",
    "rate_flag",
]

KNOWN_GOOD_SQL = f"""
SELECT model_id, model_name, known_good_index, index_components,
       {", ".join(KNOWN_GOOD_COMPONENTS)}, known_good_index_low, known_good_index_high,
       without_stderr
FROM known_good_index
ORDER BY known_good_index DESC NULLS LAST, model_id
"""

CAPABILITY_SQL = f"""
SELECT model_id, model_name, {", ".join(d.name for d in CAPABILITY_INDICES)},
       {", ".join(f"{d.name}_low, {d.name}_high" for d in CAPABILITY_INDICES)}, without_stderr
FROM capability_indices
ORDER BY model_id
"""

MARKET_SQL = f"SELECT {', '.join(MARKET_DOWNLOAD)} FROM market ORDER BY model_id"

PROVIDER_PRICES_SQL = """
SELECT model_id, provider_name, tag, quantization, input_usd_per_1m, output_usd_per_1m,
       blended_price_usd_per_1m, rate_flag, uptime_last_30m, latency_ttft_s, output_speed_tps,
       source_run_id
FROM provider_prices
ORDER BY model_id, provider_name, tag
"""

OPENNESS_EVIDENCE_SQL = """
SELECT model_id, position, precedence, input, source, source_key, open_weights, licence,
       licence_class, role, source_run_id
FROM openness_evidence
ORDER BY model_id, position
"""

MODELS_SQL = "SELECT model_id, name, organization, origin_source FROM models ORDER BY model_id"

# Every name a published model is also listed as: each source's listing and the host, if any.
MODEL_ALIASES_SQL = """
SELECT model_id, source, source_key, name, host, method, evidence FROM model_aliases
ORDER BY model_id, source, source_key
"""

# The last run of every source, accepted or not: a rejected run is news to a reader too.
SOURCE_RUNS_SQL = """
SELECT source, run_id, status, started_at, finished_at, rows_valid, rows_quarantined, reason,
       content_sha256, data_as_of, data_as_of_basis
FROM source_runs
QUALIFY row_number() OVER (PARTITION BY source ORDER BY finished_at DESC, run_id DESC) = 1
ORDER BY source
"""

INDEX_LINEAGE_SQL = """
SELECT model_id, evaluation_id, score, normalised, source_run_id, publisher, stderr, log_url
FROM evaluation_normalised
ORDER BY model_id, evaluation_id
"""

# Every score row Epoch AI publishes for an ingested evaluation, as published (a model's several
# rows, agents and re-runs, all kept), with its standard error, run date and log viewer link.
EPOCH_SCORES_SQL = """
SELECT e.evaluation_id, e.row_key, e.model_version, a.model_id, e.agent, e.score, e.stderr,
       TRY_CAST(e.run_date AS TIMESTAMPTZ) AS run_at,
       TRY_CAST(e.release_date AS DATE) AS release_date, e.log_url, e.source_file,
       e.source_run_id
FROM evaluation_rows e
LEFT JOIN model_aliases a ON a.source = 'epoch' AND a.source_key = e.model_version
ORDER BY e.evaluation_id, e.model_version, e.row_key
"""

# Rates as they changed: the first observation of each (model, host, tag) and every later one
# whose rate differs from the one before. The warehouse keeps every observation; publishing
# only the changes keeps an unchanged re-ingestion from making a new release.
PRICE_HISTORY_SQL = """
WITH ordered AS (
    SELECT *,
           lag(input_usd_per_1m) OVER w AS previous_input,
           lag(output_usd_per_1m) OVER w AS previous_output,
           row_number() OVER w AS place
    FROM price_history
    WINDOW w AS (PARTITION BY model_id, host, tag ORDER BY observed_at, source_run_id)
)
SELECT model_id, host, tag, observed_at, input_usd_per_1m, output_usd_per_1m, source_run_id
FROM ordered
WHERE place = 1
   OR previous_input IS DISTINCT FROM input_usd_per_1m
   OR previous_output IS DISTINCT FROM output_usd_per_1m
ORDER BY model_id, host NULLS FIRST, tag NULLS FIRST, observed_at, source_run_id
"""


def sources_frame(conn: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Who publishes each source, under which licence, how often it is read and how old its
    data may be, and the date of the data this release holds (the date its last accepted
    payload states: `ingest.freshness`)."""
    definitions = sorted(source_definitions().values(), key=lambda d: d.name)
    live = freshness.live_data(conn)
    names = [column.name for column in SOURCES_COLUMNS]
    rows = []
    for d in definitions:
        data = live.get(d.name)
        rows.append(
            {c: getattr(d, c) for c in names[: names.index("freshness_hours") + 1]}
            | {
                "data_run_id": data.run_id if data else None,
                "data_as_of": data.data_as_of if data else None,
                "data_as_of_basis": data.basis if data else "no accepted run yet",
            }
        )
    schema: dict[str, Any] = dict.fromkeys(names, pl.Utf8)
    schema |= {"freshness_hours": pl.Int64, "data_as_of": pl.Datetime("us")}
    return pl.DataFrame(rows, schema=schema, orient="row")


def evaluation_titles() -> dict[str, str]:
    """Each evaluation's title, from `sources/evaluations.toml` (its one home)."""
    return {spec.id: spec.title for spec in evaluations()}


def capability_title(name: str) -> str:
    """A capability index's display name: `coding_index` is "Coding"."""
    return name.removesuffix("_index").replace("_", " ").capitalize()


def c(name: str, type_: str, description: str, title: str | None = None) -> Column:
    """Shorthand for one column declaration."""
    return Column(name, type_, description, title)


MODEL_ID = c("model_id", "string", "Canonical model id in the registry.")
MODEL_NAME = c("model_name", "string", "The model's name in the registry.")
SOURCE_RUN = c("source_run_id", "string", "The source run the row's values came from.")
SIMULATED = c("simulated", "boolean", "True when a simulated provider made the runs behind it.")
RANK_RULE_TEXT = "Competition rank (ties share the best rank, the next skips: 1, 1, 3)"
USD_1M = "USD per million tokens"


def _component(evaluation_id: str) -> Column:
    title = evaluation_titles()[evaluation_id]
    return c(evaluation_id, "number", f"Normalised 0-1 score on {title}.", title)


def _interval(name: str, title: str) -> tuple[Column, Column]:
    what = (
        f"95% interval of the {title} index, propagated from the publisher's standard errors "
        "(methodology/indices.html); null when a component has none"
    )
    return c(f"{name}_low", "number", f"Low end of the {what}."), c(
        f"{name}_high", "number", f"High end of the {what}."
    )


WITHOUT_STDERR = c(
    "without_stderr",
    "string",
    "The model's evaluations (ids, comma-separated) whose score has no published standard "
    "error, so an index resting on them has no interval; null when every score has one.",
)


def _capability(name: str) -> Column:
    return c(name, "number", f"{capability_title(name)} index, 0-100.", capability_title(name))


KNOWN_GOOD_COLUMNS = (
    MODEL_ID,
    MODEL_NAME,
    c("known_good_index", "number", "Known Good Index, 0-100 (null: not eligible)."),
    c("rank", "integer", f"{RANK_RULE_TEXT} by the Known Good Index."),
    c("index_components", "integer", "How many of the six evaluations the index rests on."),
    *(_component(e) for e in KNOWN_GOOD_COMPONENTS),
    *_interval("known_good_index", "Known Good Index"),
    WITHOUT_STDERR,
)
CAPABILITY_COLUMNS = (
    MODEL_ID,
    MODEL_NAME,
    *(
        column
        for d in CAPABILITY_INDICES
        for column in (
            _capability(d.name),
            c(
                f"{d.name}_rank",
                "integer",
                f"{RANK_RULE_TEXT} by the {capability_title(d.name)} index.",
            ),
        )
    ),
    *(column for d in CAPABILITY_INDICES for column in _interval(d.name, capability_title(d.name))),
    WITHOUT_STDERR,
)
MARKET_COLUMNS = (
    MODEL_ID,
    MODEL_NAME,
    c(
        "input_usd_per_1m",
        "decimal",
        f"The model's own input rate (OpenRouter, else the lab's), {USD_1M}.",
    ),
    c(
        "output_usd_per_1m",
        "decimal",
        f"The model's own output rate (OpenRouter, else the lab's), {USD_1M}.",
    ),
    c("blended_price_usd_per_1m", "decimal", f"(3 x input + output) / 4, {USD_1M}."),
    c("output_speed_tps", "number", "Median output speed across hosts, tokens per second."),
    c("latency_ttft_s", "number", "Median time to first token across hosts, seconds."),
    c("providers_tracked", "integer", "Hosts whose prices and telemetry are tracked."),
    c("openness", "integer", "Openness score (100/90/60/40/5)."),
    c("licence_class", "string", "The licence's class (sources/licences.toml)."),
    c(
        "openness_input",
        "string",
        "The input that decided the openness (openness_evidence): lab_listing, "
        "weights_repository, arena_licence, epoch_accessibility or host_listings.",
    ),
    c("openness_source_key", "string", "The record of that input (a listing, a repository)."),
    c("price_flag", "string", "Disagreement over 1% between OpenRouter and models.dev."),
    c(
        "rate_flag",
        "string",
        "Why the listed rate is not a price to rank by: trial (a $0 free trial), per_unit "
        "($0 per token, priced per clip or request), variable; such a row has no rates.",
    ),
)
OPENNESS_EVIDENCE_COLUMNS = (
    MODEL_ID,
    c("position", "integer", "The order the inputs were weighed in, first decides."),
    c(
        "precedence",
        "integer",
        "1 the lab's own listing, 2 the weights repository, 3 LMArena, "
        "4 Epoch AI, 5 hosts' and resellers' listings.",
    ),
    c("input", "string", "The kind of input."),
    c("source", "string", "The source it came from."),
    c("source_key", "string", "The record: a listing, a repository, a model key."),
    c("open_weights", "boolean", "Whether the record says the weights are published."),
    c("licence", "string", "The licence string the record names."),
    c("licence_class", "string", "Its class (sources/licences.toml)."),
    c("role", "string", "decided, agrees, overruled (by an input before it) or silent."),
    SOURCE_RUN,
)
PROVIDER_COLUMNS = (
    MODEL_ID,
    c("provider_name", "string", "The host serving the model."),
    c("tag", "string", "The host's endpoint tag; `models.dev:<listing>` for a models.dev host."),
    c("quantization", "string", "Quantization the host serves."),
    c("input_usd_per_1m", "decimal", f"The host's input rate, {USD_1M}."),
    c("output_usd_per_1m", "decimal", f"The host's output rate, {USD_1M}."),
    c(
        "blended_price_usd_per_1m",
        "decimal",
        f"(3 x input + output) / 4, {USD_1M}; none for a flagged rate.",
    ),
    c("rate_flag", "string", "trial: the host's $0 listing is a free trial, not a price."),
    c("uptime_last_30m", "number", "The host's uptime over the last 30 minutes, percent."),
    c("latency_ttft_s", "number", "Time to first token, seconds."),
    c("output_speed_tps", "number", "Output speed, tokens per second."),
    SOURCE_RUN,
)
ARENA_COLUMNS = (
    MODEL_ID,
    MODEL_NAME,
    c("leaderboard", "string", "The LMArena leaderboard."),
    c("category", "string", "The leaderboard's category (only `full` is published)."),
    c("model_key", "string", "The model's name on LMArena."),
    c("rating", "number", "LMArena rating."),
    c("rating_low", "number", "Lower end of the 95% interval."),
    c("rating_high", "number", "Upper end of the 95% interval."),
    c("votes", "integer", "Votes behind the rating, where the public table gives them."),
    c("rank", "integer", "LMArena's own rank, as it publishes it."),
    c("rank_best", "integer", "LMArena's best rank within the interval."),
    c("rank_worst", "integer", "LMArena's worst rank within the interval."),
    c("preliminary", "boolean", "LMArena marks the rating preliminary."),
    c("published_on", "date", "The day LMArena published the table."),
    SOURCE_RUN,
)
MODELS_COLUMNS = (
    MODEL_ID,
    c("name", "string", "The model's name."),
    c("organization", "string", "Who makes it."),
    c("origin_source", "string", "The source that first named it."),
)
MODEL_ALIASES_COLUMNS = (
    MODEL_ID,
    c("source", "string", "The source that lists the model."),
    c("source_key", "string", "The source's own key for the listing."),
    c("name", "string", "The name the source gives it."),
    c("host", "string", "The host or reseller listing it (models.dev provider), if not the lab."),
    c("method", "string", "How it was matched: alias_file, provider_id, normalised_name, new."),
    c(
        "evidence",
        "string",
        "What the match rests on: the id or name shared, or the reviewed "
        "alias table row (who reviewed it, when, why).",
    ),
)
SOURCE_RUNS_COLUMNS = (
    c("source", "string", "The source."),
    c("run_id", "string", "The run."),
    c("status", "string", "accepted or rejected."),
    c("started_at", "timestamp", "When the run started (UTC)."),
    c("finished_at", "timestamp", "When it finished (UTC)."),
    c("rows_valid", "integer", "Records that passed validation."),
    c("rows_quarantined", "integer", "Records held in quarantine."),
    c("reason", "string", "Why a rejected run was rejected."),
    c("content_sha256", "string", "SHA-256 over the payload the run read."),
    c(
        "data_as_of",
        "timestamp",
        "The date of the run's data: the newest date its payload states (UTC), not the fetch "
        "time; null when it states none or the run was not staged.",
    ),
    c("data_as_of_basis", "string", "How `data_as_of` was derived, or why there is none."),
)
LINEAGE_COLUMNS = (
    MODEL_ID,
    c("evaluation_id", "string", "The evaluation (titles in schema.json `evaluations`)."),
    c("score", "number", "The model's best published score, percent."),
    c("normalised", "number", "Min-max normalised score, 0-1 (lower-is-better inverted)."),
    SOURCE_RUN,
    c("publisher", "string", "Who published the score."),
    c("stderr", "number", "The score's standard error as published, percentage points."),
    c("log_url", "string", "The publisher's log viewer for the run behind the score, if any."),
)
EPOCH_SCORES_COLUMNS = (
    c("evaluation_id", "string", "The evaluation (titles in schema.json `evaluations`)."),
    c("row_key", "string", "Epoch AI's id of the row (one run of one model)."),
    c("model_version", "string", "The model as Epoch AI names it."),
    c("model_id", "string", "Canonical model id in the registry (null: not matched)."),
    c("agent", "string", "The scaffold or agent, where Epoch AI names one."),
    c("score", "number", "The published score, percent (0-100)."),
    c("stderr", "number", "Its standard error as Epoch AI publishes it, percentage points."),
    c("run_at", "timestamp", "When Epoch AI started the run (UTC), where it says."),
    c("release_date", "date", "The model's release date as Epoch AI states it."),
    c("log_url", "string", "Epoch AI's log viewer for the run, where the file links one."),
    c("source_file", "string", "The Epoch AI file the row was read from."),
    SOURCE_RUN,
)
PRICE_HISTORY_COLUMNS = (
    MODEL_ID,
    c("host", "string", "The host (null: the model's own OpenRouter rate)."),
    c("tag", "string", "The host's endpoint tag; `models.dev:<listing>` for a models.dev host."),
    c(
        "observed_at",
        "timestamp",
        "The date of the rate's data: the newest date the OpenRouter payload it came from "
        "states (its run's `data_as_of`, UTC), not when it was fetched.",
    ),
    c("input_usd_per_1m", "decimal", f"Input rate, {USD_1M}."),
    c("output_usd_per_1m", "decimal", f"Output rate, {USD_1M}."),
    SOURCE_RUN,
)
SOURCES_COLUMNS = (
    c("name", "string", "The source's name."),
    c("title", "string", "Its title."),
    c("publisher", "string", "Who publishes it."),
    c("homepage", "string", "Where it is published."),
    c("licence", "string", "Its licence."),
    c("attribution", "string", "The attribution its licence asks for."),
    c("cadence_cron", "string", "How often it is read (cron, UTC)."),
    c("freshness_hours", "integer", "How old its data may be before it is called stale, hours."),
    c("data_run_id", "string", "The accepted run whose data this release holds."),
    c(
        "data_as_of",
        "timestamp",
        "The date of that data: the newest date its payload states (UTC), not when it was "
        "fetched; null when the payload states none.",
    ),
    c("data_as_of_basis", "string", "How `data_as_of` was derived, or why there is none."),
)
FAILURE_COLUMNS = (
    c("failed_at", "timestamp", "When the pipeline run failed (UTC)."),
    c("job_name", "string", "The Dagster job."),
    c("message", "string", "The failure's message."),
    c("dagster_run_id", "string", "The Dagster run."),
)
SETUP_ID = c("setup_id", "string", "The setup (a model in a harness).")
SETUP_MODEL = c(
    "model_id", "string", "The registry model the setup runs (null: no source lists its API id)."
)
# A Navigator table names its setup by label; a label of setups on two models names none.
LABEL_MODELS = (
    "(SELECT label, CASE WHEN count(DISTINCT model_id) = 1 THEN any_value(model_id) END "
    "AS model_id FROM setup_models GROUP BY label)"
)
PM_RUNS_COLUMNS = (
    c("run_id", "string", "The model run."),
    SETUP_ID,
    SETUP_MODEL,
    c("task", "string", "The PM task."),
    c("case_id", "string", "The task bank case."),
    c("category", "string", "The task's category."),
    c("core", "boolean", "A core task (a setup is ranked once it has done every one)."),
    c("prototype", "boolean", "The task asks for a prototype (opened in Chromium)."),
    c("repeat", "integer", "Which repeat of a noisy case."),
    c("status", "string", "complete, or what the run still waits for."),
    c("published", "boolean", "The run counts on the board."),
    c("dm_score", "number", "Decision-model score, 0-100."),
    c("judge_score", "number", "Judge score, 0-100."),
    c("review_score", "number", "Blind human review score, 0-100."),
    c("pm_score", "number", "The run's PM score, 0-100."),
    c("critical_failure", "boolean", "A critical failure was found."),
    c("capped", "boolean", "The score was capped by a critical failure."),
    SIMULATED,
)
PM_TASKS_COLUMNS = (
    SETUP_ID,
    SETUP_MODEL,
    c("task", "string", "The PM task."),
    c("category", "string", "The task's category."),
    c("core", "boolean", "A core task."),
    c("runs", "integer", "Published runs."),
    c("score", "number", "Mean PM score over its runs, 0-100."),
    c("repeat_spread", "number", "Pooled spread of repeats of noisy cases."),
    SIMULATED,
)
PM_CATEGORIES_COLUMNS = (
    SETUP_ID,
    SETUP_MODEL,
    c("category", "string", "The category."),
    c("tasks", "integer", "Tasks scored in it."),
    c("score", "number", "Category score, 0-100."),
    SIMULATED,
)
PM_SETUPS_COLUMNS = (
    SETUP_ID,
    SETUP_MODEL,
    c("overall", "number", "Overall PM score, 0-100."),
    c("margin95", "number", "95% margin over its runs (from five runs)."),
    c("runs", "integer", "Published runs."),
    c("tasks", "integer", "Tasks done."),
    c("missing_core_tasks", "string", "Core tasks not yet done (comma-separated)."),
    c("status", "string", "ranked, or provisional until every core task is done."),
    c("rank", "integer", f"{RANK_RULE_TEXT} by overall, among ranked setups."),
    c("setup", "string", "The setup's label."),
    SIMULATED,
)
PM_DROPS_COLUMNS = (
    SETUP_ID,
    SETUP_MODEL,
    c("drop_date", "timestamp", "The drop's date: its last grade or review."),
    c("previous_setup_id", "string", "The same company's previous drop."),
    c("verdict_vs_previous", "string", "The verdict against it."),
    c("leader_setup_id", "string", "The leader of the day."),
    c("verdict_vs_leader", "string", "The verdict against it."),
    SIMULATED,
)
USECASE_SIMULATED = c(
    "simulated",
    "boolean",
    "True for the offline demo's made-up runs (ranked apart from real submissions).",
)
USECASE_METRICS = (
    ("outcome", "Full success", "1 success, 0.5 partial, 0 fail."),
    ("cost_efficiency", "Cost per success", "Cheapest cost per success on the use case / own."),
    ("speed", "Speed", "Fastest wall time of a non-failed run on the use case / own."),
    ("autonomy", "Autonomy", "1 / (1 + step-ins)."),
    ("first_try", "First try", "1 on the first try, else 1 / (1 + retries)."),
)
USECASE_RUNS_COLUMNS = (
    c("run_id", "string", "The submitted run."),
    c("use_case", "string", "The use case."),
    c("group", "string", "Model name + settings (ranked separately)."),
    c("model", "string", "The model's name as submitted (a look-alike escaped)."),
    c("settings", "string", "Its settings."),
    c("outcome", "string", "success, partial or fail."),
    c("score", "number", "Run score: 100 x the weighted mean of the five metrics."),
    *(c(f"metric_{n}", "number", f"{d} 0-1.", title) for n, title, d in USECASE_METRICS),
    c("cost_usd", "decimal", "The run's cost, USD."),
    c("cost_per_success_usd", "decimal", "Cost x (1 + retries) / outcome value, USD."),
    c("trust", "number", "Trust, 0-100."),
    c("weight", "number", "trust / 100 x 0.5^(age / 90 days): its weight in the group."),
    c("under_review", "boolean", "A hard flag is not cleared: the run counts nowhere."),
    c("verified", "boolean", "Independently reproduced."),
    c("rerun_of", "string", "The run this one reruns (a head-to-head pair)."),
    c("published_at", "timestamp", "When the run was received (UTC)."),
    c("flags", "string", "Hard flags raised (comma-separated)."),
    c("cleared_flags", "string", "Hard flags a reviewer cleared."),
    c("warnings", "string", "Warnings."),
    c("duplicate_of", "string", "The earlier run this one resubmits (it never counts)."),
    c("reproduces", "string", "The run this one claims to reproduce."),
    c("reproduction_counts", "boolean", "Whether that reproduction counts (+10 trust)."),
    c("reproduction_reason", "string", "Why the claimed reproduction counts, or why not."),
    c("model_name_problem", "string", "Why the model name is a look-alike (shown escaped)."),
    USECASE_SIMULATED,
)
USECASE_GROUPS_COLUMNS = (
    c("use_case", "string", "The use case."),
    c("group", "string", "Model name + settings."),
    c("model", "string", "The model's name."),
    c("settings", "string", "Its settings."),
    c("score", "number", "The board's score: weighted score, blended with Bradley-Terry."),
    c("weighted_score", "number", "Trust-and-recency weighted mean of counted run scores."),
    c("ci_low", "number", "90% interval of the weighted score, low end."),
    c("ci_high", "number", "90% interval of the weighted score, high end."),
    c("n_eff", "number", "Effective number of runs."),
    c("runs", "integer", "Counted runs."),
    c("passes", "integer", "Successes."),
    c("partials", "integer", "Partial successes."),
    c("fails", "integer", "Failures."),
    c("pass_rate", "number", "Successes / counted runs."),
    c("under_review_runs", "integer", "Runs under review (not counted)."),
    c("bt_pairs", "integer", "Head-to-head rerun pairs."),
    c("bt_win_probability", "number", "Mean Bradley-Terry win probability."),
    c("blended", "boolean", "Score blends in the win probability (enough pairs)."),
    c(
        "rank",
        "integer",
        f"{RANK_RULE_TEXT} by score within the use case, real and simulated groups apart.",
    ),
    c("trend", "string", "Rank against the board 7 days before: up, down, same, new."),
    USECASE_SIMULATED,
)
NAVIGATOR_MODELS_COLUMNS = (
    c("model", "string", "The setup's label."),
    SETUP_MODEL,
    c("index", "number", "Navigator Index v2, 0-10 (null unless scored in every category)."),
    *(c(n, "number", f"{n.replace('_', ' ').capitalize()} score.") for n in NAVIGATOR_CATEGORIES),
    c("tasks", "integer", "Tasks scored."),
    c("runs", "integer", "Runs scored."),
    c("rank_best", "integer", "Best rank: 1 + models significantly better."),
    c("rank_worst", "integer", "Worst rank: N - models significantly worse."),
    c("tied", "boolean", "Best and worst rank differ."),
    c("candidate_cost_usd", "decimal", "Sum of its run costs, USD (null if any is unpriced)."),
    c("cost_per_success_usd", "decimal", "Cost per success, USD."),
    c("dominated_by", "string", "Models better and cheaper."),
    c("dominates", "string", "Models it is better and cheaper than."),
    SIMULATED,
    c("pending_runs", "integer", "Runs waiting for a person to decide a judge split."),
    c("index_low", "number", "Low end of the Index's 95% interval over tasks (null: none)."),
    c("index_high", "number", "High end of that interval."),
)
NAVIGATOR_PAIRS_COLUMNS = (
    c("model_a", "string", "One model."),
    c("model_b", "string", "The other."),
    c("n_tasks", "integer", "Shared tasks."),
    c("statistic", "number", "Mean paired difference."),
    c("p_value", "number", "Exact sign-flip p-value."),
    c("rejected", "boolean", "Significant at 5% after Holm."),
    c("better", "string", "The better model, when significant."),
    SIMULATED,
)
NAVIGATOR_RESOLUTION_COLUMNS = (
    c("models", "integer", "Models with an index (the simulation's rows)."),
    c("tasks", "integer", "Active tasks of the bank (its columns)."),
    c(
        "gap_50",
        "number",
        "Least index gap (points) a simulated pair is separated at half the time.",
    ),
    c("gap_80", "number", "The same, four times in five (80% power)."),
    c("threshold", "number", "p-value counted as separated (Holm's next threshold)."),
    c("replicates", "integer", "Simulated pairs behind each gap."),
    c("test", "string", "The paired test simulated."),
    SIMULATED,
)
NAVIGATOR_FIT_COLUMNS = (
    c("task", "string", "The task."),
    c("monthly_volume", "integer", "Monthly calls."),
    c("monthly_budget_usd", "decimal", "Monthly budget, USD."),
    c("rank", "integer", "Position in the classic v1 fit order."),
    c("model", "string", "The setup's label."),
    SETUP_MODEL,
    c("displayed_overall", "number", "Displayed overall score, 0-5."),
    c("calls", "integer", "Calls scored."),
    c("mean_cost_per_call_usd", "decimal", "Mean cost per call, USD."),
    c("monthly_cost_usd", "decimal", "Monthly cost at that volume, USD."),
    SIMULATED,
)
NAVIGATOR_V1_RESULTS_COLUMNS = (
    c("run_id", "string", "The v1 call."),
    c("comparison_id", "string", "The comparison it was part of."),
    c("model", "string", "The model (setup label, or the API id in a requested comparison)."),
    c("task", "string", "The v1 library task."),
    c("tier", "integer", "1: scripted check; 2: the pinned judge."),
    c("call", "integer", "Which of the task's calls in the comparison."),
    c("stored_overall", "number", "Overall 0-5 exactly as the grader gave it (never rewritten)."),
    c("displayed_overall", "number", "Overall 0-5 shown: 4 when mixed; 5 only when complete."),
    c("label", "string", "clean, mixed (a dimension at 3 or below capped a 5) or incomplete."),
    c("needs_review", "boolean", "The output is incomplete."),
    c("dimensions", "string", "Stored dimension scores 0-5, JSON (tier 1: its check)."),
    c("grader", "string", "The judge model's API id (tier 2) or the scripted check."),
    c("rubric_version", "string", "The rubric the judge scored under (tier 2)."),
    c("methodology_version", "string", "Navigator methodology version (v1)."),
    c("output_incomplete", "boolean", "From the finish reason and the max-token budget."),
    c("completeness_confidence", "string", "high, medium or low."),
    c("completeness_reason", "string", "Why the output is taken as complete or not."),
    c("candidate_cost_usd", "decimal", "Measured cost of the call, USD."),
    c("judge_cost_usd", "decimal", "Cost of the judge calls, USD (null when none recorded)."),
    c("total_cost_usd", "decimal", "Candidate plus judge, only when both are known."),
    SIMULATED,
)
NAVIGATOR_V1_TASKS_COLUMNS = (
    c("task", "string", "Task id."),
    c("title", "string", "Title."),
    c("category", "string", "Category."),
    c("tier", "integer", "1: scripted check; 2: the pinned judge."),
    c("version", "string", "Task version."),
)

ITEM_BOARDS_COLUMNS = (
    c("board", "string", "The leaderboard (SWE-bench: bash-only, Verified)."),
    c("entry", "string", "The publisher's entry name, verbatim."),
    c("model_id", "string", "The registry model its single `Model:` tag matches, if any."),
    c("items", "integer", "Items with a published result (null: none published)."),
    c("resolved", "integer", "Items resolved."),
    c("score", "number", "100 x resolved / items."),
    c("ci_low", "number", "Exact (Clopper-Pearson) 95% interval of the score, low end."),
    c("ci_high", "number", "Exact (Clopper-Pearson) 95% interval of the score, high end."),
    c("rank_best", "integer", "Best rank: 1 + entries significantly better."),
    c("rank_worst", "integer", "Worst rank: N - entries significantly worse."),
    c("tied", "boolean", "Best and worst rank differ."),
    c("cost_usd", "decimal", "Sum of per-item costs, USD (null if any item has none)."),
    c("cost_per_success_usd", "decimal", "Cost per resolved item, USD (to 1e-12)."),
    c("published_percent", "number", "The percentage the publisher shows."),
    c("entry_key", "string", "The publisher's submission folder (names can repeat)."),
    c("dominated_by", "string", "Entries better and cheaper per resolved item (; between)."),
    c(
        "parity",
        "string",
        "Why an entry with per-item results is not ranked: its score from them disagrees "
        "with its published score at the published rounding (both numbers).",
    ),
    c("logs", "string", "Where SWE-bench keeps the entry's evaluation logs (s3://), if stated."),
)
ITEM_BOARD_PAIRS_COLUMNS = (
    c("board", "string", "The leaderboard."),
    c("entry_a", "string", "One entry (ranked above or level with entry_b)."),
    c("entry_b", "string", "The other."),
    c("items", "integer", "Items both entries have results for."),
    c("discordant", "integer", "Shared items one resolved and the other did not."),
    c("p_value", "number", "Exact two-sided sign-flip p-value over the shared items."),
    c("significant", "boolean", "Significant at 5% after Holm over the board's pairs."),
    c("better", "string", "The better entry, when significant."),
    c("dominates", "string", "The entry that is better and cheaper per resolved item."),
    c("wins_a", "integer", "Discordant items entry_a resolved."),
    c("wins_b", "integer", "Discordant items entry_b resolved."),
    c("entry_key_a", "string", "entry_a's submission folder."),
    c("entry_key_b", "string", "entry_b's submission folder."),
    c("difference", "number", "Score of entry_a minus entry_b over the shared items (share)."),
    c("sd", "number", "Sample standard deviation of the per-item differences."),
    c("kappa", "number", "sd / sqrt(var a + var b): 1 when errors are independent."),
    c(
        "smallest_separable_gap",
        "number",
        "Least gap this pair could separate at 80% power: 2.80 x sd / sqrt(items).",
    ),
)
ITEM_BOARD_CARDS_COLUMNS = (
    c("board", "string", "The leaderboard."),
    c("systems", "integer", "Entries with per-item results (the matrix's rows)."),
    c("items", "integer", "Items with a result from any entry (the matrix's columns)."),
    c("data_type", "string", "binary (pass/fail) or continuous."),
    c("matrix_sha256", "string",
      "SHA-256 of one 'entry_key TAB item TAB score' line per present cell, sorted."),
    c("missing_cells", "integer", "Entry-item cells with no published result."),
    c("groups", "integer", "Repositories the instances come from (the resampled groups)."),
    c("draws", "integer", "Paired bootstrap draws behind the rank sets."),
    c("seed", "integer", "The bootstrap's seed."),
    c("pairs_total", "integer", "Pairs of entries."),
    c("pairs_established", "integer", "Pairs separated by Holm over all pairs at 5%."),
    c("established_share", "number", "pairs_established / pairs_total."),
    c("tiers_height", "integer", "Longest chain of established pairs (a > b > c ...)."),
    c("largest_antichain", "integer", "Most entries no two of which are established apart."),
    c("discordance", "number", "Mean items on which a pair of entries disagree."),
    c("discordance_top_decile", "number", "The same among the top decile of entries."),
    c("resolution_gap_50", "number",
      "Least gap (share of items) a simulated pair is separated at half the time."),
    c("resolution_gap_80", "number", "The same, four times in five (80% power)."),
    c("alpha", "number", "The level of the Holm correction."),
    c("adjacent_pairs", "integer", "Pairs of entries next to each other by score."),
    c("adjacent_undecided", "integer", "Of those, the pairs not established apart."),
    c("top_decile_entries", "integer", "Entries in the top decile by score (at least two)."),
    c("discordance_share", "number", "Mean share of a pair's shared items they disagree on."),
    c("discordance_top_decile_share", "number", "The same among the top decile."),
    c("pair_test", "string", "The paired test of every pair."),
    c("resolution_threshold", "number",
      "p-value at which a simulated pair counts as separated (Holm's next threshold)."),
    c("resolution_replicates", "integer", "Simulated pairs per gap behind the resolution."),
    c("self_checks", "string", "The self-checks the card passed before publishing."),
    c("software", "string", "The software and card version that computed the card."),
    c("command", "string", "What computed the card."),
)  # fmt: skip
ITEM_BOARD_RANK_SETS_COLUMNS = (
    c("board", "string", "The leaderboard."),
    c("entry_key", "string", "The entry's submission folder."),
    c("rank_set_low", "integer", "Best rank in its simultaneous bootstrap rank set (items)."),
    c("rank_set_high", "integer", "Worst rank in that set."),
    c("group_rank_set_low", "integer", "Best rank when whole repositories are resampled."),
    c("group_rank_set_high", "integer", "Worst rank when whole repositories are resampled."),
    c("tier", "integer", "1 + the longest chain of entries established better than it."),
)

# ------------------------------------------------------------------------------ rank rules

KNOWN_GOOD_RANK = RankRule("rank", "known_good_index")
CAPABILITY_RANKS = tuple(RankRule(f"{d.name}_rank", d.name) for d in CAPABILITY_INDICES)
PM_RANK = pm.SETUP_RANK
USECASE_RANK = usecase.GROUP_RANK
USECASE_PARAMETERS: dict[str, Any] = {
    "weights": asdict(usecase.DEFAULT_WEIGHTS),
    "blend_score_share": usecase.BLEND_SCORE_SHARE,
    "min_pairs_for_blend": usecase.MIN_PAIRS_FOR_BLEND,
    "min_runs_for_rank": usecase.MIN_RUNS_FOR_RANK,
}

# ------------------------------------------------------------------------------ tables

RUN = ("source_run_id",)
T = PublishedTable

PUBLISHED: tuple[PublishedTable, ...] = (
    T("known_good_index", "Known Good Index", KNOWN_GOOD_SQL, ("model_id",), "known_good_index",
      KNOWN_GOOD_COLUMNS, ranks=(KNOWN_GOOD_RANK,),
      parameters={"components": list(KNOWN_GOOD_COMPONENTS),
                  "requirements": {d: list(ids) for d, ids in KNOWN_GOOD_REQUIREMENTS}}),
    T("capability_indices", "Capability indices", CAPABILITY_SQL, ("model_id",),
      "capability_indices", CAPABILITY_COLUMNS, ranks=CAPABILITY_RANKS,
      parameters={d.name: {"components": list(d.components), "min_components": d.min_components}
                  for d in CAPABILITY_INDICES}),
    T("market", "Market data: price, speed, latency and openness", MARKET_SQL, ("model_id",),
      "market", MARKET_COLUMNS),
    T("provider_prices", "Prices and telemetry per host", PROVIDER_PRICES_SQL,
      ("model_id", "provider_name", "tag"), "market", PROVIDER_COLUMNS, RUN),
    T("openness_evidence", "Openness: every input weighed and the one that decided",
      OPENNESS_EVIDENCE_SQL, ("model_id", "position"), "market", OPENNESS_EVIDENCE_COLUMNS,
      RUN),
    T("arena_elo", "LMArena ratings", ARENA_SQL, ("leaderboard", "model_key"), "arena",
      ARENA_COLUMNS, RUN),
    T("models", "Model registry", MODELS_SQL, ("model_id",), "registry", MODELS_COLUMNS),
    T("model_aliases", "Every listing of every model, with its source and host",
      MODEL_ALIASES_SQL, ("source", "source_key"), "registry", MODEL_ALIASES_COLUMNS),
    T("source_runs", "Last run of every source", SOURCE_RUNS_SQL, ("source",), "provenance",
      SOURCE_RUNS_COLUMNS, ("run_id", "started_at", "finished_at")),
    T("index_lineage", "Normalised evaluation scores behind the indices", INDEX_LINEAGE_SQL,
      ("model_id", "evaluation_id"), "known_good_index", LINEAGE_COLUMNS,
      ("source_run_id", "publisher")),
    T("epoch_scores", "Epoch AI scores as published, with standard errors and logs",
      EPOCH_SCORES_SQL, ("evaluation_id", "row_key"), "known_good_index",
      EPOCH_SCORES_COLUMNS, ("source_run_id", "source_file")),
    T("price_history", "OpenRouter rates as they changed", PRICE_HISTORY_SQL,
      ("model_id", "host", "tag", "source_run_id"), "market", PRICE_HISTORY_COLUMNS,
      ("observed_at", "source_run_id")),
    T("sources", "Sources, publishers and licences", None, ("name",), "provenance",
      SOURCES_COLUMNS, ("data_run_id", "data_as_of_basis"), build=sources_frame),
    T("pipeline_failures", "Failed pipeline runs",
      "SELECT failed_at, job_name, message, dagster_run_id FROM run_failure_log "
      "ORDER BY failed_at, dagster_run_id", ("dagster_run_id",), "provenance", FAILURE_COLUMNS),
    T("pm_runs", "PM suite: every run and its scores",
      "SELECT t.*, s.model_id FROM pm_runs t LEFT JOIN setup_models s USING (setup_id) "
      "ORDER BY setup_id, task, case_id, repeat, run_id", ("run_id",),
      "pm_suite", PM_RUNS_COLUMNS),
    T("pm_tasks", "PM suite: task scores per setup",
      "SELECT t.*, s.model_id FROM pm_tasks t LEFT JOIN setup_models s USING (setup_id) "
      "ORDER BY setup_id, task", ("setup_id", "task"), "pm_suite",
      PM_TASKS_COLUMNS),
    T("pm_categories", "PM suite: category scores per setup",
      "SELECT t.*, s.model_id FROM pm_categories t LEFT JOIN setup_models s USING (setup_id) "
      "ORDER BY setup_id, category", ("setup_id", "category"),
      "pm_suite", PM_CATEGORIES_COLUMNS),
    T("pm_setups", "PM suite leaderboard",
      "SELECT t.*, s.model_id FROM pm_setups t LEFT JOIN setup_models s USING (setup_id) "
      "ORDER BY rank NULLS LAST, overall DESC, setup_id",
      ("setup_id",), "pm_suite", PM_SETUPS_COLUMNS, ranks=(PM_RANK,)),
    T("pm_drops", "PM suite: drops and their verdicts",
      "SELECT t.*, s.model_id FROM pm_drops t LEFT JOIN setup_models s USING (setup_id) "
      "ORDER BY drop_date, setup_id", ("setup_id",), "pm_suite",
      PM_DROPS_COLUMNS, ("drop_date",)),
    T("usecase_runs", "UseCaseRank: every live run",
      "SELECT * FROM usecase_runs ORDER BY use_case, run_id", ("run_id",), "usecase_rank",
      USECASE_RUNS_COLUMNS, ("published_at",), parameters=USECASE_PARAMETERS),
    T("usecase_groups", "UseCaseRank leaderboard per use case",
      "SELECT * FROM usecase_groups ORDER BY use_case, simulated, rank NULLS LAST, \"group\"",
      ("use_case", "group"), "usecase_rank", USECASE_GROUPS_COLUMNS, ranks=(USECASE_RANK,),
      parameters=USECASE_PARAMETERS),
    T("navigator_models", "Navigator Index v2",
      f"SELECT t.*, s.model_id FROM navigator_models t LEFT JOIN {LABEL_MODELS} s "
      "ON s.label = t.model "
      "ORDER BY index DESC NULLS LAST, model", ("model",),
      "navigator_index", NAVIGATOR_MODELS_COLUMNS,
      parameters={"categories": list(NAVIGATOR_CATEGORIES)}),
    T("navigator_pairs", "Navigator Index v2: paired tests",
      "SELECT * FROM navigator_pairs ORDER BY model_a, model_b", ("model_a", "model_b"),
      "navigator_index", NAVIGATOR_PAIRS_COLUMNS),
    T("navigator_resolution", "Navigator Index v2: the gap its own data separates",
      "SELECT * FROM navigator_resolution ORDER BY models", ("models", "tasks"),
      "navigator_index", NAVIGATOR_RESOLUTION_COLUMNS),
    T("navigator_v1_fit", "Navigator classic v1: fit for a task, volume, budget",
      f"SELECT t.*, s.model_id FROM navigator_v1_fit t LEFT JOIN {LABEL_MODELS} s "
      "ON s.label = t.model "
      "ORDER BY task, monthly_volume, rank",
      ("task", "monthly_volume", "model"), "navigator_index", NAVIGATOR_FIT_COLUMNS),
    T("navigator_v1_results", "Navigator classic v1: every scored call",
      "SELECT * FROM navigator_v1_results ORDER BY task, model, call, run_id", ("run_id",),
      "navigator_v1", NAVIGATOR_V1_RESULTS_COLUMNS),
    T("navigator_v1_tasks", "Navigator classic v1: the task library",
      "SELECT * FROM navigator_v1_tasks ORDER BY task", ("task",), "navigator_v1",
      NAVIGATOR_V1_TASKS_COLUMNS),
    T("item_boards", "Item boards: entries ranked on their per-item results",
      "SELECT b.*, e.logs FROM item_boards b LEFT JOIN swebench_entries e "
      "ON e.leaderboard = b.board AND e.folder = b.entry_key "
      "ORDER BY b.board, b.items IS NULL, b.score DESC, b.published_percent DESC NULLS LAST, "
      "b.entry, b.entry_key", ("board", "entry_key"),
      "item_boards", ITEM_BOARDS_COLUMNS),
    T("item_board_pairs", "Item boards: exact paired tests over shared items",
      "SELECT * FROM item_board_pairs", ("board", "entry_key_a", "entry_key_b"),
      "item_boards", ITEM_BOARD_PAIRS_COLUMNS, sort=("board", "entry_key_a", "entry_key_b")),
    T("item_board_cards", "Item boards: the reporting card of each board",
      "SELECT * FROM item_board_cards ORDER BY board", ("board",), "item_boards",
      ITEM_BOARD_CARDS_COLUMNS),
    T("item_board_rank_sets", "Item boards: bootstrap rank sets over items and repositories",
      "SELECT * FROM item_board_rank_sets ORDER BY board, rank_set_low, entry_key",
      ("board", "entry_key"), "item_boards", ITEM_BOARD_RANK_SETS_COLUMNS),
    *RECEIPT_TABLES,
    TASKS_TABLE,
    *PM_CHECKS_PUBLISHED,
)  # fmt: skip
PUBLISHED_BY_NAME = {table.name: table for table in PUBLISHED}


def schema_document(tables: tuple[PublishedTable, ...] = PUBLISHED) -> dict[str, Any]:
    """`schema.json`: every published table's declaration and the evaluations' titles."""
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluations": [
            {"id": spec.id, "title": spec.title, "direction": spec.direction}
            for spec in evaluations()
        ],
        "tables": [table.document() for table in tables],
    }
