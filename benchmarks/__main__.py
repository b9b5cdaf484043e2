"""`python -m benchmarks [--rows N] [--repeat K] [--parser P] [--profile]`: ingest swap."""

from benchmarks.ingest_swap import main

if __name__ == "__main__":
    raise SystemExit(main())
