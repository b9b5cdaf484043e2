"""The cycle collector is paused only inside a bulk build and always restored."""

from __future__ import annotations

import gc

import pytest

from bench_pipeline.core.allocation import collector_paused, without_collector

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _restore_collector():
    was_on = gc.isenabled()
    yield
    (gc.enable if was_on else gc.disable)()


def test_paused_inside_and_on_again_after_even_on_an_error() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="boom"), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_nested_pause_and_an_earlier_off_state_are_kept() -> None:
    gc.enable()
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer build is still running
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()  # someone else had switched it off: left off


def test_the_decorated_function_answers_as_before_with_the_collector_off() -> None:
    gc.enable()
    seen = []

    @without_collector
    def build(n: int, *, tag: str) -> list[str]:
        """Docs kept."""
        seen.append(gc.isenabled())
        return [f"{tag}{i}" for i in range(n)]

    assert build(3, tag="m") == ["m0", "m1", "m2"]
    assert seen == [False] and gc.isenabled() and build.__doc__ == "Docs kept."
