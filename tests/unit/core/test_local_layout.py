"""The local backend's layout: what admission reads of each waiting job."""

from __future__ import annotations

from pathlib import Path

from hastegeo.compute.local_node.layout import LocalLayout


def queued(layout: LocalLayout, name: str, project: str) -> None:
    layout.state(name).mkdir(parents=True)
    layout.join_queue(name, project)


def test_a_jobs_project_is_read_once_and_remembered(tmp_path: Path) -> None:
    layout = LocalLayout(tmp_path).ensure()
    queued(layout, "haste-a", "p1")
    assert layout.project_of("haste-a") == "p1"
    (layout.state("haste-a") / "project").unlink()  # a second read would find nothing
    assert layout.project_of("haste-a") == "p1"


def test_a_job_not_queued_yet_is_asked_again(tmp_path: Path) -> None:
    layout = LocalLayout(tmp_path).ensure()
    assert layout.project_of("haste-b") == ""
    queued(layout, "haste-b", "p2")
    assert layout.project_of("haste-b") == "p2"
    assert layout.running_per_project() == {}  # nothing holds a slot yet
