"""`python -m benchmarks [--rows N] [--repeat K] [--profile]`: the ingestion swap benchmark."""

from benchmarks.ingest_swap import main

if __name__ == "__main__":
    raise SystemExit(main())
