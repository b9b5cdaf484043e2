-- The date of each run's data: the newest date its payload states (OpenRouter's `created`,
-- models.dev's `last_updated`, Epoch's run dates, LMArena's publication date, SWE-bench's entry
-- dates), never the fetch time, and how it was derived. NULL when the payload states none (the
-- basis says so) or the run was recorded before this column existed (basis NULL too).

ALTER TABLE source_runs ADD COLUMN data_as_of TIMESTAMP;
ALTER TABLE source_runs ADD COLUMN data_as_of_basis VARCHAR;

-- For analysts (the analyst copy is this file): per source, the date of the data its live
-- tables hold, and when that payload was fetched, side by side.
CREATE VIEW source_data_as_of AS
SELECT source, run_id, data_as_of, data_as_of_basis, finished_at AS fetched_at
FROM source_runs
WHERE status = 'accepted'
QUALIFY row_number() OVER (PARTITION BY source ORDER BY finished_at DESC, run_id DESC) = 1;
