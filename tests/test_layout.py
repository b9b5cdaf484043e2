"""README's Layout section is the floor plan: it names every package under bench_pipeline/,
and names no package that is not there."""

from __future__ import annotations

import re

import pytest

from bench_pipeline.core import settings

pytestmark = pytest.mark.unit

PACKAGE_ROOT = settings.REPO_ROOT / "bench_pipeline"


def layout_block() -> str:
    """The code block of README's `## Layout` section."""
    readme = (settings.REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Layout\n(.*?)(?=^## )", readme, flags=re.M | re.S)
    assert section, "README.md has no '## Layout' section"
    block = re.search(r"```\n(.*?)```", section.group(1), flags=re.S)
    assert block, "README.md's Layout section has no code block"
    return block.group(1)


def packages() -> set[str]:
    """Every package directly under bench_pipeline/ (a folder with an `__init__.py`)."""
    return {p.parent.name for p in PACKAGE_ROOT.glob("*/__init__.py")}


def named_in_layout() -> set[str]:
    """The folders the Layout names under `bench_pipeline/` (its indented `name/` entries)."""
    block = layout_block()
    lines = block.split("bench_pipeline/\n", 1)[1].splitlines()
    names: set[str] = set()
    for line in lines:
        if not line.startswith("  "):
            break  # the next top-level entry: bench_pipeline/ is over
        names |= set(re.findall(r"(?<![\w/.])([a-z_]+)/", line.split("   ")[0]))
    return names


def test_the_layout_names_every_package() -> None:
    found = packages()
    assert {"core", "grading", "assets"} <= found  # the scan itself sees the packages
    missing = sorted(found - named_in_layout())
    assert not missing, f"README.md's Layout does not name these packages: {missing}"


def test_the_layout_names_no_package_that_is_gone() -> None:
    stale = sorted(named_in_layout() - packages())
    assert not stale, f"README.md's Layout names folders bench_pipeline/ does not have: {stale}"
