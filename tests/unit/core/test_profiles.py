"""Compute profiles (ADR 0043): declaring them, what each backend offers, routing by them, their bounds. Pure."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from hastegeo.compute.azure_batch.settings import BatchSettings
from hastegeo.compute.azure_ml.settings import AmlSettings
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec
from hastegeo.compute.local.settings import LocalSettings
from hastegeo.compute.router import ComputeRouter, RouteCandidate
from hastegeo.pipeline.profile import with_profile
from hastegeo.profiles import DEFAULT_PROFILE, FINISH_GRACE_S, SPOT_RERUNS, Profile, Tier, allowed
from hastegeo.settings.fields import load_section
from hastegeo.utils.errors import ConfigurationError, InvalidJobError

ALL = frozenset({"imagery", "training", "inference", "embedding", "artifacts"})
BATCH = {
    "BATCH_ACCOUNT_URL": "https://acct.westeurope.batch.azure.com",
    "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/identity",
    "BATCH_POOLS": "imagery=cpu,training=gpu,inference=gpu",
    "BATCH_IMAGES": "imagery=img,training=img,inference=img",
}
SPOT = {"pool": "gpu-t4-spot", "tier": "spot", "maxRunS": 14400, "workloads": ["training", "inference"]}
SMALL = {"pool": "cpu-small", "maxRunS": 1800, "workloads": ["imagery", "embedding"], "description": "small areas"}


def batch(profiles: dict[str, Any]) -> BatchSettings:
    return load_section(BatchSettings, {**BATCH, "BATCH_PROFILES": json.dumps(profiles)})


def test_declared_profiles_are_offered_with_default_to_the_workloads_the_backend_can_run() -> None:
    offered = batch({"gpu-t4-spot": SPOT, "cpu-small": SMALL}).profiles(ALL)
    assert list(offered) == [DEFAULT_PROFILE, "gpu-t4-spot", "cpu-small"]
    assert offered[DEFAULT_PROFILE].workloads == {"imagery", "training", "inference"}
    assert offered[DEFAULT_PROFILE].max_run_s is None
    spot = offered["gpu-t4-spot"]
    assert (spot.tier, spot.max_run_s, spot.runs_on) == (Tier.SPOT, 14400, "pool gpu-t4-spot")
    assert spot.workloads == {"training", "inference"}
    # embedding has no image on this Batch account: the profile cannot give it one.
    assert offered["cpu-small"].workloads == {"imagery"}
    assert allowed(offered, "training") == ["default", "gpu-t4-spot"]
    assert allowed(offered, "embedding") == []


@pytest.mark.parametrize(
    ("profiles", "message"),
    [
        ({"gpu-t4-spot": {**SPOT, "tier": "cheap"}}, "BATCH_PROFILES.gpu-t4-spot.tier: Input should be"),
        ({"gpu-t4-spot": {**SPOT, "workloads": ["trainng"]}}, "BATCH_PROFILES.gpu-t4-spot.workloads: unknown"),
        ({"gpu-t4-spot": {**SPOT, "maxRunS": 0}}, "BATCH_PROFILES.gpu-t4-spot.maxRunS: Input should be greater"),
        ({"gpu-t4-spot": {k: v for k, v in SPOT.items() if k != "pool"}}, "BATCH_PROFILES.gpu-t4-spot.pool: Field"),
        ({"gpu-t4-spot": {**SPOT, "poool": "x"}}, "BATCH_PROFILES.gpu-t4-spot.poool: Extra inputs"),
        ({"default": SPOT}, "BATCH_PROFILES: 'default' is the implicit profile"),
        ({"GPU": SPOT}, "BATCH_PROFILES: profile name 'GPU': 1-40 lowercase"),
    ],
)
def test_a_bad_profile_fails_start_up_naming_the_variable_and_the_profile(profiles: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match="Invalid settings: ") as raised:
        batch(profiles)
    assert message in str(raised.value)


def test_a_profiles_variable_that_is_not_a_json_object_says_so() -> None:
    for text, said in (("{", "not JSON"), ("[1]", "expected a JSON object")):
        with pytest.raises(ConfigurationError, match=said):
            load_section(BatchSettings, {**BATCH, "BATCH_PROFILES": text})
    assert load_section(BatchSettings, {**BATCH, "BATCH_PROFILES": " "}).compute_profiles == {}


def test_the_local_backend_has_no_spot_profiles() -> None:
    with pytest.raises(ConfigurationError, match=r"HASTE_LOCAL_PROFILES\.fast\.tier: the local backend has no spot"):
        load_section(
            LocalSettings,
            {"HASTE_LOCAL_PROFILES": json.dumps({"fast": {"tier": "spot", "maxRunS": 60, "workloads": ["imagery"]}})},
        )
    local = load_section(
        LocalSettings, {"HASTE_LOCAL_PROFILES": json.dumps({"fast": {k: v for k, v in SMALL.items() if k != "pool"}})}
    )
    assert local.profiles(ALL)["fast"].runs_on == "a local process"


def test_batch_places_a_profile_on_its_pool_and_default_on_the_workloads() -> None:
    settings = batch({"gpu-t4-spot": SPOT})
    assert settings.placement("training", None) == ("gpu", Tier.DEDICATED)
    assert settings.placement("training", "default") == ("gpu", Tier.DEDICATED)
    assert settings.placement("training", "gpu-t4-spot") == ("gpu-t4-spot", Tier.SPOT)
    assert settings.placement("training", "gone") == ("", Tier.DEDICATED)  # the adapter refuses it, naming it


def test_azure_ml_places_a_profile_on_its_compute_with_its_shape_and_tier() -> None:
    declared = {**SPOT, "compute": "gpu-cluster", "instanceType": "Standard_NC4as_T4_v3", "instanceCount": 2}
    del declared["pool"]
    settings = AmlSettings.model_validate({"AML_PROFILES": json.dumps({"gpu-t4-spot": declared})})
    placement = settings.placement("training", "gpu-t4-spot")
    assert (placement.compute, placement.instance_type, placement.instance_count) == (
        "gpu-cluster",
        declared["instanceType"],
        2,
    )
    assert placement.tier is Tier.SPOT
    assert settings.placement("training", None).compute == "haste-gpu"  # AML_COMPUTE's default
    assert settings.placement("training", None).instance_type is None
    assert settings.profiles(ALL)["gpu-t4-spot"].runs_on == "compute gpu-cluster (Standard_NC4as_T4_v3 x 2)"


def test_a_profile_sets_the_run_time_limit_and_bounds_the_pipeline_deadline() -> None:
    default = Profile(DEFAULT_PROFILE, Tier.DEDICATED, ALL, "pool")
    assert default.time_limit_s(3600) == 3600
    assert default.run_deadline_s(queue_limit_s=1800, default_deadline_s=86400) == 86400
    long = Profile("long", Tier.DEDICATED, ALL, "pool", max_run_s=3 * 86400)
    assert long.time_limit_s(3600) == 3 * 86400
    assert long.run_deadline_s(1800, 86400) == 1800 + 3 * 86400 + FINISH_GRACE_S  # past the global deadline
    spot = Profile("spot", Tier.SPOT, ALL, "pool", max_run_s=600)
    assert spot.run_deadline_s(1800, 86400) == 1800 + (1 + SPOT_RERUNS) * 600 + FINISH_GRACE_S  # requeued runs


def test_with_profile_names_a_declared_profile_in_the_spec_and_leaves_default_alone() -> None:
    spec = ComputeJobSpec(
        job_id="j1",
        name="j1",
        workload="training",
        entrypoint=("python",),
        output=BlobLocation(container="c", path="p"),
    )
    assert with_profile(spec, Profile(DEFAULT_PROFILE, Tier.DEDICATED, ALL, "pool")) is spec
    declared = with_profile(spec, Profile("gpu-t4-spot", Tier.SPOT, ALL, "pool", max_run_s=7200))
    assert (declared.profile, declared.time_limit_s) == ("gpu-t4-spot", 7200)
    # Part of the fingerprint: the same job under another profile is another submission.
    assert declared.fingerprint() != spec.fingerprint()
    assert not declared.is_same_submission(spec.fingerprint())


def profiled_router(**weights: float) -> ComputeRouter:
    offers = {
        "local": {"default": ALL, "cpu-small": frozenset({"imagery"})},
        "azure_batch": {"default": ALL, "cpu-small": frozenset({"imagery"}), "gpu-t4-spot": frozenset({"training"})},
        "azure_ml": {"default": ALL, "gpu-t4": frozenset({"training"})},
    }
    return ComputeRouter(
        {name: RouteCandidate(name, ALL, weight, profiles=offers[name]) for name, weight in weights.items()}
    )


def test_an_explicit_backend_that_does_not_offer_the_profile_is_a_bad_profile_listing_the_allowed() -> None:
    router = profiled_router(local=1, azure_batch=1, azure_ml=1)
    assert router.resolve("azure_batch", "training", "j1", "gpu-t4-spot") == "azure_batch"
    with pytest.raises(InvalidJobError) as raised:
        router.resolve("local", "training", "j1", "gpu-t4-spot")
    assert raised.value.field == "profile"
    assert str(raised.value) == (
        "profile: 'gpu-t4-spot' is not offered to 'training' workloads on local; allowed: default"
    )
    with pytest.raises(InvalidJobError, match=r"allowed: default, gpu-t4-spot$"):
        router.resolve("azure_batch", "training", "j1", "cpu-small")  # offered here, not to training


def test_auto_routes_only_to_backends_that_offer_the_profile() -> None:
    router = profiled_router(local=1, azure_batch=1, azure_ml=1)
    chosen = Counter(router.resolve("auto", "training", f"job-{i}", "gpu-t4-spot") for i in range(60))
    assert chosen == {"azure_batch": 60}
    chosen = Counter(router.resolve("auto", "imagery", f"job-{i}", "cpu-small") for i in range(60))
    assert set(chosen) == {"local", "azure_batch"}
    assert set(Counter(router.resolve("auto", "imagery", f"job-{i}") for i in range(60))) == {
        "local",
        "azure_batch",
        "azure_ml",
    }


def test_auto_with_a_profile_no_backend_offers_lists_every_profile_the_workload_may_use() -> None:
    router = profiled_router(local=1, azure_batch=1, azure_ml=1)
    with pytest.raises(InvalidJobError) as raised:
        router.resolve("auto", "training", "j1", "gpu-a100")
    assert raised.value.field == "profile"
    assert str(raised.value).endswith("on any enabled backend; allowed: default, gpu-t4, gpu-t4-spot")
    assert router.allowed_profiles("imagery") == ["default", "cpu-small"]
    assert router.allowed_profiles("training", "azure_ml") == ["default", "gpu-t4"]


def test_fail_over_ranks_only_the_backends_that_offer_the_profile() -> None:
    router = profiled_router(local=1, azure_batch=1, azure_ml=1)
    for index in range(20):
        assert router.ranking("imagery", f"job-{index}", "cpu-small") in (
            ["local", "azure_batch"],
            ["azure_batch", "local"],
        )
        assert router.ranking("training", f"job-{index}", "gpu-t4") == ["azure_ml"]


def test_a_candidate_without_profiles_offers_only_default() -> None:
    plain = RouteCandidate("local", ALL)
    assert plain.offers("imagery", DEFAULT_PROFILE)
    assert not plain.offers("imagery", "cpu-small")
    assert plain.allowed_profiles("imagery") == ["default"]


def test_the_operators_examples_in_docs_load_as_documented() -> None:
    """docs/profiles.md's example variables are valid settings, and say what the doc says they offer."""
    import re
    import shlex
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "profiles.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None
    values = {
        name: shlex.split(value)[0] for name, value in re.findall(r"^([A-Z_]+)=('.*?')", block.group(1), re.S | re.M)
    }
    assert set(values) == {"BATCH_PROFILES", "AML_PROFILES", "HASTE_LOCAL_PROFILES"}
    offered = batch(json.loads(values["BATCH_PROFILES"])).profiles(ALL)
    assert offered["gpu-t4-spot"].tier is Tier.SPOT
    aml = AmlSettings.model_validate({"AML_PROFILES": values["AML_PROFILES"]})
    assert aml.placement("training", "gpu-t4-spot").instance_type == "Standard_NC4as_T4_v3"
    local = load_section(LocalSettings, {"HASTE_LOCAL_PROFILES": values["HASTE_LOCAL_PROFILES"]})
    assert set(local.compute_profiles) == {"cpu-small"}


