-- The date of each run's data: the newest date its payload states (OpenRouter's `created`,
-- models.dev's `last_updated`, Epoch's run dates, LMArena's publication date, SWE-bench's entry
-- dates), never the fetch time, and how it was derived. NULL when the payload states none (the
-- basis says so) or the run was recorded before this column existed (basis NULL too).

ALTER TABLE source_runs ADD COLUMN data_as_of TIMESTAMP;
ALTER TABLE source_runs ADD COLUMN data_as_of_basis VARCHAR;
