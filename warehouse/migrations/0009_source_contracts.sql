-- Source contracts: what every run measured (row counts per file / evaluation / arena table,
-- null shares per contract field), operators' recorded acceptances of rejected runs, and the
-- claims that make run ids unique and let a run whose process died be closed later.

CREATE TABLE source_run_groups (
    run_id      VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,
    group_kind  VARCHAR NOT NULL,   -- table | file | a staged column the contract groups by
    group_name  VARCHAR NOT NULL,
    rows        BIGINT NOT NULL,
    PRIMARY KEY (run_id, group_kind, group_name)
);

CREATE TABLE source_run_fields (
    run_id      VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,
    field_path  VARCHAR NOT NULL,   -- a contract field: `<file pattern>:<nested.path>`
    records     BIGINT NOT NULL,
    nulls       BIGINT NOT NULL,
    PRIMARY KEY (run_id, field_path)
);

CREATE TABLE source_run_acceptances (
    run_id       VARCHAR PRIMARY KEY,  -- a run the sanity check rejected
    source       VARCHAR NOT NULL,
    accepted_by  VARCHAR NOT NULL,
    reason       VARCHAR NOT NULL,
    accepted_at  TIMESTAMP NOT NULL
);

CREATE TABLE source_run_claims (
    run_id      VARCHAR PRIMARY KEY,
    source      VARCHAR NOT NULL,
    host        VARCHAR NOT NULL,
    pid         BIGINT NOT NULL,
    claimed_at  TIMESTAMP NOT NULL
);
