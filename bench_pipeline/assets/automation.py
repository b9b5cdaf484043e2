"""Declarative automation: what follows a source refresh, a submission or a review by itself.

Every asset with dependencies, except the model runs (they may cost money: an operator or
`bench run` launches them), is materialised by Dagster's automation sensor when a dependency's
*data version* changed (or will be requested in the same tick, so a whole chain goes as one
run), once no dependency is missing or in progress. A source refresh whose payload is the live
one keeps its data version, so nothing follows it; a release with the same content keeps its
id, so the site is not rebuilt. Roots (raw fetches, the task bank) run on their schedules,
sensors or by hand.

The publishing assets (release, site, analyst copy) also wait for `PublishingOpen`: automation
publishes nothing while a `bench run` runs, nor past an upstream asset whose latest run failed
(see `bench_pipeline.assets.publishing`).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection

import dagster as dg

from bench_pipeline.assets.publishing import PublishingOpen

AUTOMATION_SENSOR = "automation"


def on_changed_inputs() -> dg.AutomationCondition:
    """Dagster's `eager` condition, triggered by a dependency's new data version rather than by
    any new materialisation of it."""
    # a dependency changed by a run that also ran this asset is handled already
    new_data = dg.AutomationCondition.data_version_changed() & ~(
        dg.AutomationCondition.executed_with_root_target()
    )
    changed = dg.AutomationCondition.any_deps_match(
        new_data | dg.AutomationCondition.will_be_requested()
    ).with_label("any_deps_changed")
    return (
        dg.AutomationCondition.eager()
        .replace("any_deps_updated", changed)
        .with_label("eager_on_changed_data")
    )


def with_automation(
    definitions: dg.Definitions,
    manual: Collection[dg.AssetKey],
    publishing: Collection[dg.AssetKey] = (),
) -> dg.Definitions:
    """`definitions` with `on_changed_inputs()` on every asset that has dependencies, is not
    in `manual` and declares no condition of its own (and `PublishingOpen` too on those in
    `publishing`), plus the sensor that evaluates them (running by default, every 30 seconds,
    in the code server, where `PublishingOpen` can read the BENCH_HOME)."""
    graph = definitions.resolve_asset_graph()
    partitioned = {k for k in graph.get_all_asset_keys() if graph.get(k).is_partitioned}
    condition = on_changed_inputs()

    def automated(spec: dg.AssetSpec) -> dg.AssetSpec:
        deps = {dep.asset_key for dep in spec.deps}
        if spec.automation_condition is not None or not deps or spec.key in manual:
            return spec
        # a partitioned dependency's data versions are per partition: any update counts
        chosen = dg.AutomationCondition.eager() if deps & partitioned else condition
        if spec.key in publishing:
            chosen = (chosen & PublishingOpen(publishing)).with_label(
                "eager_unless_publishing_blocked"
            )
        return spec.replace_attributes(automation_condition=chosen)

    with warnings.catch_warnings():  # a preview API, used here only
        warnings.simplefilter("ignore", dg.PreviewWarning)
        automated_definitions = definitions.map_asset_specs(func=automated)
    sensor = dg.AutomationConditionSensorDefinition(
        AUTOMATION_SENSOR,
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        use_user_code_server=True,  # `PublishingOpen` is Python of ours
        description=(
            "Materialises what a landed source refresh, submission or review changed: "
            "registry, indices, scores, release and site, without anyone launching a job. "
            "It publishes nothing while a `bench run` runs or past a failed upstream run."
        ),
    )
    return dg.Definitions.merge(automated_definitions, dg.Definitions(sensors=[sensor]))
