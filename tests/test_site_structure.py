"""The site's own modules form a tree (no import cycle), so each page view is shaped from
the one release model (`site/release_view.py`) and not from a view that imports it back."""

from __future__ import annotations

import grimp
import pytest

pytestmark = pytest.mark.unit

SITE = "bench_pipeline.site"


def _site_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("bench_pipeline", exclude_type_checking_imports=False)
    modules = {m for m in graph.modules if m == SITE or m.startswith(f"{SITE}.")}
    return {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i in modules and i != m}
        for m in modules
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (as the modules round it), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == 1:
                return [*path[path.index(imported) :], imported]
            if imported not in state and (found := visit(imported)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_site_modules_import_no_cycle() -> None:
    cycle = _cycle(_site_graph())
    assert cycle is None, "site modules import each other: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one() -> None:
    # the check above is only worth its pass if it would see the views <-> navigator_v1 loop
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _cycle(graph) == ["a", "b", "c", "a"]


def test_views_and_navigator_share_the_release_model() -> None:
    graph = _site_graph()
    assert f"{SITE}.views" not in graph[f"{SITE}.navigator_v1"]
    assert f"{SITE}.release_view" in graph[f"{SITE}.navigator_v1"]
    assert graph[f"{SITE}.release_view"] <= {f"{SITE}.large_tables", f"{SITE}.layout"}
