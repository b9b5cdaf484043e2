-- 95% intervals of the Known Good Index and the capability indices, propagated from the
-- publisher's standard errors (`indices/intervals.py`; method on methodology/indices.md).
-- Null where the index is null or a held component's score has no standard error; those
-- components are named in `without_stderr`.

ALTER TABLE known_good_index ADD COLUMN known_good_index_low DOUBLE;
ALTER TABLE known_good_index ADD COLUMN known_good_index_high DOUBLE;
ALTER TABLE known_good_index ADD COLUMN without_stderr VARCHAR;  -- comma-separated evaluation ids

ALTER TABLE capability_indices ADD COLUMN coding_index_low DOUBLE;
ALTER TABLE capability_indices ADD COLUMN coding_index_high DOUBLE;
ALTER TABLE capability_indices ADD COLUMN agentic_index_low DOUBLE;
ALTER TABLE capability_indices ADD COLUMN agentic_index_high DOUBLE;
ALTER TABLE capability_indices ADD COLUMN mathematics_index_low DOUBLE;
ALTER TABLE capability_indices ADD COLUMN mathematics_index_high DOUBLE;
ALTER TABLE capability_indices ADD COLUMN science_index_low DOUBLE;
ALTER TABLE capability_indices ADD COLUMN science_index_high DOUBLE;
ALTER TABLE capability_indices ADD COLUMN reasoning_index_low DOUBLE;
ALTER TABLE capability_indices ADD COLUMN reasoning_index_high DOUBLE;
ALTER TABLE capability_indices ADD COLUMN without_stderr VARCHAR;  -- comma-separated evaluation ids
