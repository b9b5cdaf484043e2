-- A fetch whose payload is byte for byte the one the live tables came from (same SHA-256 as
-- the source's last accepted run) is recorded here instead of as a new source run: nothing
-- is staged again, `raw_files` and `source_runs` do not grow, and the live tables stay.
CREATE TABLE source_checks (
    source          VARCHAR NOT NULL,
    checked_at      TIMESTAMP NOT NULL,
    mode            VARCHAR NOT NULL,      -- recorded | live
    content_sha256  VARCHAR NOT NULL,
    live_run_id     VARCHAR NOT NULL       -- the accepted run whose payload it matched
);
