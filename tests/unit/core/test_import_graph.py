"""Imports go one way between settings, backends, models and telemetry (docs/adr/0029).

``hastegeo.settings.app`` holds the app's own sections and imports nothing from
``hastegeo.compute``; each backend declares its section in its folder and names
it in its descriptor; :mod:`hastegeo.settings.load` composes the two from above. The
graph read here holds every import a module can make: at module level, inside a
function, under ``TYPE_CHECKING`` and through ``importlib.import_module`` with a
literal name, so a cycle hidden by a deferred import is still a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.support.imports import LIBRARY, imported_names, modules_loaded_by, package_of

# The floors below the pipeline whose modules must import one another without a cycle.
FLOORS = ("auth", "settings", "compute", "models", "telemetry", "utils", "workloads")
# Cycles that stay inside one package and exist only for type hints (``if TYPE_CHECKING``).
TYPE_ONLY = [
    ["hastegeo.compute.contract", "hastegeo.compute.fingerprint"],
    ["hastegeo.models.changes", "hastegeo.models.job"],
]


def module_name(path: Path) -> str:
    parts = path.relative_to(LIBRARY.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module → the library modules it imports, importing a module counting as importing its parent packages."""
    paths = {module_name(path): path for path in LIBRARY.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets: set[str] = set()
        for imported in imported_names(path, package_of(path) if path.name != "__init__.py" else name):
            while imported and imported not in paths:  # ``from package import name`` names a module or an object
                imported = imported.rpartition(".")[0]
            parents = imported.split(".")
            targets |= {".".join(parents[:i]) for i in range(2, len(parents) + 1)}
        graph[name] = {target for target in targets if target != name and not name.startswith(f"{target}.")}
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def reachable(graph: Mapping[str, Iterable[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def on_floors(name: str) -> bool:
    return name.split(".")[1] in FLOORS if name.count(".") else False


def test_the_floors_below_the_pipeline_import_one_another_without_a_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the whole library, not a corner of it
    floors = {name: {t for t in targets if on_floors(t)} for name, targets in graph.items() if on_floors(name)}
    assert cycles(floors) == TYPE_ONLY


def test_the_apps_settings_and_their_building_blocks_reach_no_backend() -> None:
    graph = import_graph()
    assert graph["hastegeo.settings"] == set()  # the package's own module: a backend's section imports it
    for start in ("hastegeo.settings.app", "hastegeo.settings.fields"):
        assert sorted(name for name in reachable(graph, start) if name.startswith("hastegeo.compute")) == [], start
    # A backend's folder reaches its own settings and never the app's: its descriptor carries the section.
    for backend in ("local", "azure_batch", "azure_ml"):
        assert "hastegeo.settings.app" not in reachable(graph, f"hastegeo.compute.{backend}"), backend


def test_in_a_fresh_interpreter_the_apps_settings_load_no_backend_and_a_descriptor_loads_none_of_them() -> None:
    assert not {
        name for name in modules_loaded_by("import hastegeo.settings.app") if name.startswith("hastegeo.compute")
    }
    listed = modules_loaded_by("from hastegeo.compute.catalog import descriptors\ndescriptors()")
    assert "hastegeo.compute.local.settings" in listed
    assert "hastegeo.settings.app" not in listed


def test_the_scan_finds_the_knot_it_guards_against() -> None:
    """The control: the cycle this change removed (config → registry → descriptor → config) is found."""
    knot = {
        "hastegeo.settings.app": {"hastegeo.compute.registry"},
        "hastegeo.compute.registry": {"hastegeo.compute.descriptor"},
        "hastegeo.compute.descriptor": {"hastegeo.settings.app"},
        "hastegeo.models.job": {"hastegeo.compute.registry"},
    }
    assert cycles(knot) == [["hastegeo.compute.descriptor", "hastegeo.compute.registry", "hastegeo.settings.app"]]
    assert "hastegeo.compute.catalog" in reachable(import_graph(), "hastegeo.settings.load")  # edges are read at all


def test_the_job_models_reach_neither_the_pipeline_nor_the_backend_registry() -> None:
    """The models check backend and workload names against the catalogs, never what builds a backend."""
    graph = import_graph()
    models = [name for name in graph if name.startswith("hastegeo.models.")]
    assert "hastegeo.models.job" in models
    for name in models:
        reached = reachable(graph, name)
        assert not {r for r in reached if r.startswith("hastegeo.pipeline") or r == "hastegeo.compute.registry"}, name


def test_what_runs_on_compute_reaches_no_processor_and_no_job_model() -> None:
    """A workload's ``run.py`` (and the library it shares) reaches its folder, ``_run`` and the parameter
    models, never the job models, the pipeline, a backend or a processor (docs/adr/0037)."""
    graph = import_graph()
    starts = [name for name in graph if name.startswith("hastegeo.workloads.") and name.endswith(".run")]
    assert len(starts) >= 5
    for start in starts:
        reached = reachable(graph, start)
        heavy = {
            r
            for r in reached
            if r.startswith(("hastegeo.pipeline", "hastegeo.compute", "hastegeo.models.job", "hastegeo.store"))
            or r in ("hastegeo.workloads.processor", "hastegeo.workloads.registry", "hastegeo.workloads.geospatial")
            or r.endswith(".processor")
        }
        assert not heavy, (start, sorted(heavy))


def test_listing_the_workloads_loads_no_processor() -> None:
    listed = modules_loaded_by("from hastegeo.workloads.registry import descriptors\ndescriptors()")
    assert "hastegeo.workloads.artifacts.params" in listed
    assert not {name for name in listed if name.endswith(".processor") or name.startswith("hastegeo.models.job")}


def test_no_module_of_the_library_takes_part_in_a_cycle() -> None:
    """Every import goes one way, whatever the floor: a circle anywhere is a knot a reader walks twice."""
    assert cycles(import_graph()) == TYPE_ONLY


def test_storage_and_the_models_reach_neither_the_pipeline_nor_the_backend_registry() -> None:
    """The store stores and the models describe: what a change means (events, seats) is the pipeline's journal's,
    and which backends exist is the registry's, read by those who route."""
    graph = import_graph()
    for name in sorted(graph):
        if name.startswith(("hastegeo.store", "hastegeo.models")):
            reached = reachable(graph, name)
            assert sorted(t for t in reached if t.startswith("hastegeo.pipeline")) == [], name
            assert "hastegeo.compute.registry" not in reached, name
