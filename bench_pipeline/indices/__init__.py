"""The published indices and market data: index rules, their store, market rows, openness
and pricing. Plain functions; no Dagster here."""
