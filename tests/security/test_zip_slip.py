"""The artifacts workload writes only safe zip member names, and ``Workdir.output_path`` cannot be escaped."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from hastegeo.workloads._run.harness import PARAMS_VARIABLE, WORKDIR_VARIABLE, Workdir, WorkloadError, run_main
from hastegeo.workloads.artifacts.run import WORKLOAD, package

ODD_NAMES = [
    "plain.txt",
    "with space.txt",
    " leading space.txt",
    "ünïcødé-文件.txt",
    "emoji-🛰.bin",
    "nested/deeper/still/file.txt",
    "nested/..hidden/x.txt",
    "dots...txt",
    "..startswithdots",
    "back\\slash.txt",
    "colon:name.txt",
    "-dash.txt",
]
# Never a member name: the run fails naming the file instead (see the test below).
CONTROL_NAMES = ["new\nline.txt", "tab\there.txt", "bell\x07.txt"]


def _stage(root: Path, names: list[str]) -> Workdir:
    workdir = Workdir(root).prepare()
    for index, name in enumerate(names):
        path = workdir.inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"content {index}".encode())
    return workdir


def _unsafe(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    return (
        name.startswith(("/", "\\"))
        or ".." in parts
        or "" in parts
        or (len(name) > 1 and name[1] == ":")
        or "\x00" in name
    )


def test_artifacts_zip_members_are_relative_and_never_climb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = _stage(tmp_path / "job", ODD_NAMES)
    # A symlink to a folder outside the workdir must not smuggle an absolute or climbing member name in.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours")
    os.symlink(outside, workdir.inputs / "link-out")
    monkeypatch.setenv(WORKDIR_VARIABLE, str(workdir.root))
    monkeypatch.setenv(PARAMS_VARIABLE, json.dumps({}))

    assert run_main(WORKLOAD, package) == 0

    with zipfile.ZipFile(workdir.outputs / "artifacts.zip") as archive:
        names = archive.namelist()
        for info in archive.infolist():
            assert not _unsafe(info.filename), info.filename
        assert sorted(archive.read(name) for name in names)  # every member reads back
    expected = {name for name in ODD_NAMES}
    assert expected <= set(names), set(names) ^ expected
    assert all(not _unsafe(name) for name in names), names
    manifest = json.loads((workdir.outputs / f"{WORKLOAD}_manifest.json").read_text())
    assert all(not _unsafe(entry["name"]) for entry in manifest["archived"]), manifest["archived"]


@pytest.mark.parametrize("name", CONTROL_NAMES)
def test_a_member_name_with_a_control_character_fails_the_run_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    workdir = _stage(tmp_path / "job", ["plain.txt", f"nested/{name}"])
    monkeypatch.setenv(WORKDIR_VARIABLE, str(workdir.root))
    monkeypatch.setenv(PARAMS_VARIABLE, json.dumps({}))
    assert run_main(WORKLOAD, package) == 2
    assert f"input {'nested/' + name!r} has a control character in its name" in capsys.readouterr().err
    assert not (workdir.outputs / "artifacts.zip").exists()
    assert not (workdir.outputs / f"{WORKLOAD}_manifest.json").exists()


def test_extracting_the_archive_stays_inside_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = _stage(tmp_path / "job", ODD_NAMES)
    monkeypatch.setenv(WORKDIR_VARIABLE, str(workdir.root))
    assert run_main(WORKLOAD, package) == 0
    target = (tmp_path / "extract").resolve()
    with zipfile.ZipFile(workdir.outputs / "artifacts.zip") as archive:
        for name in archive.namelist():
            assert (target / name).resolve().is_relative_to(target), name


@pytest.mark.parametrize(
    "name",
    ["../x", "../../etc/passwd", "/etc/passwd", "/tmp/x", "a/../../x", "..", "../outputs-evil/x", "a/b/../../../x"],
)
def test_output_path_refuses_names_that_escape_outputs(tmp_path: Path, name: str) -> None:
    workdir = Workdir(tmp_path / "job").prepare()
    with pytest.raises(WorkloadError):
        workdir.output_path(name)


def test_output_path_refuses_a_symlink_that_leads_out(tmp_path: Path) -> None:
    workdir = Workdir(tmp_path / "job").prepare()
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workdir.outputs / "escape")
    with pytest.raises(WorkloadError):
        workdir.output_path("escape/x.txt")


@pytest.mark.parametrize("name", ["artifacts.zip", "nested/dir/x.tif", "a/../b.txt", "with space.txt"])
def test_output_path_allows_names_that_stay_inside(tmp_path: Path, name: str) -> None:
    workdir = Workdir(tmp_path / "job").prepare()
    assert workdir.output_path(name).is_relative_to(workdir.outputs.resolve())
