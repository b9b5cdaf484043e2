-- Indices and market data, computed from the live tables only (see METHODOLOGY section 2).

-- Every computation of the indices, with the source runs it read: a past value is explained
-- by the run ids recorded beside it, because the indices are relative to the tracked models.
CREATE TABLE index_computations (
    computation_id   VARCHAR NOT NULL,
    computed_at      TIMESTAMP NOT NULL,
    source_run_ids   VARCHAR NOT NULL,       -- JSON array
    inputs_sha256    VARCHAR NOT NULL,
    models_indexed   INTEGER NOT NULL
);

CREATE TABLE evaluation_normalised (
    model_id        VARCHAR NOT NULL,
    evaluation_id   VARCHAR NOT NULL,
    score           DOUBLE NOT NULL,
    normalised      DOUBLE NOT NULL,
    source_run_id   VARCHAR NOT NULL,
    publisher       VARCHAR NOT NULL
);

CREATE TABLE known_good_index (
    model_id             VARCHAR NOT NULL,
    model_name           VARCHAR NOT NULL,
    known_good_index     DOUBLE,
    index_components     INTEGER NOT NULL,
    eligible             BOOLEAN NOT NULL,
    gpqa_diamond         DOUBLE,
    math_aime            DOUBLE,
    swe_bench_verified   DOUBLE,
    livebench            DOUBLE,
    terminal_bench       DOUBLE,
    hle                  DOUBLE,
    computation_id       VARCHAR NOT NULL
);

CREATE TABLE capability_indices (
    model_id            VARCHAR NOT NULL,
    model_name          VARCHAR NOT NULL,
    coding_index        DOUBLE,
    agentic_index       DOUBLE,
    mathematics_index   DOUBLE,
    science_index       DOUBLE,
    reasoning_index     DOUBLE,
    computation_id      VARCHAR NOT NULL
);

-- Past values, one row per computation and model, so that "why did this move?" has an answer.
CREATE TABLE known_good_index_history (
    computation_id     VARCHAR NOT NULL,
    model_id           VARCHAR NOT NULL,
    known_good_index   DOUBLE,
    index_components   INTEGER NOT NULL
);

CREATE TABLE market (
    model_id                    VARCHAR NOT NULL,
    model_name                  VARCHAR NOT NULL,
    input_usd_per_1m            DECIMAL(24, 12),
    output_usd_per_1m           DECIMAL(24, 12),
    blended_price_usd_per_1m    DECIMAL(24, 12),
    price_flag                  VARCHAR,          -- models.dev disagrees: flagged, never resolved
    output_speed_tps            DOUBLE,
    latency_ttft_s              DOUBLE,
    providers_tracked           INTEGER NOT NULL,
    open_weights                BOOLEAN,
    licence                     VARCHAR,
    licence_class               VARCHAR,
    has_repository              BOOLEAN NOT NULL,
    openness                    INTEGER,
    price_source_run_id         VARCHAR,
    telemetry_source_run_id     VARCHAR
);

CREATE TABLE provider_prices (
    model_id                    VARCHAR NOT NULL,
    provider_name               VARCHAR NOT NULL,
    tag                         VARCHAR NOT NULL,
    quantization                VARCHAR,
    input_usd_per_1m            DECIMAL(24, 12),
    output_usd_per_1m           DECIMAL(24, 12),
    blended_price_usd_per_1m    DECIMAL(24, 12),
    uptime_last_30m             DOUBLE,
    latency_ttft_s              DOUBLE,
    output_speed_tps            DOUBLE,
    source_run_id               VARCHAR NOT NULL
);
