-- The task bank and setups as the pipeline last loaded them, dated model rates, and runs:
-- executed by the pipeline (PM suite, Navigator) or submitted from elsewhere (use cases).

-- Every case version ever loaded (a case edit adds a version; results stay attached to the
-- version they ran against). The text of private cases is never stored here.
CREATE TABLE task_cases (
    suite        VARCHAR NOT NULL,
    case_id      VARCHAR NOT NULL,
    version      VARCHAR NOT NULL,
    task         VARCHAR NOT NULL,
    title        VARCHAR NOT NULL,
    category     VARCHAR NOT NULL,
    provenance   VARCHAR NOT NULL,
    private      BOOLEAN NOT NULL,
    noisy        BOOLEAN NOT NULL,
    core         BOOLEAN NOT NULL,
    prototype    BOOLEAN NOT NULL,
    inputs       INTEGER NOT NULL,
    current      BOOLEAN NOT NULL,           -- the version in tasks/ now
    first_loaded TIMESTAMP NOT NULL
);

CREATE TABLE setups (
    setup_id          VARCHAR NOT NULL,
    label             VARCHAR NOT NULL,
    model_record      VARCHAR NOT NULL,
    api_id            VARCHAR NOT NULL,
    company           VARCHAR NOT NULL,
    reasoning_effort  VARCHAR,
    temperature       DOUBLE,
    context_limit     BIGINT NOT NULL,
    pricing_date      DATE,
    local             BOOLEAN NOT NULL,
    base_url          VARCHAR,
    harness           VARCHAR NOT NULL,
    environment       VARCHAR NOT NULL,
    executable        BOOLEAN NOT NULL,
    current           BOOLEAN NOT NULL,
    first_loaded      TIMESTAMP NOT NULL
);

-- Dated rates (USD per million tokens) by exact API id. One row per accepted OpenRouter
-- ingestion (effective from the day it was taken) plus the hand-edited setups/pricing.toml,
-- which wins over an ingestion on the same day.
CREATE TABLE model_rates (
    api_id                VARCHAR NOT NULL,
    effective_date        DATE NOT NULL,
    origin                VARCHAR NOT NULL,  -- openrouter:<source run id> | pricing.toml
    taken_at              TIMESTAMP NOT NULL, -- the ingestion's finish; the file's load
    input_usd_per_1m      DECIMAL(24, 12),
    output_usd_per_1m     DECIMAL(24, 12),
    cached_input_usd_per_1m DECIMAL(24, 12),
    cache_write_usd_per_1m  DECIMAL(24, 12),
    long_context_threshold  BIGINT,
    long_input_usd_per_1m   DECIMAL(24, 12),
    long_output_usd_per_1m  DECIMAL(24, 12),
    long_cached_input_usd_per_1m DECIMAL(24, 12),
    long_cache_write_usd_per_1m  DECIMAL(24, 12),
    local                 BOOLEAN NOT NULL
);

-- One executed run: a setup answering one prompt of one case version (one repeat).
-- Written once per run id; a re-materialisation replaces the row with an identical one
-- (responses come from the request cache), so nothing is ever counted twice.
CREATE TABLE model_runs (
    run_id               VARCHAR NOT NULL,
    partition_key        VARCHAR NOT NULL,
    setup_id             VARCHAR NOT NULL,
    suite                VARCHAR NOT NULL,
    case_id              VARCHAR NOT NULL,
    case_version         VARCHAR NOT NULL,
    input_id             VARCHAR NOT NULL,
    repeat               INTEGER NOT NULL,
    run_date             DATE NOT NULL,
    request_hash         VARCHAR NOT NULL,
    output               VARCHAR NOT NULL,
    finish_reason        VARCHAR,
    max_tokens           INTEGER,
    prompt_tokens        BIGINT,
    completion_tokens    BIGINT,
    cached_tokens        BIGINT,
    cache_write_tokens   BIGINT,
    reasoning_tokens     BIGINT,
    cost_usd             DECIMAL(38, 18),    -- NULL when it cannot be known (see warnings)
    cost_warnings        VARCHAR NOT NULL,   -- comma-separated, '' for none
    wall_seconds         DOUBLE NOT NULL,
    ttft_seconds         DOUBLE,
    retries              INTEGER NOT NULL,
    provider             VARCHAR NOT NULL,
    simulated            BOOLEAN NOT NULL,
    evidence_sha256      VARCHAR NOT NULL,   -- of the stored response entry (the evidence)
    recorded_at          TIMESTAMP NOT NULL
);

-- Work items that failed for good on their last attempt (cleared when they succeed).
CREATE TABLE run_failures (
    run_id         VARCHAR NOT NULL,
    partition_key  VARCHAR NOT NULL,
    error          VARCHAR NOT NULL,
    failed_at      TIMESTAMP NOT NULL
);

-- Every file seen in the submissions inbox, accepted or rejected, by content hash.
CREATE TABLE submission_files (
    sha256        VARCHAR NOT NULL,
    file_name     VARCHAR NOT NULL,
    status        VARCHAR NOT NULL,          -- accepted | rejected
    field         VARCHAR,
    reason        VARCHAR,
    run_id        VARCHAR,
    received_at   TIMESTAMP NOT NULL
);

-- One submitted use-case run (seed 001), costed from our own dated rates.
CREATE TABLE submitted_runs (
    run_id               VARCHAR NOT NULL,   -- sub-<16 hex of the file's sha256>
    file_name            VARCHAR NOT NULL,
    use_case             VARCHAR NOT NULL,
    use_case_version     VARCHAR NOT NULL,
    model_name           VARCHAR NOT NULL,
    model_settings       VARCHAR NOT NULL,   -- JSON object
    run_group            VARCHAR NOT NULL,   -- model name + settings
    harness              VARCHAR NOT NULL,
    harness_version      VARCHAR,
    started_at           TIMESTAMP NOT NULL, -- UTC
    run_date             DATE NOT NULL,
    prompt_tokens        BIGINT NOT NULL,
    completion_tokens    BIGINT NOT NULL,
    cached_tokens        BIGINT NOT NULL,
    cache_write_tokens   BIGINT NOT NULL,
    reasoning_tokens     BIGINT NOT NULL,
    requests_known       BOOLEAN NOT NULL,   -- per-request counts were submitted
    claimed_cost_usd     DECIMAL(38, 18),
    cost_usd             DECIMAL(38, 18),
    cost_warnings        VARCHAR NOT NULL,
    wall_time_seconds    DOUBLE NOT NULL,
    step_ins             INTEGER NOT NULL,
    turns                INTEGER NOT NULL,
    retries              INTEGER NOT NULL,
    first_try            BOOLEAN NOT NULL,
    autonomy             VARCHAR,
    outcome              VARCHAR NOT NULL,   -- success | partial | fail
    criteria             VARCHAR NOT NULL,   -- JSON object: criterion -> outcome
    evidence_log         VARCHAR NOT NULL,
    evidence_sha256      VARCHAR NOT NULL,
    evidence_matches     BOOLEAN NOT NULL,
    output               VARCHAR NOT NULL,
    reproduces           VARCHAR,
    rerun_of             VARCHAR,
    submitter            VARCHAR,
    received_at          TIMESTAMP NOT NULL
);
