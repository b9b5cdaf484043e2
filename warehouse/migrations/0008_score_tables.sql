-- The three boards' tables (PM suite, UseCaseRank, Navigator Index), created here like every
-- other table instead of from the score modules' data frames. `scores/load.store_frames`
-- replaces their content on every run (they are recomputed from the stored runs, grades and
-- reviews each time, never edited), so dropping a copy made the old way loses nothing.
-- Columns are in published order (`release/published.py` declares what each one means);
-- `simulated` is true when a simulated provider made a run behind the row.
DROP TABLE IF EXISTS pm_runs;
DROP TABLE IF EXISTS pm_tasks;
DROP TABLE IF EXISTS pm_categories;
DROP TABLE IF EXISTS pm_setups;
DROP TABLE IF EXISTS pm_drops;
DROP TABLE IF EXISTS usecase_runs;
DROP TABLE IF EXISTS usecase_groups;
DROP TABLE IF EXISTS navigator_models;
DROP TABLE IF EXISTS navigator_pairs;
DROP TABLE IF EXISTS navigator_v1_fit;

CREATE TABLE pm_runs (
    run_id            VARCHAR NOT NULL PRIMARY KEY,
    setup_id          VARCHAR NOT NULL,
    task              VARCHAR NOT NULL,
    case_id           VARCHAR NOT NULL,
    category          VARCHAR,
    core              BOOLEAN,
    prototype         BOOLEAN,
    "repeat"          BIGINT,
    status            VARCHAR,
    published         BOOLEAN,
    dm_score          DOUBLE,
    judge_score       DOUBLE,
    review_score      DOUBLE,
    pm_score          DOUBLE,
    critical_failure  BOOLEAN,
    capped            BOOLEAN,
    simulated         BOOLEAN
);

CREATE TABLE pm_tasks (
    setup_id       VARCHAR NOT NULL,
    task           VARCHAR NOT NULL,
    category       VARCHAR,
    core           BOOLEAN,
    runs           BIGINT,
    score          DOUBLE,
    repeat_spread  DOUBLE,
    simulated      BOOLEAN,
    PRIMARY KEY (setup_id, task)
);

CREATE TABLE pm_categories (
    setup_id   VARCHAR NOT NULL,
    category   VARCHAR NOT NULL,
    tasks      BIGINT,
    score      DOUBLE,
    simulated  BOOLEAN,
    PRIMARY KEY (setup_id, category)
);

CREATE TABLE pm_setups (
    setup_id            VARCHAR NOT NULL PRIMARY KEY,
    overall             DOUBLE,
    margin95            DOUBLE,
    runs                BIGINT,
    tasks               BIGINT,
    missing_core_tasks  VARCHAR,     -- comma-separated
    status              VARCHAR,     -- ranked | provisional
    rank                BIGINT,      -- competition rank among ranked setups (1, 1, 3)
    setup               VARCHAR,     -- the setup's label
    simulated           BOOLEAN
);

CREATE TABLE pm_drops (
    setup_id             VARCHAR NOT NULL PRIMARY KEY,
    drop_date            TIMESTAMP,
    previous_setup_id    VARCHAR,
    verdict_vs_previous  VARCHAR,
    leader_setup_id      VARCHAR,
    verdict_vs_leader    VARCHAR,
    simulated            BOOLEAN
);

CREATE TABLE usecase_runs (
    run_id                  VARCHAR NOT NULL PRIMARY KEY,
    use_case                VARCHAR NOT NULL,
    "group"                 VARCHAR NOT NULL,
    model                   VARCHAR,
    settings                VARCHAR,
    outcome                 VARCHAR,
    score                   DOUBLE,
    metric_outcome          DOUBLE,
    metric_cost_efficiency  DOUBLE,
    metric_speed            DOUBLE,
    metric_autonomy         DOUBLE,
    metric_first_try        DOUBLE,
    cost_usd                VARCHAR,     -- exact decimal as text
    cost_per_success_usd    VARCHAR,     -- exact decimal as text
    trust                   DOUBLE,
    weight                  DOUBLE,
    under_review            BOOLEAN,
    verified                BOOLEAN,
    rerun_of                VARCHAR,
    published_at            TIMESTAMPTZ,
    flags                   VARCHAR,
    cleared_flags           VARCHAR,
    warnings                VARCHAR
);

CREATE TABLE usecase_groups (
    use_case            VARCHAR NOT NULL,
    "group"             VARCHAR NOT NULL,
    model               VARCHAR,
    settings            VARCHAR,
    score               DOUBLE,      -- weighted score, blended with Bradley-Terry from 20 pairs
    weighted_score      DOUBLE,
    ci_low              DOUBLE,
    ci_high             DOUBLE,
    n_eff               DOUBLE,
    runs                BIGINT,
    passes              BIGINT,
    partials            BIGINT,
    fails               BIGINT,
    pass_rate           DOUBLE,
    under_review_runs   BIGINT,
    bt_pairs            BIGINT,
    bt_win_probability  DOUBLE,
    blended             BOOLEAN,
    rank                BIGINT,      -- competition rank within the use case (1, 1, 3)
    trend               VARCHAR,
    PRIMARY KEY (use_case, "group")
);

CREATE TABLE navigator_models (
    model                 VARCHAR NOT NULL PRIMARY KEY,
    "index"               DOUBLE,
    coding                DOUBLE,
    data_analysis         DOUBLE,
    extraction            DOUBLE,
    reasoning             DOUBLE,
    research_agentic      DOUBLE,
    summarization         DOUBLE,
    support               DOUBLE,
    writing               DOUBLE,
    tasks                 BIGINT,
    runs                  BIGINT,
    rank_best             BIGINT,
    rank_worst            BIGINT,
    tied                  BOOLEAN,
    candidate_cost_usd    VARCHAR,   -- exact decimal as text
    cost_per_success_usd  VARCHAR,   -- exact decimal as text
    dominated_by          VARCHAR,
    dominates             VARCHAR,
    simulated             BOOLEAN
);

CREATE TABLE navigator_pairs (
    model_a    VARCHAR NOT NULL,
    model_b    VARCHAR NOT NULL,
    n_tasks    BIGINT,
    statistic  DOUBLE,
    p_value    DOUBLE,
    rejected   BOOLEAN,
    better     VARCHAR,
    PRIMARY KEY (model_a, model_b)
);

CREATE TABLE navigator_v1_fit (
    task                    VARCHAR NOT NULL,
    monthly_volume          BIGINT NOT NULL,
    monthly_budget_usd      VARCHAR,   -- exact decimal as text
    rank                    BIGINT,
    model                   VARCHAR NOT NULL,
    displayed_overall       DOUBLE,
    calls                   BIGINT,
    mean_cost_per_call_usd  VARCHAR,   -- exact decimal as text
    monthly_cost_usd        VARCHAR,   -- exact decimal as text
    simulated               BOOLEAN,
    PRIMARY KEY (task, monthly_volume, model)
);
