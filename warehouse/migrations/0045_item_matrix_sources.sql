-- The per-item results source kind (`ingest/parsers/item_results.py`): long, wide and
-- inspect_ai `.eval` payloads of any source whose definition has a `[board]` table. Several
-- sources share these tables; a source's run replaces only its own rows (`source`).
CREATE TABLE item_matrix_entries (
    source          VARCHAR NOT NULL,
    board           VARCHAR NOT NULL,
    system          VARCHAR NOT NULL,
    source_file     VARCHAR NOT NULL,
    task            VARCHAR,
    stated_metric   VARCHAR,
    stated_score    VARCHAR,     -- the headline as the publisher wrote it (its rounding)
    date            VARCHAR,
    source_run_id   VARCHAR NOT NULL
);

CREATE TABLE item_matrix_results (
    source          VARCHAR NOT NULL,
    board           VARCHAR NOT NULL,
    system          VARCHAR NOT NULL,
    item            VARCHAR NOT NULL,
    score           DOUBLE NOT NULL,
    item_group      VARCHAR,
    cost_usd        DECIMAL(38, 20),
    date            VARCHAR,
    source_file     VARCHAR NOT NULL,
    source_record   VARCHAR,
    source_run_id   VARCHAR NOT NULL
);
