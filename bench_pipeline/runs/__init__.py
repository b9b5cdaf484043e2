"""Model runs: what to run (plan), running it (execute), dated rates, submitted runs (intake)
and their storage. Plain functions; the Dagster assets in `bench_pipeline.assets.runs` wire
them to the warehouse and the providers."""
