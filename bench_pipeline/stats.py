"""The public statistics API, `bench_pipeline.stats` (a stable contract for outside callers).

The functions live in `bench_pipeline.core.stats`; this module only names them."""

from bench_pipeline.core.stats import *  # noqa: F403
from bench_pipeline.core.stats import __all__  # noqa: F401
