-- SWE-bench leaderboards: every entry as published, and per-item results where published.
CREATE TABLE swebench_entries (
    leaderboard        VARCHAR NOT NULL,    -- bash-only, Verified, Lite, Test, Multimodal
    folder             VARCHAR NOT NULL,    -- the submission's folder: unique in its leaderboard
    entry              VARCHAR NOT NULL,    -- the publisher's entry name, verbatim
    date               DATE,
    resolved_percent   DOUBLE NOT NULL,     -- published percent resolved, 0-100
    cost_usd           DECIMAL(38, 20),
    instance_cost_usd  DECIMAL(38, 20),
    instance_calls     DOUBLE,
    checked            BOOLEAN,             -- from a boolean or the leading word of a string
    checked_as_sent    VARCHAR,
    os_model           BOOLEAN,
    os_system          BOOLEAN,
    tags               VARCHAR,             -- JSON list, as published
    model_tags         VARCHAR,             -- JSON list of the ids in "Model: ..." tags
    site               VARCHAR,
    per_item_results   BIGINT,              -- instances in per_instance_details (0: none)
    source_file        VARCHAR NOT NULL,
    source_run_id      VARCHAR NOT NULL
);

CREATE TABLE swebench_item_results (
    leaderboard     VARCHAR NOT NULL,
    folder          VARCHAR NOT NULL,
    entry           VARCHAR NOT NULL,
    instance_id     VARCHAR NOT NULL,
    resolved        BOOLEAN NOT NULL,
    cost_usd        DECIMAL(38, 20),
    api_calls       BIGINT,
    source_run_id   VARCHAR NOT NULL
);
