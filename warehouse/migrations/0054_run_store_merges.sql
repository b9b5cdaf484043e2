-- Merges of model runs made on several machines (runs/shared.py): each time the publisher
-- pulled the runs stored in PostgreSQL into this warehouse, how many it read, how many were
-- new here (a repeated merge finds none) and how many failures it took.
CREATE TABLE run_store_merges (
    merged_at  TIMESTAMP NOT NULL,  -- when the merge committed (UTC)
    store      VARCHAR NOT NULL,    -- postgresql://user@host:port/db (never a password)
    pulled     INTEGER NOT NULL,    -- runs read from the store that it had not seen merged
    merged     INTEGER NOT NULL,    -- of those, runs new to this warehouse
    failures   INTEGER NOT NULL,    -- failures taken (runs with no stored row)
    seconds    DOUBLE NOT NULL      -- how long the merge took, reading included
);
