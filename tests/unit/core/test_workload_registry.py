"""A workload is a folder (docs/adr/0037): the registry finds every folder of ``hastegeo.workloads``, and every
list of workload names (validation, OpenAPI, the CLI, the backends' settings) is derived from it.

The sixth workload here is ``tests/support/sixth_workload/haste_tilecount`` copied as the folder
``hastegeo/workloads/tilecount`` (a directory added to the package's path, as a new folder in the
source tree would be); ``tests/e2e/test_sixth_workload.py`` runs the same folder, installed, end to end.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

import hastegeo.workloads
from api.openapi import openapi_document
from hastegeo.cli.main import build_parser
from hastegeo.compute.azure_ml.settings import DEFAULT_COMPUTE
from hastegeo.compute.contract import BlobLocation
from hastegeo.models.job import JobRequest
from hastegeo.utils.errors import ConfigurationError
from hastegeo.workloads.processor import SpecInputs, processors
from hastegeo.workloads.registry import descriptors, forget, workload_names
from tests.support.imports import LIBRARY

BUILT_IN = ("imagery", "training", "inference", "embedding", "artifacts")
SIXTH = Path(__file__).resolve().parents[2] / "support" / "sixth_workload" / "haste_tilecount"
FOLDER_FILES = {"__init__.py", "params.py", "processor.py", "run.py", "__main__.py"}


def test_the_built_in_workloads_are_the_folders_in_their_order() -> None:
    assert workload_names() == BUILT_IN
    folders = {path.name for path in (LIBRARY / "workloads").iterdir() if path.is_dir() and path.name[0] not in "_."}
    assert folders == set(BUILT_IN)
    for name, descriptor in descriptors().items():
        assert descriptor.package == f"hastegeo.workloads.{name}"
        assert {path.name for path in (LIBRARY / "workloads" / name).glob("*.py")} >= FOLDER_FILES, name


def test_every_folder_of_the_package_is_a_package_that_the_wheel_holds() -> None:
    """setuptools' find_packages keeps only folders with an ``__init__.py``: ``_run`` and each workload."""
    for folder in (LIBRARY / "workloads").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__":
            assert (folder / "__init__.py").is_file(), folder


def test_the_names_are_derived_from_the_registry_everywhere() -> None:
    schema = openapi_document()["components"]["schemas"]["JobRequest"]
    assert schema["properties"]["workload"]["enum"] == list(BUILT_IN)
    assert len(schema["allOf"]) == len(BUILT_IN)
    assert tuple(DEFAULT_COMPUTE) == BUILT_IN
    assert set(processors()) == set(BUILT_IN)
    for unknown in ("tilecount", 5, None):  # refused as the Literal these names once were refused them
        with pytest.raises(ValidationError) as caught:
            JobRequest.model_validate({"workload": unknown, "projectId": "p1"})
        (error,) = caught.value.errors(include_url=False)
        assert error["type"] == "literal_error"
        assert error["msg"] == "Input should be 'imagery', 'training', 'inference', 'embedding' or 'artifacts'"


@pytest.fixture
def sixth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``tilecount`` as one more folder of ``hastegeo.workloads``; everything read again without it afterwards."""
    shutil.copytree(SIXTH, tmp_path / "tilecount")
    monkeypatch.setattr(hastegeo.workloads, "__path__", [*hastegeo.workloads.__path__, str(tmp_path)])
    forget()
    openapi_document.cache_clear()
    yield "tilecount"
    for name in [name for name in sys.modules if name.startswith("hastegeo.workloads.tilecount")]:
        del sys.modules[name]
    forget()
    openapi_document.cache_clear()


def test_a_sixth_folder_is_a_workload_with_no_other_file_changed(sixth: str) -> None:
    assert workload_names() == (*BUILT_IN, sixth)
    request = JobRequest.model_validate(
        {"workload": sixth, "projectId": "p1", "inputs": [{"blob": "p1/a.tif"}], "parameters": {"suffix": ".tif"}}
    )
    schemas = openapi_document()["components"]["schemas"]
    assert schemas["JobRequest"]["properties"]["workload"]["enum"][-1] == sixth
    assert "suffix" in schemas["TilecountParameters"]["properties"]
    assert build_parser().parse_args(["submit", "--workload", sixth, "--project", "p1"]).workload == sixth

    processor = processors()[sixth]
    processor.validate(request)
    from hastegeo.models.job import Job

    job = Job.model_validate(
        {
            **request.model_dump(by_alias=True),
            "id": "j1",
            "state": "queued",
            "requestedBackend": "auto",
            "backend": "local",
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
            "deadlineAt": "2026-01-02T00:00:00Z",
        }
    )
    where = SpecInputs(inputs_container="in", outputs_container="out", project_of={}.get)
    spec = processor.build_spec(job, where, BlobLocation(container="out", path="p1/j1"))
    assert spec.entrypoint == ("python", "-m", "hastegeo.workloads.tilecount")
    assert spec.env["HASTE_PARAMS_JSON"] == '{"suffix": ".tif"}'


def test_a_folder_that_names_another_workload_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(SIXTH, tmp_path / "tilecounter")
    monkeypatch.setattr(hastegeo.workloads, "__path__", [*hastegeo.workloads.__path__, str(tmp_path)])
    forget()
    try:
        with pytest.raises(ConfigurationError, match="folder 'tilecounter' declares the name 'tilecount'"):
            descriptors()
    finally:
        monkeypatch.undo()
        for name in [name for name in sys.modules if name.startswith("hastegeo.workloads.tilecounter")]:
            del sys.modules[name]
        forget()
    assert workload_names() == BUILT_IN
