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
ALTER TABLE swebench_entries ADD COLUMN logs VARCHAR;
