-- The offline demo's simulated use-case runs (runs/demo_submissions.py) are labelled like
-- every other simulated row: `submitted_runs.simulated` marks them (a real submission is
-- never simulated), and the UseCaseRank tables carry a `simulated` column, appended so the
-- published column order stays as declared in release/published.py.
ALTER TABLE submitted_runs ADD COLUMN simulated BOOLEAN DEFAULT false;
UPDATE submitted_runs SET simulated = false WHERE simulated IS NULL;
ALTER TABLE usecase_runs ADD COLUMN simulated BOOLEAN;
ALTER TABLE usecase_groups ADD COLUMN simulated BOOLEAN;
