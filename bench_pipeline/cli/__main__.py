"""`python -m bench_pipeline.cli` runs the `bench` command."""

import sys

from bench_pipeline.cli.main import main

sys.exit(main())
