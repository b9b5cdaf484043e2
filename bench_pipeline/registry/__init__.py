"""The model registry: one canonical model per real model, with every source's name for it."""
