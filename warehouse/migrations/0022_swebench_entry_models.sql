-- The registry model of each SWE-bench board entry (issue: registry by indexed lookups): the
-- registry asset places the entries while it builds the registry, from the same index, so
-- the item boards read the answer instead of rebuilding the registry to get it.
CREATE TABLE swebench_entry_models (
    leaderboard  VARCHAR NOT NULL,
    folder       VARCHAR NOT NULL,
    model_id     VARCHAR,             -- NULL: the entry names no single model the rules place
    PRIMARY KEY (leaderboard, folder)
);
