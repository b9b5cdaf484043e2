-- Ingestion bookkeeping and the live tables of every outside source.
-- Live tables carry source_run_id on every row: the accepted run the value came from.

CREATE TABLE source_runs (
    source            VARCHAR NOT NULL,
    run_id            VARCHAR PRIMARY KEY,
    mode              VARCHAR NOT NULL,      -- recorded | live
    started_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP NOT NULL,
    status            VARCHAR NOT NULL,      -- accepted | rejected
    rows_valid        BIGINT NOT NULL,
    rows_quarantined  BIGINT NOT NULL,
    previous_rows     BIGINT,                -- rows_valid of the last accepted run, if any
    reason            VARCHAR,
    content_sha256    VARCHAR
);

CREATE TABLE raw_files (
    run_id       VARCHAR NOT NULL,
    source       VARCHAR NOT NULL,
    file_name    VARCHAR NOT NULL,
    sha256       VARCHAR NOT NULL,
    bytes        BIGINT NOT NULL,
    stored_path  VARCHAR NOT NULL
);

CREATE TABLE quarantine (
    run_id          VARCHAR NOT NULL,
    source          VARCHAR NOT NULL,
    table_name      VARCHAR NOT NULL,
    file_name       VARCHAR,
    record_number   BIGINT,
    record_key      VARCHAR,
    field           VARCHAR,
    reason          VARCHAR NOT NULL,
    record          VARCHAR,               -- the record as staged, as JSON
    quarantined_at  TIMESTAMP NOT NULL
);

CREATE TABLE openrouter_models (
    model_id                      VARCHAR NOT NULL,
    canonical_slug                VARCHAR,
    hugging_face_id               VARCHAR,
    name                          VARCHAR NOT NULL,
    created_at                    TIMESTAMP,
    context_length                BIGINT,
    modality                      VARCHAR,
    input_modalities              VARCHAR,
    output_modalities             VARCHAR,
    tokenizer                     VARCHAR,
    prompt_usd_per_m              DECIMAL(24, 12),
    completion_usd_per_m          DECIMAL(24, 12),
    input_cache_read_usd_per_m    DECIMAL(24, 12),
    input_cache_write_usd_per_m   DECIMAL(24, 12),
    variable_pricing              BOOLEAN NOT NULL,
    pricing_overrides             VARCHAR,
    supported_efforts             VARCHAR,
    alias_target                  VARCHAR,
    knowledge_cutoff              VARCHAR,
    expiration_date               VARCHAR,
    source_run_id                 VARCHAR NOT NULL
);

CREATE TABLE openrouter_endpoints (
    model_id                      VARCHAR NOT NULL,
    tag                           VARCHAR NOT NULL,
    provider_name                 VARCHAR NOT NULL,
    endpoint_name                 VARCHAR,
    context_length                BIGINT,
    max_completion_tokens         BIGINT,
    quantization                  VARCHAR,
    prompt_usd_per_m              DECIMAL(24, 12),
    completion_usd_per_m          DECIMAL(24, 12),
    input_cache_read_usd_per_m    DECIMAL(24, 12),
    discount                      DOUBLE,
    status                        INTEGER,
    uptime_last_30m               DOUBLE,
    latency_p50_ms                DOUBLE,    -- time to first token, as OpenRouter publishes it
    throughput_p50_tps            DOUBLE,    -- output tokens per second
    source_run_id                 VARCHAR NOT NULL
);

CREATE TABLE modelsdev_models (
    provider_id             VARCHAR NOT NULL,
    model_id                VARCHAR NOT NULL,
    provider_name           VARCHAR,
    name                    VARCHAR NOT NULL,
    family                  VARCHAR,
    release_date            VARCHAR,          -- YYYY-MM-DD or YYYY-MM, as published
    open_weights            BOOLEAN,
    reasoning               BOOLEAN,
    tool_call               BOOLEAN,
    context_limit           BIGINT,
    output_limit            BIGINT,
    input_usd_per_m         DECIMAL(24, 12),
    output_usd_per_m        DECIMAL(24, 12),
    cache_read_usd_per_m    DECIMAL(24, 12),
    cache_write_usd_per_m   DECIMAL(24, 12),
    status                  VARCHAR,
    source_run_id           VARCHAR NOT NULL
);

CREATE TABLE arena_ratings (
    leaderboard      VARCHAR NOT NULL,    -- text, text_style_control, vision, ..., text_public
    category         VARCHAR NOT NULL,
    model_key        VARCHAR NOT NULL,
    rating           DOUBLE NOT NULL,
    rating_low       DOUBLE,              -- 95% interval
    rating_high      DOUBLE,
    votes            BIGINT,
    rank             INTEGER,
    rank_best        INTEGER,
    rank_worst       INTEGER,
    preliminary      BOOLEAN,
    organization     VARCHAR,
    licence          VARCHAR,
    published_on     DATE,
    source_file      VARCHAR NOT NULL,
    source_run_id    VARCHAR NOT NULL
);

CREATE TABLE arena_models (
    model_key          VARCHAR NOT NULL,
    name               VARCHAR,
    organization       VARCHAR,
    licence            VARCHAR,
    input_usd_per_m    DECIMAL(24, 12),
    output_usd_per_m   DECIMAL(24, 12),
    hidden             BOOLEAN,
    source_run_id      VARCHAR NOT NULL
);

CREATE TABLE evaluation_rows (
    evaluation_id   VARCHAR NOT NULL,
    row_key         VARCHAR NOT NULL,
    model_version   VARCHAR NOT NULL,
    agent           VARCHAR,               -- scaffold or agent, where the publisher names one
    organization    VARCHAR,
    release_date    VARCHAR,
    run_date        VARCHAR,
    score           DOUBLE NOT NULL,       -- percent, 0-100
    stderr          DOUBLE,                -- percent points
    source_file     VARCHAR NOT NULL,
    source_run_id   VARCHAR NOT NULL
);

CREATE TABLE epoch_models (
    model_version   VARCHAR NOT NULL,
    display_name    VARCHAR,
    model_name      VARCHAR,
    organization    VARCHAR,
    accessibility   VARCHAR,
    release_date    VARCHAR,
    eci_score       DOUBLE,
    source_run_id   VARCHAR NOT NULL
);

-- Valid rows per live table in each run, for the per-table sanity check.
CREATE TABLE source_run_tables (
    run_id      VARCHAR NOT NULL,
    table_name  VARCHAR NOT NULL,
    rows_valid  BIGINT NOT NULL
);
