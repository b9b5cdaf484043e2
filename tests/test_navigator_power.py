"""The Navigator Index publishes the gap its own data separates (`scores.navigator_power`,
table `navigator_resolution`) instead of a rule of thumb, and its page says so."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats
from synthetic import write_release

from bench_pipeline.scores.navigator import CATEGORY_WEIGHTS, task_weights
from bench_pipeline.scores.navigator_power import navigator_resolution, resolution_frame
from bench_pipeline.site import build_site

TASKS = {f"t{k:02d}": c for k, c in enumerate(list(CATEGORY_WEIGHTS) * 5)}  # 40 tasks


def _board(noise: float, models: int = 6, seed: int = 1) -> dict[str, dict[str, float]]:
    """Models level on average, each task score the same base plus independent noise."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.7, len(TASKS))
    return {
        f"m{j}": {t: float(b + rng.normal(0, noise)) for t, b in zip(TASKS, base, strict=True)}
        for j in range(models)
    }


@pytest.mark.unit
def test_the_figure_is_the_power_of_the_boards_own_test() -> None:
    # Each task difference has sd σ√2; the index difference Σ a_t d_t has sd
    # σ√2·√Σa_t². At the threshold 0.05 / 15 (15 pairs, none established), the normal test
    # separates a gap G with 80% power at G ≈ (z + 0.84)·sd: the simulation from the
    # board's own pairs lands there.
    sigma = 0.1
    found = navigator_resolution(_board(sigma), TASKS, [f"m{j}" for j in range(6)], 15, 0)
    assert found is not None and found.test == "sign-flip, normal approximation"
    assert found.threshold == pytest.approx(0.05 / 15)
    weights = np.array(list(task_weights(TASKS).values()))
    spread = sigma * math.sqrt(2) * math.sqrt(float((weights**2).sum()))
    z = scipy_stats.norm.isf(0.05 / 15 / 2)
    assert found.gap_80 == pytest.approx((z + 0.8416) * spread, rel=0.15)
    assert found.gap_50 == pytest.approx(z * spread, rel=0.15)
    # Twice the noise, twice the gap: the figure is in index points of this board's data.
    wider = navigator_resolution(_board(2 * sigma), TASKS, [f"m{j}" for j in range(6)], 15, 0)
    assert wider is not None and wider.gap_80 == pytest.approx(2 * found.gap_80, rel=0.1)


@pytest.mark.unit
def test_no_figure_without_two_indexed_models() -> None:
    assert navigator_resolution(_board(0.1), TASKS, ["m0"], 0, 0) is None
    assert resolution_frame(None, 1, 40).height == 0


@pytest.mark.store
def test_the_navigator_page_states_the_measured_gap(tmp_path: Path) -> None:
    found = navigator_resolution(_board(0.1), TASKS, [f"m{j}" for j in range(6)], 15, 0)
    row = resolution_frame(found, 6, 40).to_dicts()[0] | {"simulated": True}
    release = write_release(tmp_path / "releases", "r-nav", {"navigator_resolution": [row]},
                            created_at="2026-12-01T06:00:00Z")  # fmt: skip
    build_site(release, tmp_path / "site", release.parent)
    page = (tmp_path / "site" / "navigator.html").read_text("utf-8")
    sentence = page[page.index('<p id="navigator-resolution">') :].split("</p>")[0]
    assert f"{found.gap_80:.1f} index points apart are separated four times in five" in sentence
    assert f"{found.gap_50:.1f} points apart half the time" in sentence
    assert "400 simulated pairs of this board's 6 models over 40 tasks" in sentence
    assert "badge simulated" in sentence