def test_a_job_whose_profile_the_settings_no_longer_offer_fails_at_submit_naming_profile() -> None:
    from datetime import UTC, datetime

    from hastegeo.models.job import Job
    from hastegeo.models.states import JobState
    from hastegeo.pipeline.profile import job_profile
    from hastegeo.settings.load import load_settings

    env = {"AzureWebJobsStorage": "UseDevelopmentStorage=true", "HASTE_BACKENDS_ENABLED": "azure_batch", **BATCH}
    now = datetime(2026, 12, 1, tzinfo=UTC)
    fields = {"id": "j1", "projectId": "p1", "workload": "training", "state": JobState.QUEUED}
    job = Job.model_validate(
        {**fields, "requestedBackend": "auto", "backend": "azure_batch", "profile": "gpu-t4-spot"}
        | {"createdAt": now, "updatedAt": now, "deadlineAt": now}
    )
    declared = load_settings({**env, "BATCH_PROFILES": json.dumps({"gpu-t4-spot": SPOT})})
    assert job_profile(declared, job).tier is Tier.SPOT
    with pytest.raises(InvalidJobError, match="azure_batch no longer offers 'gpu-t4-spot'") as raised:
        job_profile(load_settings(env), job)
    assert raised.value.field == "profile"
    plain = job.model_copy(update={"profile": DEFAULT_PROFILE})
    assert job_profile(load_settings(env), plain).name == DEFAULT_PROFILE
