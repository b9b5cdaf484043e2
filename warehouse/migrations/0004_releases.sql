-- Dataset releases and the price history they publish.

-- One row per release folder under build/releases/ (the folder itself is the release).
CREATE TABLE releases (
    release_id            VARCHAR PRIMARY KEY,
    created_at            TIMESTAMP NOT NULL,      -- UTC
    previous_release_id   VARCHAR,
    tables                VARCHAR NOT NULL,        -- JSON object: table name -> rows
    rows_total            BIGINT NOT NULL,
    path                  VARCHAR NOT NULL
);

-- Every OpenRouter rate of every accepted run, dated by the run's finish time. Appended once
-- per source run (never updated); the published `price_history` keeps only the changes.
CREATE TABLE price_history (
    observed_at         TIMESTAMP NOT NULL,      -- the source run's finished_at
    source_run_id       VARCHAR NOT NULL,
    model_id            VARCHAR NOT NULL,
    host                VARCHAR,                 -- NULL: the model's own (canonical) rate
    tag                 VARCHAR,                 -- the host's endpoint tag; NULL with host
    input_usd_per_1m    DECIMAL(24, 12),
    output_usd_per_1m   DECIMAL(24, 12)
);
