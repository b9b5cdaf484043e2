-- Model identity (issue 14): every model and listing carries its lab; a host's listing
-- carries its host; a host's listing that matches no model is reviewed without becoming
-- one (model_id NULL); catalogue listings held back as impostors are kept for review.

ALTER TABLE models ADD COLUMN lab VARCHAR;
ALTER TABLE model_aliases ADD COLUMN host VARCHAR;      -- models.dev provider when not the lab
ALTER TABLE unmatched_models ADD COLUMN lab VARCHAR;
ALTER TABLE unmatched_models ALTER COLUMN model_id DROP NOT NULL;

CREATE TABLE quarantined_models (
    source      VARCHAR NOT NULL,
    source_key  VARCHAR NOT NULL,
    name        VARCHAR,
    resembles   VARCHAR NOT NULL,    -- the listing it passes for
    reason      VARCHAR NOT NULL
);
