"""Price history: the dated OpenRouter rates of every accepted ingestion, kept in the warehouse.

The live tables hold only the last accepted run of each source, so before they are replaced
again the rates they carry are appended to `price_history`, dated by their data (below):
only the rates that differ from the last one recorded for the same model, host and tag (or
are the first), so a run that changes no price adds no row. A run already looked at is never
recorded twice.

A rate is dated by its data, not by the fetch: `observed_at` is the run's `data_as_of`, the
newest date its payload states. A payload stating no date adds nothing to the history (its
rates stay on the market pages): it cannot be placed in time.
"""

from __future__ import annotations

import duckdb

from bench_pipeline.core.warehouse import transaction

# The canonical rate: the model's own OpenRouter listing (as `market` reads it); host NULL.
CANONICAL_SQL = """
INSERT INTO price_history
SELECT r.data_as_of, o.source_run_id, a.model_id, NULL, NULL,
       CASE WHEN o.variable_pricing THEN NULL ELSE o.prompt_usd_per_m END,
       CASE WHEN o.variable_pricing THEN NULL ELSE o.completion_usd_per_m END
FROM model_aliases a
JOIN openrouter_models o ON o.model_id = a.source_key
JOIN source_runs r ON r.run_id = o.source_run_id AND r.status = 'accepted'
  AND r.data_as_of IS NOT NULL
WHERE a.source = 'openrouter_models' AND a.source_key = a.model_id
  AND o.source_run_id NOT IN (SELECT source_run_id FROM price_history)
"""

# Each host's rate, matched to registry models as `provider_prices` matches them.
HOSTS_SQL = """
INSERT INTO price_history
SELECT DISTINCT r.data_as_of, e.source_run_id, a.model_id, e.provider_name, e.tag,
       e.prompt_usd_per_m, e.completion_usd_per_m
FROM openrouter_endpoints e
JOIN openrouter_models o ON e.model_id IN (o.model_id, o.canonical_slug)
JOIN model_aliases a ON a.source = 'openrouter_models' AND a.source_key = o.model_id
JOIN source_runs r ON r.run_id = e.source_run_id AND r.status = 'accepted'
  AND r.data_as_of IS NOT NULL
WHERE e.source_run_id NOT IN (SELECT source_run_id FROM price_history)
"""


_COLUMNS = "observed_at, source_run_id, model_id, host, tag, input_usd_per_1m, output_usd_per_1m"
# The last rate recorded for each model, host and tag.
_LATEST = """
SELECT model_id, host, tag,
       arg_max(input_usd_per_1m, (observed_at, source_run_id)) AS input_usd_per_1m,
       arg_max(output_usd_per_1m, (observed_at, source_run_id)) AS output_usd_per_1m
FROM price_history GROUP BY ALL
"""


def _changes_only(insert: str) -> str:
    """`insert` (an `INSERT INTO price_history SELECT ...`) keeping only rows whose rate
    differs from the last recorded one for their model, host and tag."""
    select = insert.split("INSERT INTO price_history", 1)[1]
    return (
        f"INSERT INTO price_history SELECT n.* FROM ({select}) AS n({_COLUMNS}) "
        f"LEFT JOIN ({_LATEST}) AS l ON l.model_id = n.model_id "
        "AND l.host IS NOT DISTINCT FROM n.host AND l.tag IS NOT DISTINCT FROM n.tag "
        "WHERE l.model_id IS NULL "
        "OR l.input_usd_per_1m IS DISTINCT FROM n.input_usd_per_1m "
        "OR l.output_usd_per_1m IS DISTINCT FROM n.output_usd_per_1m"
    )


def record_price_history(conn: duckdb.DuckDBPyConnection) -> int:
    """Append the changed rates of the live OpenRouter runs not yet looked at; return rows
    appended."""
    before = conn.execute("SELECT count(*) FROM price_history").fetchall()[0][0]
    with transaction(conn):
        conn.execute(_changes_only(CANONICAL_SQL))
        conn.execute(_changes_only(HOSTS_SQL))
    return conn.execute("SELECT count(*) FROM price_history").fetchall()[0][0] - before
