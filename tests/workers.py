"""How the suite is shared among pytest-xdist workers (``make test`` runs ``-n``; docs/adr/0033).

Each worker is a process with its own session: the root conftest's session fixtures (one
Azurite on OS-chosen ports) run once per worker, which is cheap and safe. A fixture shared
by more than one test that a folder's conftest or a module defines (the console's stack and
browser, the installed CLI's stack, the fuzzed host, the drift copy) must still start once:
every test that uses one such fixture is put in one group, and a worker runs a group from
start to end, so the fixture starts on that worker alone.

pytest-xdist's own ``--dist loadgroup`` carries a group in the test's id, which pytest 9.2's
structured ids no longer let it change (pytest-xdist issue 1386: the groups are silently
ignored). So each worker writes the groups it found to a file the controller named for it
(``pytest_configure_node``), and the controller's scheduler reads them.

Workers take groups in the order of the collection (``--no-loadscope-reorder``); groups with
a slow test come first, so that the long ones start early and the short ones fill the end.
Without xdist (a plain ``pytest tests/...``) nothing here changes anything.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent
SHARED_SCOPES = frozenset({"class", "module", "package", "session"})
GROUPS_FILE = "test_groups_file"  # the key in each worker's ``workerinput``
GROUPS_DIR = pytest.StashKey[Path]()


# -- in the controller ----------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    if _distributes_by_group(config):
        config.stash[GROUPS_DIR] = Path(tempfile.mkdtemp(prefix="pytest-groups-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(GROUPS_DIR, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    folder = node.config.stash.get(GROUPS_DIR, None)
    if folder is not None:
        node.workerinput[GROUPS_FILE] = str(folder / f"{node.gateway.id}.json")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``loadgroup``, with the groups the workers wrote (every worker writes the same ones)."""
    folder = config.stash.get(GROUPS_DIR, None)
    if folder is None:
        return None
    home: Path = folder
    from xdist.scheduler import LoadGroupScheduling  # only where xdist runs: a plain pytest needs no xdist

    class FixtureGroupScheduling(LoadGroupScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # scheduling starts once every worker has collected: the files are there
                self.groups = {}
                for path in sorted(home.glob("*.json")):
                    self.groups.update(json.loads(path.read_text(encoding="utf-8")))
            group = self.groups.get(nodeid)
            return super()._split_scope(nodeid) if group is None else group

    return FixtureGroupScheduling(config, log)


def _distributes_by_group(config: pytest.Config) -> bool:
    return (
        not hasattr(config, "workerinput")
        and bool(config.getoption("numprocesses", None))
        and config.getoption("dist", "no") == "loadgroup"
    )


# -- in each worker -------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)  # the marks before xdist reads them (for when it can use them again)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return
    root = TESTS.relative_to(config.rootpath).as_posix() + "/"
    groups = _Groups()
    for item in items:
        groups.add(item, _shared_fixture_homes(item, root))
    for item in items:
        group = groups.name(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(tryfirst=True)  # after deselection (-k, -m), before xdist sends the collection
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if not hasattr(config, "workerinput"):
        return
    named: dict[str, list[pytest.Item]] = {}
    for item in session.items:
        mark = item.get_closest_marker("xdist_group")
        named.setdefault(str(mark.args[0]) if mark else item.nodeid, []).append(item)
    ordered = sorted(named.values(), key=lambda members: not any(m.get_closest_marker("slow") for m in members))
    session.items[:] = [item for members in ordered for item in members]
    target = config.workerinput.get(GROUPS_FILE)
    if target is not None:
        groups = {item.nodeid: name for name, members in named.items() for item in members if name != item.nodeid}
        partial = Path(target).with_suffix(".partial")
        partial.write_text(json.dumps(groups), encoding="utf-8")
        partial.replace(target)


def _shared_fixture_homes(item: pytest.Item, root: str) -> list[str]:
    """Where each fixture the test uses that lives longer than a test is defined, below the root conftest."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    homes = []
    for name in info.names_closure:
        definitions = info.name2fixturedefs.get(name)
        if definitions and definitions[-1].scope in SHARED_SCOPES and definitions[-1].baseid.startswith(root):
            homes.append(definitions[-1].baseid)
    return homes


class _Groups:
    """Tests joined by a shared fixture home, transitively (a union-find over the homes)."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}
        self._of: dict[str, str] = {}

    def add(self, item: pytest.Item, homes: list[str]) -> None:
        if not homes:
            return
        for home in homes:
            self._parent.setdefault(home, home)
        for home in homes[1:]:
            self._parent[self._find(home)] = self._find(homes[0])
        self._of[item.nodeid] = homes[0]

    def name(self, item: pytest.Item) -> str | None:
        home = self._of.get(item.nodeid)
        return None if home is None else self._find(home)

    def _find(self, home: str) -> str:
        while self._parent[home] != home:
            self._parent[home] = self._parent[self._parent[home]]
            home = self._parent[home]
        return home
