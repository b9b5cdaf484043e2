"""What every stage shares: the warehouse, files, HTTP, money, settings and statistics.

Nothing here imports a stage of the chain."""
