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

-- Item boards (`scores/item_boards.py`), recomputed from the two tables above on every run;
-- columns in published order (`release/published.py` declares what each one means).
CREATE TABLE item_boards (
    board                 VARCHAR NOT NULL,
    entry                 VARCHAR NOT NULL,
    model_id              VARCHAR,
    items                 BIGINT,
    resolved              BIGINT,
    score                 DOUBLE,
    ci_low                DOUBLE,
    ci_high               DOUBLE,
    rank_best             BIGINT,
    rank_worst            BIGINT,
    tied                  BOOLEAN,
    cost_usd              VARCHAR,      -- exact decimal, as text
    cost_per_success_usd  VARCHAR,
    published_percent     DOUBLE,
    entry_key             VARCHAR NOT NULL,
    dominated_by          VARCHAR,
    PRIMARY KEY (board, entry_key)
);

CREATE TABLE item_board_pairs (
    board          VARCHAR NOT NULL,
    entry_a        VARCHAR NOT NULL,
    entry_b        VARCHAR NOT NULL,
    items          BIGINT NOT NULL,
    discordant     BIGINT NOT NULL,
    p_value        DOUBLE NOT NULL,
    significant    BOOLEAN NOT NULL,
    better         VARCHAR,
    dominates      VARCHAR,
    wins_a         BIGINT NOT NULL,
    wins_b         BIGINT NOT NULL,
    entry_key_a    VARCHAR NOT NULL,
    entry_key_b    VARCHAR NOT NULL,
    PRIMARY KEY (board, entry_key_a, entry_key_b)
);
