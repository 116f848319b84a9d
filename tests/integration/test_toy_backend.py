"""A backend added in one folder (tests/support/toy_backend) is known everywhere, no other file changed.

The folder holds the package and its ``*.dist-info`` with a ``hastegeo.backends``
entry point, as ``pip install`` would leave it. Put on ``sys.path``, the toy is
valid in settings, its own settings are read, validated, checked for drift and
documented, it is routable, listed by ``GET /api/backends``, in the OpenAPI
enums, accepted by ``POST /api/jobs`` and by the CLI, and its adapter is built
with its own settings and given the job; off the path, none of that holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from api.openapi import openapi_document
from hastegeo.cli.main import build_parser
from hastegeo.compute.catalog import backend_names, descriptors
from hastegeo.runtime import get_runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import JobMessage
from hastegeo.utils.errors import ConfigurationError, InvalidJobError
from tests.drift.conftest import load_drift
from tests.integration.test_api import call  # the Functions app is indexed once per process

pytestmark = pytest.mark.azurite

TOY_FOLDER = Path(__file__).resolve().parents[1] / "support" / "toy_backend"
STORAGE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}


def _forget() -> None:
    descriptors.cache_clear()
    openapi_document.cache_clear()


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[Any]]:
    monkeypatch.syspath_prepend(str(TOY_FOLDER))
    _forget()
    from haste_toy_backend import ToyBackend

    ToyBackend.submitted.clear()
    yield ToyBackend
    _forget()


def test_without_the_folder_the_toy_is_unknown_everywhere() -> None:
    _forget()
    assert "toy" not in backend_names()
    with pytest.raises(ConfigurationError, match=r"HASTE_BACKENDS_ENABLED.*'toy'"):
        load_settings({**STORAGE, "HASTE_BACKENDS_ENABLED": "toy"})
    with pytest.raises(SystemExit):
        build_parser().parse_args(["submit", "--workload", "artifacts", "--project", "p1", "--backend", "toy"])
    assert "HASTE_TOY_WORKLOADS" not in load_drift().code_settings()
    # The toy's variables mean nothing without it, so a bad one stops nothing.
    assert "toy" not in load_settings({**STORAGE, "HASTE_TOY_WORKLOADS": "nonsense"}).backends


def test_the_toys_own_settings_join_the_apps_through_its_descriptor(toy: type[Any]) -> None:
    settings = load_settings({**STORAGE, "HASTE_TOY_WORKLOADS": "artifacts,imagery", "HASTE_TOY_QUEUE_LIMIT_S": "90"})
    own = settings.backend("toy")
    assert own.workloads(["artifacts", "imagery", "training"]) == {"artifacts", "imagery"}
    assert own.limits(["training"]) == {"training": "the toy runs artifacts, imagery only"}
    assert settings.queue_limit_s("toy") == 90
    assert load_settings(STORAGE).queue_limit_s("toy") == 60  # its default

    # Start-up validation names the toy's variables like any other.
    with pytest.raises(ConfigurationError, match=r"HASTE_TOY_WORKLOADS: .*not workloads: \['painting'\]"):
        load_settings({**STORAGE, "HASTE_TOY_WORKLOADS": "artifacts,painting"})
    with pytest.raises(ConfigurationError, match=r"toy is enabled \(HASTE_BACKENDS_ENABLED\) but HASTE_TOY_WORKLOADS"):
        load_settings({**STORAGE, "HASTE_BACKENDS_ENABLED": "toy", "HASTE_TOY_WORKLOADS": ","})

    # The drift check and the docs' settings table read the same declarations.
    declared = load_drift().code_settings()
    assert declared["HASTE_TOY_WORKLOADS"].section == "toy"
    assert declared["HASTE_TOY_WORKLOADS"].default == "artifacts"
    assert (
        declared["HASTE_TOY_QUEUE_LIMIT_S"].description == "A job waiting longer than this for the toy is moved on (s)."
    )


def test_the_toy_is_routed_listed_accepted_and_given_the_job(toy: type[Any], api_settings: Callable[..., None]) -> None:
    api_settings(HASTE_BACKENDS_ENABLED="local,toy")
    runtime = get_runtime()

    # Routing, with the reason it takes no other workload.
    assert runtime.deps.router.resolve("toy", "artifacts", "job-1") == "toy"
    status, listing, _ = call("list_backends", "GET", "/api/backends")
    assert status == 200
    (entry,) = [backend for backend in listing["backends"] if backend["name"] == "toy"]
    assert entry["workloads"] == ["artifacts"]
    assert set(entry["unavailable"].values()) == {"the toy runs artifacts only"}
    with pytest.raises(InvalidJobError, match="'toy' cannot run 'imagery' workloads: the toy runs artifacts only"):
        runtime.deps.router.resolve("toy", "imagery", "job-2")

    # The OpenAPI enums and the CLI take the name from the descriptor.
    schema = openapi_document()["components"]["schemas"]["JobRequest"]["properties"]["backend"]
    assert "toy" in json.dumps(schema)
    args = build_parser().parse_args(["submit", "--workload", "artifacts", "--project", "p1", "--backend", "toy"])
    assert args.backend == "toy"

    # The API accepts what the CLI would send, and the pipeline hands the job to the toy's adapter.
    runtime.blobs.get_container_client(runtime.settings.storage.inputs_container).upload_blob("p1/a.txt", b"alpha")
    request = {"workload": args.workload, "projectId": args.project, "backend": args.backend}
    request["inputs"] = [{"blob": "p1/a.txt"}]
    status, job, _ = call("submit_job", "POST", "/api/jobs", request)
    assert status == 202, job
    assert job["backend"] == "toy"
    runtime.submit.handle(JobMessage(job_id=job["id"], kind="submit"))
    stored = runtime.store.get(job["id"])
    assert stored.handle is not None
    assert stored.handle.backend == "toy"
    assert [spec.job_id for spec in toy.submitted.values()] == [job["id"]]
    adapter = runtime.registry.get("toy")
    assert isinstance(adapter, toy)
    assert adapter.settings is runtime.settings.backend("toy")  # its own section, and no other
