-- Issue 37: openness weighed from every source's input, the lab's own first, with the input
-- that decided kept beside the score; $0 rates that are not prices flagged, never ranked.

ALTER TABLE market ADD COLUMN openness_input VARCHAR;        -- the input that decided
ALTER TABLE market ADD COLUMN openness_source_key VARCHAR;   -- and its record
ALTER TABLE market ADD COLUMN rate_flag VARCHAR;             -- trial, per_unit, variable
ALTER TABLE provider_prices ADD COLUMN rate_flag VARCHAR;

CREATE TABLE openness_evidence (
    model_id        VARCHAR NOT NULL,
    precedence      INTEGER NOT NULL,    -- 1 lab listing ... 5 hosts' listings
    position        INTEGER NOT NULL,    -- order weighed, within the model
    input           VARCHAR NOT NULL,
    source          VARCHAR NOT NULL,
    source_key      VARCHAR NOT NULL,
    open_weights    BOOLEAN,
    licence         VARCHAR,
    licence_class   VARCHAR,
    role            VARCHAR NOT NULL,    -- decided, agrees, overruled, silent
    source_run_id   VARCHAR
);
