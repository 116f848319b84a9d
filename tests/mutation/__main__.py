"""``make mutation``: the mutation score of the pipeline's pure core (cosmic-ray; not part of ``make test``).

Each core module is mutated on its own, with the tests that hold it (a mutant is
tried against those alone, so a run costs minutes, not hours): a mutant that makes
them fail is killed, one they still pass survived. Prints a line per module and the
total score; survivors are listed (module, line, operator) for a test to kill or a
note to explain them as equivalent (docs/reliability.md).

Mutants inside a function's type annotations (``str | None`` made ``str & None``, say)
are skipped before the run and counted apart as equivalent: with postponed annotations
(``from __future__ import annotations``) nothing evaluates them, so no test can tell
them apart (:func:`skip_annotations`; class-level annotations are mutated as usual).

A pure module's mutants run its unit tests without the suite's conftest and plugins (a
second of CPU each, not six); a target may be one function or method of a module
(:attr:`Target.scope`), its other mutants skipped and counted apart.

``MUTATION_MODULES`` (comma-separated names from :data:`TARGETS`) runs some of them.
Work files go to ``MUTATION_DIR`` (default: a temporary folder); a session left there is
resumed, its mutants already tried kept. The sources are
mutated in place while a mutant runs and restored after; do not edit them meanwhile.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = "hastelib/src/hastegeo"


@dataclass(frozen=True)
class Target:
    """A module to mutate and the tests that hold it.

    ``pure``: the tests need no fixture of ``tests/conftest.py`` (no Azurite), so each mutant runs them
    with ``--noconftest`` and no plugin but pytest-timeout: about a second of CPU a mutant instead of
    six (the conftest imports the whole runtime, the plugins hypothesis and schemathesis).
    ``select``: a ``-k`` expression that picks the tests of ``tests`` that exercise the module.
    ``scope``: the functions or classes (qualified names) whose mutants count; the rest of the
    module is skipped and counted apart. Empty: the whole module.
    """

    module: str
    tests: tuple[str, ...]
    pure: bool = True
    scope: tuple[str, ...] = ()
    select: str = ""  # a pytest ``-k`` expression: only these of the tests


TARGETS: dict[str, Target] = {
    "states": Target(f"{SRC}/models/states.py", ("tests/unit/core/test_states.py",)),
    "router": Target(f"{SRC}/compute/router.py", ("tests/unit/core/test_router.py",)),
    "cursor": Target(f"{SRC}/store/cursor.py", ("tests/unit/core/test_cursor.py",)),
    "redaction": Target(f"{SRC}/utils/redaction.py", ("tests/unit/core/test_redaction.py",)),
    "ownership": Target(f"{SRC}/models/ownership.py", ("tests/unit/core/test_ownership.py",)),
    "chain_quiet": Target(
        f"{SRC}/pipeline/reconcile.py", ("tests/unit/core/test_chain_quiet.py",), scope=("chain_quiet",)
    ),
    "index": Target(f"{SRC}/store/index.py", ("tests/unit/core/test_index.py",)),
    "deadlines": Target(
        f"{SRC}/pipeline/deadlines.py",
        ("tests/unit/core/test_deadlines.py", "tests/integration/test_reconcile.py"),
        select="deadline",
        pure=False,
    ),
    # The update loop: read, change, write with If-Match, again on 412; its index entries.
    "store": Target(
        f"{SRC}/store/jobs.py",
        (
            "tests/integration/test_store.py",
            "tests/integration/test_job_index.py",
            "tests/integration/test_job_events.py",
        ),
        pure=False,
        scope=("JobStore._update",),
    ),
}
# Every mutant's run is bounded (cosmic-ray kills it, and counts it killed, past this).
TIMEOUT_S = {True: 60.0, False: 240.0}


def command(target: Target) -> tuple[str, dict[str, str]]:
    """The test command of a mutant of ``target``, and the environment it runs in."""
    tests = " ".join(path for path in target.tests if (REPO / path).exists())
    flags = "-x -q -p no:cacheprovider -p no:randomly -p no:xdist"
    env = dict(os.environ)
    if target.pure:
        flags += " --noconftest -p pytest_timeout"
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if target.select:
        flags += f" -k '{target.select}'"
    return f"{sys.executable} -m pytest {flags} {tests}", env


def config(target: Target, test_command: str) -> str:
    return (
        "[cosmic-ray]\n"
        f'module-path = "{target.module}"\n'
        f"timeout = {TIMEOUT_S[target.pure]}\n"
        "excluded-modules = []\n"
        f'test-command = "{test_command}"\n\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions, as (line, column), of the annotations of ``source`` that nothing evaluates:
    a function's parameters and return, and its local variables. Class-level ones are left out (a
    pydantic model or a dataclass reads its fields' annotations)."""
    spans = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        found: list[ast.expr | None] = [arg.annotation for arg in ast.walk(function.args) if isinstance(arg, ast.arg)]
        if not isinstance(function, ast.Lambda):
            found.append(function.returns)
            found += [node.annotation for node in ast.walk(function) if isinstance(node, ast.AnnAssign)]
        for annotation in found:
            if annotation is not None and annotation.end_lineno is not None and annotation.end_col_offset is not None:
                spans.append(
                    ((annotation.lineno, annotation.col_offset), (annotation.end_lineno, annotation.end_col_offset))
                )
    return spans


