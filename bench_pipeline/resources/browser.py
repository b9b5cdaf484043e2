"""The browser grading opens prototypes in: real Chromium, or recorded inspections offline."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field

from bench_pipeline.core import settings
from bench_pipeline.grading.browser import PrototypeInspector
from bench_pipeline.grading.browser_offline import RecordedInspector, RecordingInspector
from bench_pipeline.grading.browser_parent import ChromiumInspector

BROWSER_MODES = ("chromium", "offline")


class BrowserResource(dg.ConfigurableResource):
    """The prototype inspector for grading.

    - `chromium` (default): Debian's headless Chromium in a worker process with a hard
      deadline per page; with `recordings_dir` set, every inspection is also recorded there;
    - `offline`: the inspections recorded in `recordings_dir` replayed, deterministically and
      without starting any process; a page never recorded goes to a person (`inconclusive`).
    """

    mode: str = Field(default="chromium", description="chromium | offline.")
    recordings_dir: str | None = Field(
        default=None,
        description="Recorded inspections: where offline mode replays them from (default "
        "$BENCH_HOME/cache/browser) and where chromium mode also keeps them, when set.",
    )
    # 60 s, not 15: a page's inspection reloads it once per goal, and on a loaded 2-core
    # machine (two `bench run`s side by side) 15 s turned ordinary pages `inconclusive`, so
    # the same outputs graded differently from one home to the next.
    timeout_seconds: float = Field(
        default=60.0, gt=0, description="Chromium: the hard deadline on one page's inspection."
    )

    def recordings_path(self) -> Path:
        """Where the recorded inspections are."""
        if self.recordings_dir:
            return Path(self.recordings_dir)
        return settings.bench_home() / "cache" / "browser"

    def inspector(self) -> PrototypeInspector:
        """The inspector this configuration names.

        Raises:
            ValueError: `mode` is not one of `BROWSER_MODES`.
        """
        if self.mode == "offline":
            return RecordedInspector(self.recordings_path())
        if self.mode != "chromium":
            raise ValueError(f"browser mode must be one of {BROWSER_MODES}, not {self.mode!r}")
        chromium = ChromiumInspector(timeout_seconds=self.timeout_seconds)
        if self.recordings_dir:
            return RecordingInspector(chromium, Path(self.recordings_dir))
        return chromium
