-- A Navigator pair is simulated when either of its setups is: the download says so itself
-- instead of leaving readers to look the setups up in navigator_models.
ALTER TABLE navigator_pairs ADD COLUMN simulated BOOLEAN;
