"""The published tables of the PM suite's checks (`scores/pm_checks_store.py`).

Declared here, beside each other, and listed in `published.PUBLISHED` by one entry.
Counts, gaps and p-values only: no column names a private case or holds its score.
"""

from __future__ import annotations

from bench_pipeline.release.schema import Column, PublishedTable
from bench_pipeline.scores import admission, contamination

METHODOLOGY = "pm_checks"
SIMULATED = Column(
    "simulated", "boolean", "True when a simulated provider made the runs behind it."
)

CONTAMINATION_COLUMNS = (
    Column("setup_id", "string", "The setup (a model in a harness)."),
    Column("model_id", "string",
           "The registry model the setup runs (null: no source lists its API id)."),
    Column("private_cases", "integer", "Private (held-out) cases it has a published run on."),
    Column("matched_by_task", "integer", "Of those, compared with public cases of their task."),
    Column("matched_by_category", "integer",
           "Compared with public cases of their category (no public case of their task)."),
    Column("unmatched", "integer", "With no public case of their task or category."),
    Column("gap", "number",
           "Mean over matched private cases of (public score - private score), PM points; "
           "positive: better on public cases."),
    Column("p_value", "number", "Exact two-sided sign-flip test over those gaps."),
    Column("min_p_value", "number", "2 / 2^matched: the smallest p-value the test can give."),
    Column("significant", "boolean",
           f"Rejected by Holm over the suite's tested setups at {contamination.ALPHA:.0%}."),
    Column("flagged", "boolean", "Significant and better on public cases: possible contamination."),
    SIMULATED,
)  # fmt: skip
ADMISSION_COLUMNS = (
    Column("task", "string", "The PM task."),
    Column("setups", "integer", "Setups with a score on it and on another task."),
    Column("pairs", "integer", "Pairs of those setups."),
    Column("consistent_pairs", "integer",
           "Pairs it puts apart in the order of their mean over the other tasks."),
    Column("tied_pairs", "integer", "Pairs it gives the same score (not consistent)."),
    Column("share_consistent", "number", "consistent_pairs / pairs."),
    Column("p_value", "number",
           "Exact chance that a random order of the setups is at least as consistent."),
    Column("separates", "boolean",
           f"p_value <= {admission.ALPHA}: its rubric separates setups (it earns its place)."),
    Column("reason", "string", "The figures in words."),
    SIMULATED,
)  # fmt: skip

PM_CHECKS_PUBLISHED = (
    PublishedTable(
        "pm_contamination", "PM suite: public against private cases per setup",
        "SELECT t.*, s.model_id FROM pm_contamination t LEFT JOIN setup_models s "
        "USING (setup_id) ORDER BY setup_id", ("setup_id",), METHODOLOGY,
        CONTAMINATION_COLUMNS, parameters={"alpha": contamination.ALPHA},
    ),
    PublishedTable(
        "pm_task_admission", "PM suite: does each task separate setups",
        "SELECT * FROM pm_task_admission ORDER BY task", ("task",), METHODOLOGY,
        ADMISSION_COLUMNS,
        parameters={"alpha": admission.ALPHA, "min_setups": admission.MIN_SETUPS},
    ),
)  # fmt: skip
