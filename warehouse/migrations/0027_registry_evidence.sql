-- Issue 37: every alias says what it rests on (the publisher's id, the exact name, or the
-- reviewed alias table row with its reviewer, date and reason), and the merges the registry
-- refused (a dated snapshot joined to an undated model, a family-level name used as a key)
-- are kept for `bench registry report`.

ALTER TABLE model_aliases ADD COLUMN evidence VARCHAR;

CREATE TABLE refused_merges (
    source      VARCHAR NOT NULL,
    source_key  VARCHAR NOT NULL,
    model_id    VARCHAR,             -- where the listing sits instead
    would_join  VARCHAR NOT NULL,    -- the model the weaker rule would have put it on
    kind        VARCHAR NOT NULL,    -- dated_snapshot | family_name
    reason      VARCHAR NOT NULL
);
