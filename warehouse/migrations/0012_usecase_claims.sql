-- UseCaseRank against gaming (scores/usecase.py): a resubmitted run names the original it
-- duplicates, a claimed reproduction says whether it counts and why, and a look-alike model
-- name says what gives it away. Appended, so the published column order stays as declared in
-- release/published.py.
ALTER TABLE usecase_runs ADD COLUMN duplicate_of VARCHAR;
ALTER TABLE usecase_runs ADD COLUMN reproduces VARCHAR;
ALTER TABLE usecase_runs ADD COLUMN reproduction_counts BOOLEAN;
ALTER TABLE usecase_runs ADD COLUMN reproduction_reason VARCHAR;
ALTER TABLE usecase_runs ADD COLUMN model_name_problem VARCHAR;
