"""What `bench run` recomputes (`cli/incremental.py`), on a small graph with the project's
versioning rules and a real (temporary) Dagster instance: nothing when nothing changed, the
dependents of a new data version, code changes, failed attempts and blocking checks, and
files read outside the warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from bench_pipeline.assets.versions import outside_metadata
from bench_pipeline.cli.incremental import out_of_date, stretches

pytestmark = pytest.mark.assets

RATES = dg.AssetKey(["runs", "model_rates"])  # reads setups/pricing.toml
payload = {"version": "a", "fail": False, "check": True}


@dg.asset(key=["src", "raw"], code_version="1")
def raw() -> dg.MaterializeResult:
    return dg.MaterializeResult(data_version=dg.DataVersion(payload["version"]))


@dg.asset(key=["src", "live"], deps=[raw], code_version="1")
def live() -> None:
    if payload["fail"]:
        raise RuntimeError("a failing attempt")


@dg.asset(key=["registry", "models"], deps=[live], code_version="1")
def registry() -> None:
    return None


@dg.asset(key=RATES, deps=[live], code_version="1")
def rates() -> dg.MaterializeResult:
    with duckdb.connect() as conn:
        return dg.MaterializeResult(metadata=outside_metadata(RATES, conn))


@dg.asset_check(asset=registry, blocking=True)
def registry_sound() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=payload["check"])


def _definitions(registry_version: str = "1") -> dg.Definitions:
    changed = registry.with_attributes() if registry_version == "1" else dg.map_asset_specs(
        lambda spec: spec.replace_attributes(code_version=registry_version), [registry]
    )[0]  # fmt: skip
    return dg.Definitions(assets=[raw, live, changed, rates], asset_checks=[registry_sound])


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dg.DagsterInstance]:
    monkeypatch.setenv("BENCH_SETUPS", str(tmp_path / "setups"))
    (tmp_path / "setups").mkdir()
    (tmp_path / "setups" / "pricing.toml").write_text("# no rates\n")
    payload.update(version="a", fail=False, check=True)
    with dg.instance_for_test() as instance:
        yield instance


def _plan(instance: dg.DagsterInstance, definitions: dg.Definitions | None = None) -> dict:
    definitions = definitions or _definitions()
    keys = set(definitions.resolve_asset_graph().get_all_asset_keys()) - {raw.key}
    with duckdb.connect() as conn:
        plan = out_of_date(definitions, instance, conn, keys)
    return {key.to_user_string(): why for key, why in plan.reasons.items()}


def _run(instance: dg.DagsterInstance, *assets: dg.AssetsDefinition) -> None:
    selection = [a.key for a in assets]
    job = (
        _definitions()
        .resolve_implicit_global_asset_job_def()
        .get_subset(asset_selection=set(selection))
    )
    job.execute_in_process(instance=instance, raise_on_error=False)


def test_nothing_is_out_of_date_after_a_run_and_a_same_payload(instance) -> None:
    assert set(_plan(instance).values()) == {"never materialised"}
    _run(instance, raw, live, registry, rates)
    assert _plan(instance) == {}
    _run(instance, raw)  # fetched again: the same payload keeps its data version
    assert _plan(instance) == {}


def test_a_new_data_version_reaches_every_dependent(instance) -> None:
    _run(instance, raw, live, registry, rates)
    payload["version"] = "b"
    _run(instance, raw)
    assert _plan(instance) == {
        "src/live": "src/raw changed",
        "registry/models": "src/live is recomputed",
        "runs/model_rates": "src/live is recomputed",
    }


def test_code_failures_checks_and_outside_files(instance, tmp_path: Path) -> None:
    _run(instance, raw, live, registry, rates)
    assert _plan(instance, _definitions(registry_version="2")) == {
        "registry/models": "its code changed"
    }
    (tmp_path / "setups" / "pricing.toml").write_text('[[rate]]\napi_id = "x"\n')
    assert _plan(instance) == {"runs/model_rates": "what it reads beside its inputs changed"}
    _run(instance, rates)
    payload["check"] = False
    _run(instance, registry)
    assert _plan(instance) == {"registry/models": "its blocking check registry_sound failed"}
    payload.update(check=True, fail=True)
    _run(instance, registry)
    _run(instance, live)
    assert _plan(instance) == {
        "src/live": "its last attempt failed",
        "registry/models": "src/live is recomputed",
        "runs/model_rates": "src/live is recomputed",
    }


def test_stretches_never_span_a_key_not_wanted() -> None:
    assert stretches(["a", "b", "x", "c"], {"a", "b", "c"}) == [("a", "b"), ("c", "c")]


def test_bench_run_plans_what_lies_below_the_sources_after_them() -> None:
    """`cli.main.waves` on the project's own graph: a job's source stages (and what does not
    depend on them) first, then what lies below them, the site last and alone."""
    from bench_pipeline.assets.release import RELEASE_KEY
    from bench_pipeline.assets.site import SITE_KEY
    from bench_pipeline.cli.main import waves
    from bench_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = set(defs.resolve_job_def("grade_and_publish").asset_layer.executable_asset_keys)
    first, below, site = waves(graph, keys, SITE_KEY)
    assert {dg.AssetKey(["arena", "live"]), dg.AssetKey(["grading", "grades"])} <= first
    assert {dg.AssetKey(["registry", "models"]), RELEASE_KEY} <= below
    assert site == {SITE_KEY}
    assert first | below | site == keys and not first & below
    prepare = set(defs.resolve_job_def("prepare_inputs").asset_layer.executable_asset_keys)
    first, below = waves(graph, prepare, SITE_KEY)
    assert dg.AssetKey(["openrouter_models", "live"]) in first
    assert dg.AssetKey(["runs", "model_rates"]) in below
