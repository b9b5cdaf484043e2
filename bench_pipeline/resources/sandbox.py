"""Where grading runs the code of `unit_tests` answers (see `bench_pipeline.grading.sandbox`)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from bench_pipeline.grading.sandbox import BWRAP, JailedSandbox, OfflineSandbox, Sandbox


class SandboxResource(dg.ConfigurableResource):
    """The unit-test sandbox: the bubblewrap jail, or the offline one that runs nothing."""

    offline: bool = Field(
        default=False,
        description=(
            "Run no answer code: every unit-test check is inconclusive (for asset tests that "
            "must start no subprocess). Never a fallback for a jail that fails."
        ),
    )
    bwrap: str = Field(default=BWRAP, description="The bubblewrap executable.")

    def sandbox(self) -> Sandbox:
        return OfflineSandbox({}) if self.offline else JailedSandbox(self.bwrap)