Span = tuple[tuple[int, int], tuple[int, int]]


def scope_spans(source: str, names: tuple[str, ...]) -> list[Span]:
    """(start, end) positions of the functions and classes of ``source`` named (qualified) in ``names``."""
    spans: list[Span] = []
    found: set[str] = set()

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                if name in names and child.end_lineno is not None and child.end_col_offset is not None:
                    found.add(name)
                    first = child.decorator_list[0] if child.decorator_list else child
                    spans.append(((first.lineno, first.col_offset), (child.end_lineno, child.end_col_offset)))
                visit(child, name + ".")

    visit(ast.parse(source), "")
    if set(names) - found:
        raise SystemExit(f"not in the module: {sorted(set(names) - found)}")
    return spans


def skip(session: Path, target: Target) -> tuple[int, int]:
    """Mark as skipped every mutant inside an annotation (equivalent, see the module docstring) and every
    one outside the target's scope; how many of each."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    source = (REPO / target.module).read_text()
    annotations = annotation_spans(source) if "from __future__ import annotations" in source else []
    scope = scope_spans(source, target.scope) if target.scope else []
    in_annotation = outside = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            mutation = item.mutations[0]
            start, end = tuple(mutation.start_pos), tuple(mutation.end_pos)
            if target.scope and not any(low <= start and end <= high for low, high in scope):
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="outside"))
                outside += 1
            elif any(low <= start and end <= high for low, high in annotations):
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="annotation"))
                in_annotation += 1
    return in_annotation, outside


@dataclass
class Score:
    killed: int = 0
    total: int = 0
    pending: int = 0
    annotation: int = 0
    outside: int = 0
    seconds_per_mutant: float = 0.0
    survivors: list[str] = field(default_factory=list)


def run(name: str, work: Path) -> Score:
    """Mutate one target and score it. A session left in ``work`` by an earlier run is resumed (its
    mutants already tried are kept), so a module too big for one sitting can be scored in several."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    target = TARGETS[name]
    test_command, env = command(target)
    cfg, session = work / f"{name}.toml", work / f"{name}.sqlite"
    cfg.write_text(config(target, test_command))
    cosmic = [str(Path(sys.executable).parent / "cosmic-ray")]
    if not session.exists():
        subprocess.run([*cosmic, "init", str(cfg), str(session)], cwd=REPO, check=True)
        subprocess.run([*cosmic, "baseline", str(cfg)], cwd=REPO, env=env, check=True)  # passes unmutated
        skip(session, target)
    with use_db(str(session), WorkDB.Mode.open) as db:
        before = db.num_results
    started = time.monotonic()
    subprocess.run([*cosmic, "exec", str(cfg), str(session)], cwd=REPO, env=env, check=True)
    elapsed = time.monotonic() - started
    score = Score()
    with use_db(str(session), WorkDB.Mode.open) as db:
        items = {item.job_id: item for item in db.work_items}
        score.pending = sum(1 for _ in db.pending_work_items)
        tried = db.num_results - before
        score.seconds_per_mutant = elapsed / tried if tried else 0.0
        for job_id, result in db.results:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                if result.output == "outside":
                    score.outside += 1
                else:
                    score.annotation += 1
                continue
            score.total += 1
            if result.test_outcome == TestOutcome.SURVIVED:
                mutation = items[job_id].mutations[0]
                score.survivors.append(
                    f"{mutation.module_path}:{mutation.start_pos[0]} {mutation.operator_name} #{mutation.occurrence}"
                )
            else:
                score.killed += 1  # killed, or incompetent (the mutant does not even import): caught either way
    return score


def main() -> int:
    names = [n.strip() for n in os.environ.get("MUTATION_MODULES", ",".join(TARGETS)).split(",") if n.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        print(f"unknown MUTATION_MODULES {unknown}; known: {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    work = Path(os.environ.get("MUTATION_DIR") or tempfile.mkdtemp(prefix="mutation-"))
    work.mkdir(parents=True, exist_ok=True)
    scores = {name: run(name, work) for name in names}
    print(f"\n{'module':<12}{'killed':>8}{'mutants':>8}{'score':>10}{'annotation':>12}{'outside':>9}{'s/mutant':>10}")
    for name, s in scores.items():
        pending = f"  ({s.pending} not yet tried)" if s.pending else ""
        print(
            f"{name:<12}{s.killed:>8}{s.total:>8}{_percent(s.killed, s.total):>8.1f} %"
            f"{s.annotation:>12}{s.outside:>9}{s.seconds_per_mutant:>10.1f}{pending}"
        )
    killed, total = sum(s.killed for s in scores.values()), sum(s.total for s in scores.values())
    print(f"{'total':<12}{killed:>8}{total:>8}{_percent(killed, total):>8.1f} %")
    for s in scores.values():
        for survivor in s.survivors:
            print(f"survived: {survivor}")
    return 0


def _percent(part: int, whole: int) -> float:
    return 100 * part / whole if whole else 100.0


if __name__ == "__main__":
    sys.exit(main())
