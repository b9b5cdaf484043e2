"""Grading: deterministic checks, LLM judges, sentinels, calibration and the second-look
queue, as plain typed functions (no Dagster here)."""
