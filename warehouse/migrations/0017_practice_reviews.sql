-- Practice reviews: a person's review of a simulated run (the offline demo's made-up outputs,
-- `bench review --include-simulated`). Kept apart from `reviews`, so practice never reaches a
-- board, a second look or the judge-person calibration the release gate reads. Insert-only,
-- one per run and person, like `reviews`.
CREATE TABLE practice_reviews (
    review_id         VARCHAR NOT NULL,      -- hash of run and reviewer
    run_id            VARCHAR NOT NULL,
    reviewer          VARCHAR NOT NULL,
    score             INTEGER NOT NULL,      -- 1-5
    understood        VARCHAR NOT NULL,
    missed            VARCHAR NOT NULL,
    decisive_reason   VARCHAR NOT NULL,
    critical_failure  VARCHAR,
    origin            VARCHAR NOT NULL,      -- cli | inbox:<file>
    submitted_at      TIMESTAMP NOT NULL
);

-- Before this table, a practice review landed in `reviews` and made the calibration gate fail
-- for good (one pair, never enough). Move each such review here, unchanged: nothing is lost.
INSERT INTO practice_reviews
SELECT v.review_id, v.run_id, v.reviewer, v.score, v.understood, v.missed, v.decisive_reason,
       v.critical_failure, v.origin, v.submitted_at
FROM reviews v
WHERE NOT v.simulated AND v.run_id IN (SELECT run_id FROM model_runs WHERE simulated);

DELETE FROM reviews
WHERE NOT simulated AND run_id IN (SELECT run_id FROM model_runs WHERE simulated);
