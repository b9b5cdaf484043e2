"""Scores of the three run-based methodologies, as plain typed functions.

* `bench_pipeline.scores.pm`: the PM suite (run, task, category and setup scores; drops).
* `bench_pipeline.scores.usecase`: UseCaseRank (run scores, trust, flags, group boards).
* `bench_pipeline.scores.navigator`: the Navigator Index v2 with paired ranks, and the
  classic v1 fit ranking.

Nothing here imports Dagster or reads the warehouse: inputs are typed records, outputs are
typed rows and polars DataFrames whose columns carry the public names of the methodology
pages (site/methodology/).
"""
