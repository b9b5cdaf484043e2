-- Each Epoch AI score's link to the publisher's log viewer for the run behind it.

ALTER TABLE evaluation_rows ADD COLUMN log_url VARCHAR;  -- the publisher's log viewer for the row's run (https), where its file links one
