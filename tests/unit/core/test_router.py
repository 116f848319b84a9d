"""Routing: explicit choices validated, auto deterministic, weighted, and stable under removal."""

from __future__ import annotations

from collections import Counter

import pytest

from hastegeo.compute.router import ComputeRouter, RouteCandidate
from hastegeo.utils.errors import BackendUnavailableError

ALL = frozenset({"imagery", "training", "inference", "embedding", "artifacts"})


def router(**weights: float) -> ComputeRouter:
    return ComputeRouter({name: RouteCandidate(name, ALL, weight) for name, weight in weights.items()})


def test_explicit_choice_is_honoured() -> None:
    assert router(local=1, azure_batch=1).resolve("azure_batch", "imagery", "j1") == "azure_batch"


def test_explicit_choice_of_a_disabled_backend_is_refused() -> None:
    with pytest.raises(BackendUnavailableError, match="not enabled"):
        router(local=1).resolve("azure_ml", "imagery", "j1")


def test_explicit_choice_that_cannot_run_the_workload_is_refused() -> None:
    only_training = ComputeRouter({"azure_ml": RouteCandidate("azure_ml", frozenset({"training"}))})
    with pytest.raises(BackendUnavailableError, match="cannot run 'imagery'"):
        only_training.resolve("azure_ml", "imagery", "j1")


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
