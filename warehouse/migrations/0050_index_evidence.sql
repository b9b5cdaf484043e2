-- The evidence behind each normalised score: the standard error and log viewer link of the
-- publisher's row the model's best score was taken from (null where the file gives none).

ALTER TABLE evaluation_normalised ADD COLUMN stderr DOUBLE;     -- percentage points
ALTER TABLE evaluation_normalised ADD COLUMN log_url VARCHAR;   -- https, the publisher's log viewer
