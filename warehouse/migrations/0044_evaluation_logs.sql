-- Each Epoch AI score's link to the publisher's log viewer for the run behind it.
-- The table is rebuilt rather than altered so that `log_url` sits where the live table's
-- spec declares it (before `source_file`, with `source_run_id` last), as every live table's
-- columns follow its spec.

CREATE TEMP TABLE evaluation_rows_before AS SELECT * FROM evaluation_rows;
DROP TABLE evaluation_rows;

-- Every row of each Epoch AI benchmark file: a model version's score on one evaluation.
CREATE TABLE evaluation_rows (
    evaluation_id   VARCHAR NOT NULL,
    row_key         VARCHAR NOT NULL,
    model_version   VARCHAR NOT NULL,
    agent           VARCHAR,               -- scaffold or agent, where the publisher names one
    organization    VARCHAR,
    release_date    VARCHAR,
    run_date        VARCHAR,
    score           DOUBLE NOT NULL,       -- percent, 0-100
    stderr          DOUBLE,                -- percent points
    log_url         VARCHAR,               -- the publisher's log viewer for the row's run (https), where its file links one
    source_file     VARCHAR NOT NULL,
    source_run_id   VARCHAR NOT NULL
);

INSERT INTO evaluation_rows
SELECT evaluation_id, row_key, model_version, agent, organization, release_date, run_date,
       score, stderr, NULL, source_file, source_run_id
FROM evaluation_rows_before;

DROP TABLE evaluation_rows_before;
