"""Bulk builds of many small Python objects, without the cycle collector scanning the heap.

Python's cycle collector runs after every few hundred allocations, and each full collection
walks every live object of the process. A step that builds tens of thousands of records (the
registry's candidates, aliases and review rows) inside a Dagster process with a large heap
spends much of its time there, more the larger the heap, although such records form no
cycles: reference counting frees them. `collector_paused` switches the collector off for
such a build and back on (if it was on) afterwards; nothing is lost, since any cycle made
meanwhile is collected by the next collection after it.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector off inside the block; its earlier state restored after it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def without_collector(function: Callable[P, R]) -> Callable[P, R]:
    """`function` run with the cycle collector paused (see `collector_paused`)."""

    @functools.wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return function(*args, **kwargs)

    return paused
