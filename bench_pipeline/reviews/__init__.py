"""Blind human review (seed 000): the queue, the terminal flow of `bench review`, review files
from the inbox, and the immutable store. Plain functions; no Dagster here."""
