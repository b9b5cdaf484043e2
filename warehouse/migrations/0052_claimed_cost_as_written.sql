-- A submitted run's claimed cost as its file wrote it, kept when `claimed_cost_usd`
-- (DECIMAL(38, 18)) cannot hold the claim: the value column then holds the largest amount it
-- can (the claim clamped) and scoring reads the claim from this text, so an absurd claim
-- (1e20 USD) is stored and flagged `implausible_cost` rather than losing the file.
ALTER TABLE submitted_runs ADD COLUMN claimed_cost_as_written VARCHAR;
