-- The model registry, rebuilt from the live tables after every accepted source run.

CREATE TABLE models (
    model_id        VARCHAR NOT NULL,     -- OpenRouter id, or "<source>:<key>" when first seen elsewhere
    name            VARCHAR NOT NULL,
    organization    VARCHAR,
    origin_source   VARCHAR NOT NULL,
    origin_key      VARCHAR NOT NULL
);

CREATE TABLE model_aliases (
    source          VARCHAR NOT NULL,
    source_key      VARCHAR NOT NULL,
    model_id        VARCHAR NOT NULL,
    method          VARCHAR NOT NULL,     -- alias_file | provider_id | normalised_name | new
    name            VARCHAR,
    settings        VARCHAR                -- JSON object, e.g. {"effort": "high"}
);

CREATE TABLE unmatched_models (
    source           VARCHAR NOT NULL,
    source_key       VARCHAR NOT NULL,
    name             VARCHAR,
    normalised_name  VARCHAR NOT NULL,
    model_id         VARCHAR NOT NULL,    -- the new model it became
    reason           VARCHAR NOT NULL
);

-- One score per (model, evaluation): the best of the publisher's rows, with the row it came from.
CREATE TABLE evaluation_scores (
    model_id          VARCHAR NOT NULL,
    evaluation_id     VARCHAR NOT NULL,
    score             DOUBLE NOT NULL,
    direction         VARCHAR NOT NULL,
    settings          VARCHAR,
    model_version     VARCHAR NOT NULL,
    agent             VARCHAR,
    row_key           VARCHAR NOT NULL,
    source_file       VARCHAR NOT NULL,
    source_run_id     VARCHAR NOT NULL,
    rows_considered   INTEGER NOT NULL
);
