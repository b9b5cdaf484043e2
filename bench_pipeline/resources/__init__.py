"""Dagster resources: one per outside system, each with a real and an offline implementation."""
