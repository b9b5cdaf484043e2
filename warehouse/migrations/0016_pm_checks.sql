-- The PM suite's checks (`scores/contamination.py`, `scores/admission.py`), recomputed from
-- pm_runs, pm_tasks and task_cases on every run; columns in published order
-- (`release/published.py` declares what each one means). Counts, gaps and p-values only:
-- nothing here names a private case or holds its score.
CREATE TABLE pm_contamination (
    setup_id             VARCHAR NOT NULL PRIMARY KEY,
    private_cases        BIGINT NOT NULL,
    matched_by_task      BIGINT NOT NULL,
    matched_by_category  BIGINT NOT NULL,
    unmatched            BIGINT NOT NULL,
    gap                  DOUBLE,       -- mean (public − private) over matched private cases
    p_value              DOUBLE,       -- exact two-sided sign-flip test over those gaps
    min_p_value          DOUBLE,       -- 2 / 2^matched: the smallest p the test can give
    significant          BOOLEAN NOT NULL,  -- Holm over the suite's tested setups at 5%
    flagged              BOOLEAN NOT NULL,  -- significant and better on public cases
    simulated            BOOLEAN
);

CREATE TABLE pm_task_admission (
    task              VARCHAR NOT NULL PRIMARY KEY,
    setups            BIGINT NOT NULL,
    pairs             BIGINT NOT NULL,
    consistent_pairs  BIGINT NOT NULL,
    tied_pairs        BIGINT NOT NULL,
    share_consistent  DOUBLE,
    p_value           DOUBLE,       -- exact permutation test of the concordance
    separates         BOOLEAN NOT NULL,
    reason            VARCHAR NOT NULL,
    simulated         BOOLEAN
);
