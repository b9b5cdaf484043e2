-- Navigator judge splits (seed 002): a person's decision on a pass/fail disagreement between
-- the two judges, recorded as its own row and never edited. Until a split has one, its run
-- is pending: it counts nowhere, and `navigator_models.pending_runs` says how many wait.
CREATE TABLE split_decisions (
    decision_id   VARCHAR NOT NULL,          -- hash of run, input and criterion: one each
    run_id        VARCHAR NOT NULL,
    input_id      VARCHAR NOT NULL,
    criterion     VARCHAR NOT NULL,          -- the criterion the judges split on
    outcome       VARCHAR NOT NULL,          -- pass | partial | fail, the person's call
    decided_by    VARCHAR NOT NULL,
    reason        VARCHAR NOT NULL,
    judges        VARCHAR NOT NULL,          -- what each judge said, as the person saw it
    decided_at    TIMESTAMP NOT NULL
);

-- Appended, so the published column order stays as declared in release/published.py.
ALTER TABLE navigator_models ADD COLUMN pending_runs BIGINT;

-- Navigator classic v1 (seed 002): comparisons over the v1 library (tasks/navigator_v1.toml),
-- their runs and their scores. Only ever inserted. A requested comparison (`bench compare`)
-- runs on the requester's own key: the key is never stored, here or anywhere.
CREATE TABLE v1_comparisons (
    comparison_id       VARCHAR NOT NULL,
    origin              VARCHAR NOT NULL,    -- demo | compare
    task_id             VARCHAR,             -- the requested task (NULL: the whole library)
    monthly_volume      BIGINT,
    monthly_budget_usd  DECIMAL(38, 18),
    models              VARCHAR NOT NULL,    -- JSON array of api ids
    key_source          VARCHAR NOT NULL,    -- none | prompt | file (never the key itself)
    endpoint            VARCHAR,             -- the API root the calls went to
    receipts_dir        VARCHAR,
    started_at          TIMESTAMP NOT NULL
);

CREATE TABLE v1_runs (
    run_id             VARCHAR NOT NULL,     -- hash of comparison, model, task digest, call
    comparison_id      VARCHAR NOT NULL,
    model              VARCHAR NOT NULL,     -- the label shown (a setup label or the api id)
    api_id             VARCHAR NOT NULL,
    task_id            VARCHAR NOT NULL,
    task_version       VARCHAR NOT NULL,
    task_digest        VARCHAR NOT NULL,     -- prompt, check and guidance as run
    tier               INTEGER NOT NULL,
    call               INTEGER NOT NULL,
    request_hash       VARCHAR NOT NULL,
    output             VARCHAR NOT NULL,
    finish_reason      VARCHAR,
    max_tokens         INTEGER,
    prompt_tokens      BIGINT,
    completion_tokens  BIGINT,
    cost_usd           DECIMAL(38, 18),      -- NULL when it cannot be priced
    provider           VARCHAR NOT NULL,
    simulated          BOOLEAN NOT NULL,
    recorded_at        TIMESTAMP NOT NULL
);

CREATE TABLE v1_scores (
    score_id             VARCHAR NOT NULL,
    run_id               VARCHAR NOT NULL,
    tier                 INTEGER NOT NULL,
    grader               VARCHAR NOT NULL,   -- the judge's api id (tier 2) or the script
    rubric_version       VARCHAR,            -- tier 2: recorded on every judge score
    methodology_version  VARCHAR NOT NULL,
    stored_overall       DOUBLE,             -- as the grader gave it, never rewritten
    dimensions           VARCHAR NOT NULL,   -- JSON object, dimension -> 0-5
    reason               VARCHAR,
    judge_cost_usd       DECIMAL(38, 18),    -- NULL for tier 1 or an unpriced judge
    simulated            BOOLEAN NOT NULL,
    graded_at            TIMESTAMP NOT NULL
);

-- The published v1 tables (scores/navigator_v1_tables.py), replaced on every scoring like the
-- other boards' tables. navigator_v1_fit keeps its columns; it is now computed from v1 runs.
CREATE TABLE navigator_v1_results (
    run_id                   VARCHAR NOT NULL PRIMARY KEY,
    comparison_id            VARCHAR NOT NULL,
    model                    VARCHAR NOT NULL,
    task                     VARCHAR NOT NULL,
    tier                     BIGINT,
    call                     BIGINT,
    stored_overall           DOUBLE,
    displayed_overall        DOUBLE,
    label                    VARCHAR,        -- clean | mixed | incomplete
    needs_review             BOOLEAN,
    dimensions               VARCHAR,        -- JSON object, dimension -> stored 0-5
    grader                   VARCHAR,
    rubric_version           VARCHAR,
    methodology_version      VARCHAR,
    output_incomplete        BOOLEAN,
    completeness_confidence  VARCHAR,
    completeness_reason      VARCHAR,
    candidate_cost_usd       VARCHAR,        -- exact decimal as text
    judge_cost_usd           VARCHAR,
    total_cost_usd           VARCHAR,
    simulated                BOOLEAN
);

CREATE TABLE navigator_v1_tasks (
    task      VARCHAR NOT NULL PRIMARY KEY,
    title     VARCHAR,
    category  VARCHAR,
    tier      BIGINT,
    version   VARCHAR
);
