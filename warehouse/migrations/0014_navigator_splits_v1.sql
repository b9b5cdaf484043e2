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
