-- The median of each numeric column a source's contract names under `scales`, per validated
-- run, so the next run's sanity check can tell a change of unit (prices per token become per
-- thousand, a percentage a fraction) that every value passes one by one.

CREATE TABLE source_run_scales (
    run_id        VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    table_column  VARCHAR NOT NULL,   -- `<table>.<column>`
    median        DOUBLE,             -- over the run's valid rows, nulls aside
    n_values      BIGINT NOT NULL,
    PRIMARY KEY (run_id, table_column)
);
