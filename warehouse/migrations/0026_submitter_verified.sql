-- Submitted runs say whether their file proved a registered submitter (runs/submitters.py):
-- only such runs count as reproductions of one another. Runs stored before submitters were
-- registered are not verified.
ALTER TABLE submitted_runs ADD COLUMN submitter_verified BOOLEAN DEFAULT false;
UPDATE submitted_runs SET submitter_verified = false WHERE submitter_verified IS NULL;
