-- Grades, human reviews and what follows from them. Grades and reviews are only ever
-- inserted: a grade is never overwritten (a regrade is a new row of a new cycle), and a
-- submitted review never changes.

CREATE TABLE grading_cycles (
    cycle_id       VARCHAR NOT NULL,
    started_at     TIMESTAMP NOT NULL,
    runs           INTEGER NOT NULL,
    sentinels      INTEGER NOT NULL,
    judges         VARCHAR NOT NULL,         -- JSON array of judge api ids
    simulated      BOOLEAN NOT NULL
);

CREATE TABLE grades (
    grade_id        VARCHAR NOT NULL,        -- hash of cycle, item, grader and question
    cycle_id        VARCHAR NOT NULL,
    run_id          VARCHAR NOT NULL,        -- a model run, or a sentinel id (sentinel = true)
    sentinel        BOOLEAN NOT NULL,
    suite           VARCHAR NOT NULL,
    case_id         VARCHAR NOT NULL,
    input_id        VARCHAR NOT NULL,
    question        VARCHAR NOT NULL,        -- criterion id, `check`, `blind_score`, a browser goal
    tier            INTEGER NOT NULL,        -- 1 scripted/browser, 2 judge
    grader_kind     VARCHAR NOT NULL,        -- script | browser | judge
    grader          VARCHAR NOT NULL,        -- e.g. script:unit_tests@1, a judge's api id
    grader_company  VARCHAR,
    grader_family   VARCHAR,
    rubric_version  VARCHAR,
    outcome         VARCHAR NOT NULL,        -- pass | partial | fail | ungraded | inconclusive | score
    score           DOUBLE,                  -- 1-5 for `blind_score`
    p_pass          DOUBLE,
    p_partial       DOUBLE,
    p_fail          DOUBLE,
    confidence      DOUBLE,
    reason          VARCHAR,
    details         VARCHAR,                 -- JSON
    held            BOOLEAN NOT NULL,        -- the judge misgraded a sentinel in this cycle
    simulated       BOOLEAN NOT NULL,
    judge_cost_usd  DECIMAL(38, 18),
    graded_at       TIMESTAMP NOT NULL
);

CREATE TABLE sentinel_flags (
    cycle_id    VARCHAR NOT NULL,
    judge       VARCHAR NOT NULL,
    sentinel_id VARCHAR NOT NULL,
    expected    VARCHAR NOT NULL,
    got         VARCHAR NOT NULL,
    flagged_at  TIMESTAMP NOT NULL
);

CREATE TABLE browser_reports (
    run_id        VARCHAR NOT NULL,
    outcome       VARCHAR NOT NULL,          -- pass | fail | inconclusive
    reason        VARCHAR,
    measures      VARCHAR NOT NULL,          -- JSON
    screenshot    VARCHAR,
    checked_at    TIMESTAMP NOT NULL
);

-- A person's blind review of one run (seed 000): one per reviewer and run, never changed.
CREATE TABLE reviews (
    review_id         VARCHAR NOT NULL,      -- hash of run and reviewer
    run_id            VARCHAR NOT NULL,
    reviewer          VARCHAR NOT NULL,
    score             INTEGER NOT NULL,      -- 1-5
    understood        VARCHAR NOT NULL,
    missed            VARCHAR NOT NULL,
    decisive_reason   VARCHAR NOT NULL,
    critical_failure  VARCHAR,               -- a critical-failure id of the case, or NULL
    simulated         BOOLEAN NOT NULL,      -- made by the simulated reviewer (demo mode)
    origin            VARCHAR NOT NULL,      -- cli | inbox:<file> | simulated
    submitted_at      TIMESTAMP NOT NULL
);

CREATE TABLE review_files (
    sha256        VARCHAR NOT NULL,
    file_name     VARCHAR NOT NULL,
    status        VARCHAR NOT NULL,          -- accepted | rejected
    field         VARCHAR,
    reason        VARCHAR,
    review_id     VARCHAR,
    received_at   TIMESTAMP NOT NULL
);

-- What waits for a person's second look, as of the last grading (rebuilt each time).
CREATE TABLE second_look (
    run_id       VARCHAR NOT NULL,
    reason       VARCHAR NOT NULL,
    detail       VARCHAR,
    found_at     TIMESTAMP NOT NULL
);

-- Runs under review are cleared by a recorded action, never by editing the run.
CREATE TABLE clearances (
    run_id       VARCHAR NOT NULL,
    flag         VARCHAR NOT NULL,
    cleared_by   VARCHAR NOT NULL,
    reason       VARCHAR NOT NULL,
    cleared_at   TIMESTAMP NOT NULL
);

-- Judge-person agreement of the last grading, for the release gate.
CREATE TABLE calibration (
    scope        VARCHAR NOT NULL,           -- overall | family:<f> | tier:<t> | criterion:<c>
    pairs        INTEGER NOT NULL,
    agreement    DOUBLE,
    kappa        DOUBLE,
    false_passes INTEGER,
    false_fails  INTEGER,
    computed_at  TIMESTAMP NOT NULL
);

-- Failed Dagster runs, recorded by the run-failure sensor (shown on the site's about page).
CREATE TABLE run_failure_log (
    dagster_run_id  VARCHAR NOT NULL,
    job_name        VARCHAR NOT NULL,
    failed_at       TIMESTAMP NOT NULL,
    message         VARCHAR NOT NULL
);
