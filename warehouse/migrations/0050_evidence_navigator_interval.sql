-- Three parts: the evidence behind the index scores and the SWE-bench entries, and the
-- Navigator Index interval.
-- The evidence behind each normalised score: the standard error and log viewer link of the
-- publisher's row the model's best score was taken from (null where the file gives none).

ALTER TABLE evaluation_normalised ADD COLUMN stderr DOUBLE;     -- percentage points
ALTER TABLE evaluation_normalised ADD COLUMN log_url VARCHAR;   -- https, the publisher's log viewer

-- The Navigator Index's 95% interval, each category's tasks read as a sample
-- (`scores/navigator.index_interval`); null without an Index or with a one-task category.
ALTER TABLE navigator_models ADD COLUMN index_low DOUBLE;
ALTER TABLE navigator_models ADD COLUMN index_high DOUBLE;

-- Where SWE-bench keeps each entry's evaluation logs, as its leaderboards file states it
-- (an `s3://` address of its public bucket); published beside the entry on its item board.
-- The table is rebuilt rather than altered so that `logs` sits where the live table's spec
-- declares it (after `site`, with `source_run_id` last), as every live table's columns
-- follow its spec.
CREATE TEMP TABLE swebench_entries_before AS SELECT * FROM swebench_entries;
DROP TABLE swebench_entries;

CREATE TABLE swebench_entries (
    leaderboard        VARCHAR NOT NULL,    -- bash-only, Verified, Lite, Test, Multimodal
    folder             VARCHAR NOT NULL,    -- the submission's folder: unique in its leaderboard
    entry              VARCHAR NOT NULL,    -- the publisher's entry name, verbatim
    date               DATE,
    resolved_percent   DOUBLE NOT NULL,     -- published percent resolved, 0-100
    cost_usd           DECIMAL(38, 20),
    instance_cost_usd  DECIMAL(38, 20),
    instance_calls     DOUBLE,
    checked            BOOLEAN,             -- from a boolean or the leading word of a string
    checked_as_sent    VARCHAR,
    os_model           BOOLEAN,
    os_system          BOOLEAN,
    tags               VARCHAR,             -- JSON list, as published
    model_tags         VARCHAR,             -- JSON list of the ids in "Model: ..." tags
    site               VARCHAR,
    logs               VARCHAR,             -- where the publisher keeps the entry's evaluation logs (s3:// or https), as stated
    per_item_results   BIGINT,              -- instances in per_instance_details (0: none)
    source_file        VARCHAR NOT NULL,
    source_run_id      VARCHAR NOT NULL
);

-- Rows read before this migration carry no logs: the next change of the payload fills them.
INSERT INTO swebench_entries
SELECT leaderboard, folder, entry, date, resolved_percent, cost_usd, instance_cost_usd,
       instance_calls, checked, checked_as_sent, os_model, os_system, tags, model_tags, site,
       NULL, per_item_results, source_file, source_run_id
FROM swebench_entries_before;

DROP TABLE swebench_entries_before;
