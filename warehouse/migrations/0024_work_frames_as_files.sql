-- A run's working frames (staged, validated, pending quarantine) moved out of the warehouse
-- into files of their run (bench_pipeline/ingest/work.py): writing them compressed into DuckDB
-- and reading them back cost more than the staging itself on a large payload. Tables left by
-- runs that died under the earlier code would never be dropped now; their schemas go here.
DROP SCHEMA IF EXISTS staging CASCADE;
DROP SCHEMA IF EXISTS validated CASCADE;
