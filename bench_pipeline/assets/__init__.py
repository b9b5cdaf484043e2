"""Software-defined assets, one module per stage of the chain.

Under `bench ui` (which sets `BENCH_QUIET_DAGSTER`), the code server that loads them keeps
Dagster's beta, preview and superseded-API warnings off the operator's terminal, as every
other `bench` command does (`cli.terminal.quiet_dagster`). They are filtered here, before
any asset module is imported, because the decorators warn while the modules load.
"""

import os
import warnings

if os.environ.get("BENCH_QUIET_DAGSTER"):
    import dagster as dg

    for _category in (dg.BetaWarning, dg.PreviewWarning, dg.SupersessionWarning):
        warnings.filterwarnings("ignore", category=_category)
