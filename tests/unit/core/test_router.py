"""Routing: explicit choices validated, auto deterministic, weighted, and stable under removal."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from hastegeo.compute.router import ComputeRouter, RouteCandidate
from hastegeo.utils.errors import BackendUnavailableError, InvalidJobError

ALL = frozenset({"imagery", "training", "inference", "embedding", "artifacts"})


def router(**weights: float) -> ComputeRouter:
    return ComputeRouter({name: RouteCandidate(name, ALL, weight) for name, weight in weights.items()})


def test_explicit_choice_is_honoured() -> None:
    assert router(local=1, azure_batch=1).resolve("azure_batch", "imagery", "j1") == "azure_batch"


def test_explicit_choice_of_a_disabled_backend_is_refused() -> None:
    with pytest.raises(BackendUnavailableError, match="not enabled"):
        router(local=1).resolve("azure_ml", "imagery", "j1")


def test_explicit_choice_that_cannot_run_the_workload_is_a_bad_backend_field_with_the_reason() -> None:
    only_training = ComputeRouter({"azure_ml": RouteCandidate("azure_ml", frozenset({"training"}))})
    with pytest.raises(InvalidJobError, match="cannot run 'imagery'") as raised:
        only_training.resolve("azure_ml", "imagery", "j1")
    assert raised.value.field == "backend"
    assert str(raised.value).endswith("it is configured for: training")
    no_image = ComputeRouter(
        {"azure_ml": RouteCandidate("azure_ml", frozenset(), unable=dict.fromkeys(ALL, "AML_IMAGE is empty"))}
    )
    with pytest.raises(InvalidJobError) as raised:
        no_image.resolve("azure_ml", "training", "j1")
    assert str(raised.value) == "backend: 'azure_ml' cannot run 'training' workloads: AML_IMAGE is empty"


def test_auto_never_routes_to_a_backend_that_cannot_run_the_job_and_says_why_none_can() -> None:
    refused = dict.fromkeys(ALL, "refused inside Azure Functions; set HASTE_LOCAL_ALLOW_IN_AZURE=true")
    mixed = ComputeRouter(
        {
            "local": RouteCandidate("local", frozenset(), 100, unable=refused),
            "azure_batch": RouteCandidate(
                "azure_batch", frozenset({"imagery"}), unable={"training": "BATCH_POOLS names no pool for it"}
            ),
        }
    )
    assert {mixed.resolve("auto", "imagery", f"job{i}") for i in range(100)} == {"azure_batch"}
    with pytest.raises(BackendUnavailableError) as raised:
        mixed.resolve("auto", "training", "j")
    assert str(raised.value) == (
        "No enabled backend can run 'training' workloads (azure_batch: BATCH_POOLS names no pool for it; "
        "local: refused inside Azure Functions; set HASTE_LOCAL_ALLOW_IN_AZURE=true)"
    )


def test_a_candidate_says_why_it_takes_nothing_once_per_reason() -> None:
    assert RouteCandidate("local", ALL).takes_nothing_because is None
    refused = RouteCandidate("local", frozenset(), unable=dict.fromkeys(ALL, "refused here"))
    assert refused.takes_nothing_because == "refused here"
    mixed = RouteCandidate("azure_batch", frozenset(), unable={"imagery": "no pool", "training": "no image"})
    assert mixed.takes_nothing_because == "no pool; no image"
    assert RouteCandidate("x", frozenset()).takes_nothing_because == "it is configured for no workload"


def test_auto_skips_backends_that_cannot_run_the_workload() -> None:
    mixed = ComputeRouter(
        {
            "local": RouteCandidate("local", frozenset({"artifacts"})),
            "azure_ml": RouteCandidate("azure_ml", frozenset({"training"}), 100),
        }
    )
    assert {mixed.resolve("auto", "artifacts", f"job{i}") for i in range(50)} == {"local"}
    with pytest.raises(BackendUnavailableError, match="No enabled backend"):
        mixed.resolve("auto", "imagery", "j")


def test_auto_is_deterministic_per_job() -> None:
    first = router(local=1, azure_batch=2, azure_ml=3)
    second = router(azure_ml=3, local=1, azure_batch=2)  # order of definition does not matter
    for i in range(200):
        assert first.resolve("auto", "imagery", f"job-{i}") == second.resolve("auto", "imagery", f"job-{i}")


def test_auto_distribution_follows_weights() -> None:
    weighted = router(local=1, azure_batch=3)
    counts = Counter(weighted.resolve("auto", "imagery", f"job-{i}") for i in range(8000))
    share = counts["azure_batch"] / 8000
    assert 0.72 < share < 0.78  # expected 0.75; the bound is ~6 standard deviations


def test_auto_shares_follow_weights_among_more_than_two_backends() -> None:
    """Each backend's share is its weight over the total. With two backends a score that ranked by
    weight times the hash's exponential would share the same; with four it gives the heavy one 58 %."""
    weighted = router(a=1, b=1, c=1, d=3)
    counts = Counter(weighted.resolve("auto", "imagery", f"job-{i}") for i in range(8000))
    assert 0.47 < counts["d"] / 8000 < 0.53  # expected 0.5; the bound is ~5 standard deviations


def test_removing_a_backend_moves_only_its_jobs() -> None:
    before = router(local=1, azure_batch=1, azure_ml=1)
    after = router(local=1, azure_batch=1)
    moved = 0
    for i in range(3000):
        job = f"job-{i}"
        old, new = before.resolve("auto", "imagery", job), after.resolve("auto", "imagery", job)
        if old != "azure_ml":
            assert new == old
        else:
            moved += 1
    assert 800 < moved < 1200  # about a third lived on the removed backend


def test_auto_read_from_a_request_is_auto_whatever_string_object_holds_it() -> None:
    """A request's ``backend`` is a string parsed from JSON, never the literal's object: compared by value."""
    parsed = "".join(["au", "to"])
    assert router(local=1).resolve(parsed, "imagery", "j1") == "local"


def test_the_candidates_are_a_mapping_by_name() -> None:
    assert set(router(local=1, azure_batch=2).candidates) == {"local", "azure_batch"}


def test_auto_ranks_every_positive_weight_and_no_other() -> None:
    """A weight below one still takes its share; zero or less takes none (settings allow only positive ones)."""
    ranked = router(local=0.5, azure_batch=0, azure_ml=-1).ranking("imagery", "j1")
    assert ranked == ["local"]


def test_a_backend_named_before_auto_in_sort_order_is_still_an_explicit_choice() -> None:
    with pytest.raises(BackendUnavailableError, match="not enabled"):
        router(local=1).resolve("aks", "imagery", "j1")


def test_a_candidate_is_immutable_and_weighs_one_unless_told() -> None:
    """Shared by every request of a worker, so frozen; 1 is the weight the settings document as the default."""
    candidate = RouteCandidate("local", ALL)
    assert candidate.weight == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        candidate.weight = 2.0  # type: ignore[misc]
