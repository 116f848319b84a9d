"""A backend added in one folder (tests/support/toy_backend) is known everywhere, no other file changed.

The folder holds the package and its ``*.dist-info`` with a ``hastegeo.backends``
entry point, as ``pip install`` would leave it. Put on ``sys.path``, the toy is
valid in settings, routable, listed by ``GET /api/backends``, in the OpenAPI
enums, accepted by ``POST /api/jobs`` and by the CLI, and its adapter is built
and given the job; off the path, none of that holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from api.openapi import openapi_document
from hastegeo.cli.main import build_parser
from hastegeo.compute.registry import backend_names, descriptors
from hastegeo.config import load_settings
from hastegeo.runtime import get_runtime
from hastegeo.store.queues import JobMessage
from hastegeo.utils.errors import ConfigurationError, InvalidJobError
from tests.integration.test_api import call  # the Functions app is indexed once per process

pytestmark = pytest.mark.azurite

TOY_FOLDER = Path(__file__).resolve().parents[1] / "support" / "toy_backend"


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
        load_settings({"AzureWebJobsStorage": "UseDevelopmentStorage=true", "HASTE_BACKENDS_ENABLED": "toy"})
    with pytest.raises(SystemExit):
        build_parser().parse_args(["submit", "--workload", "artifacts", "--project", "p1", "--backend", "toy"])


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
    assert isinstance(runtime.registry.get("toy"), toy)
