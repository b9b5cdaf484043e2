"""Ingestion of outside sources: raw payload → staging → validation → live tables."""
