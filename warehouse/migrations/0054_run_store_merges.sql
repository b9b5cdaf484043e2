-- Merges of model runs made on several machines (runs/shared.py): each time the publisher
-- pulled the runs stored in PostgreSQL into this warehouse, how many it read, how many were
-- new here (a repeated merge finds none) and how many failures it took.
CREATE TABLE run_store_merges (
    merged_at  TIMESTAMP NOT NULL,
    store      VARCHAR NOT NULL,   -- postgresql://user@host:port/db (never a password)
    pulled     INTEGER NOT NULL,
    merged     INTEGER NOT NULL,
    failures   INTEGER NOT NULL,
    seconds    DOUBLE NOT NULL
);
