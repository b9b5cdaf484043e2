-- Setups proposed for models new on OpenRouter, written by the `new_openrouter_models` sensor:
-- each is the model's exact API id in the default harness, priced from the dated OpenRouter
-- rates of the ingestion that listed it. Insert-only: a proposal row is never changed or
-- deleted (a later decision about it would be a row of its own).
CREATE TABLE setup_proposals (
    model_id        VARCHAR NOT NULL,     -- the exact OpenRouter API id
    first_seen      DATE NOT NULL,        -- day of the ingestion that first listed it for us
    source_run_id   VARCHAR NOT NULL,     -- that accepted openrouter_models source run
    setup_id        VARCHAR NOT NULL,     -- computed as for declared setups
    label           VARCHAR NOT NULL,
    company         VARCHAR NOT NULL,
    model_record    VARCHAR NOT NULL,     -- JSON: the proposed model record
    harness         VARCHAR NOT NULL,     -- JSON: the harness it is proposed in
    partition_keys  VARCHAR[] NOT NULL,   -- model-run partitions registered for it
    status          VARCHAR NOT NULL,     -- proposed
    proposed_at     TIMESTAMP NOT NULL
);

-- Which loaded setups were proposed (above) rather than declared in setups/.
ALTER TABLE setups ADD COLUMN proposed BOOLEAN DEFAULT false;
