"""Benchmarks, run with `make bench` (`python -m benchmarks`).

Each benchmark measures its own baseline in the same run and prints ratios against it, so the
figures are comparable across machines.
"""
