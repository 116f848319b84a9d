"""Inputs linked into ``inputs/`` (how Azure ML stages them: each input is mounted elsewhere and linked in).

The workloads must find files inside linked folders and accept a parameter that names a linked
file, while a name that climbs out of ``inputs/`` stays refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hastegeo.workloads._run.harness import Workdir, WorkloadError, iter_files
from hastegeo.workloads._run.params import default_raster, default_vector, input_file


@pytest.fixture
def linked(tmp_path: Path) -> Workdir:
    mounts = tmp_path / "mnt"
    (mounts / "job-a" / "outputs").mkdir(parents=True)
    (mounts / "job-a" / "outputs" / "imagery.tif").write_bytes(b"II*\x00")
    (mounts / "labels.geojson").write_text("{}")
    workdir = Workdir(tmp_path / "job").prepare()
    (workdir.inputs / "job-a").symlink_to(mounts / "job-a", target_is_directory=True)
    (workdir.inputs / "labels.geojson").symlink_to(mounts / "labels.geojson")
    (tmp_path / "secret.txt").write_text("not an input")
    return workdir


def test_files_inside_linked_folders_are_listed(linked: Workdir) -> None:
    names = [path.relative_to(linked.inputs).as_posix() for path in iter_files(linked.inputs)]
    assert names == ["job-a/outputs/imagery.tif", "labels.geojson"]


def test_defaults_find_linked_inputs(linked: Workdir) -> None:
    assert default_raster(linked, None).name == "imagery.tif"
    assert default_vector(linked, None, "labels", "labels.geojson").name == "labels.geojson"


def test_a_parameter_may_name_a_linked_file(linked: Workdir) -> None:
    assert input_file(linked, "labels.geojson", "labels").read_text() == "{}"
    assert input_file(linked, "job-a/outputs/imagery.tif", "raster").read_bytes().startswith(b"II*")


@pytest.mark.parametrize("name", ["../secret.txt", "job-a/../../secret.txt", "/etc/hostname"])
def test_a_name_outside_inputs_is_still_refused(linked: Workdir, name: str) -> None:
    with pytest.raises(WorkloadError, match="outside inputs/"):
        input_file(linked, name, "labels")
