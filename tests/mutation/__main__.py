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

``MUTATION_MODULES`` (comma-separated names from :data:`TARGETS`) runs some of them.
Work files go to ``MUTATION_DIR`` (default: a temporary folder). The sources are
mutated in place while a mutant runs and restored after; do not edit them meanwhile.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = "hastelib/src/hastegeo"
# Module -> the tests that hold it. The Azurite-backed ones start their own emulator.
TARGETS: dict[str, tuple[str, ...]] = {
    "states": (f"{SRC}/models/states.py", "tests/unit/core/test_states.py"),
    "router": (f"{SRC}/compute/router.py", "tests/unit/core/test_router.py"),
    "cursor": (f"{SRC}/store/cursor.py", "tests/unit/core/test_cursor.py"),
    "redaction": (f"{SRC}/utils/redaction.py", "tests/unit/core/test_redaction.py"),
    "ownership": (f"{SRC}/models/ownership.py", "tests/unit/core/test_ownership.py"),
    "chain_quiet": (
        f"{SRC}/pipeline/reconcile.py",
        "tests/unit/core/test_chain_quiet.py tests/integration/test_reconcile.py",
    ),
    "index": (f"{SRC}/store/index.py", "tests/integration/test_job_index.py"),
    "deadlines": (
        f"{SRC}/pipeline/deadlines.py",
        "tests/integration/test_reconcile.py tests/integration/test_deadlines.py",
    ),
    "store": (f"{SRC}/store/jobs.py", "tests/integration/test_store.py tests/integration/test_job_index.py"),
}


def config(module: str, tests: str) -> str:
    existing = " ".join(path for path in tests.split() if (REPO / path).exists())
    command = f"{sys.executable} -m pytest -x -q -p no:cacheprovider -p no:randomly {existing}"
    return (
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        "timeout = 120.0\n"
        "excluded-modules = []\n"
        f'test-command = "{command}"\n\n'
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


def skip_annotations(session: Path, module: str) -> int:
    """Mark every mutant inside an annotation as skipped (equivalent, see the module docstring); how many."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    if "from __future__ import annotations" not in (REPO / module).read_text():
        return 0
    spans = annotation_spans((REPO / module).read_text())
    skipped = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            mutation = item.mutations[0]
            start, end = tuple(mutation.start_pos), tuple(mutation.end_pos)
            if any(low <= start and end <= high for low, high in spans):
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="annotation"))
                skipped += 1
    return skipped


def run(name: str, work: Path) -> tuple[int, int, int, list[str]]:
    """Killed, total and skipped (equivalent) mutants of one target, and the survivors."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    module, tests = TARGETS[name]
    cfg, session = work / f"{name}.toml", work / f"{name}.sqlite"
    cfg.write_text(config(module, tests))
    cosmic = [str(Path(sys.executable).parent / "cosmic-ray")]
    subprocess.run([*cosmic, "init", str(cfg), str(session)], cwd=REPO, check=True)
    subprocess.run([*cosmic, "baseline", str(cfg)], cwd=REPO, check=True)  # the tests pass unmutated
    skipped = skip_annotations(session, module)
    subprocess.run([*cosmic, "exec", str(cfg), str(session)], cwd=REPO, check=True)
    killed, total, survivors = 0, 0, []
    with use_db(str(session), WorkDB.Mode.open) as db:
        items = {item.job_id: item for item in db.work_items}
        for job_id, result in db.results:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            total += 1
            if result.test_outcome == TestOutcome.SURVIVED:
                mutation = items[job_id].mutations[0]
                survivors.append(
                    f"{mutation.module_path}:{mutation.start_pos[0]} {mutation.operator_name} #{mutation.occurrence}"
                )
            else:
                killed += 1  # killed, or incompetent (the mutant does not even import): caught either way
    return killed, total, skipped, survivors


def main() -> int:
    names = [n.strip() for n in os.environ.get("MUTATION_MODULES", ",".join(TARGETS)).split(",") if n.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        print(f"unknown MUTATION_MODULES {unknown}; known: {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    work = Path(os.environ.get("MUTATION_DIR") or tempfile.mkdtemp(prefix="mutation-"))
    work.mkdir(parents=True, exist_ok=True)
    rows, all_killed, all_total, all_survivors = [], 0, 0, []
    for name in names:
        killed, total, skipped, survivors = run(name, work)
        score = 100 * killed / total if total else 100
        rows.append(f"{name:<12}{killed:>8}{total:>8}{score:>8.1f} %{skipped:>12}")
        all_killed, all_total = all_killed + killed, all_total + total
        all_survivors += survivors
    print(f"\n{'module':<12}{'killed':>8}{'mutants':>8}{'score':>10}{'annotation':>12}")
    print("\n".join(rows))
    print(f"{'total':<12}{all_killed:>8}{all_total:>8}{(100 * all_killed / all_total if all_total else 100):>8.1f} %")
    for survivor in all_survivors:
        print(f"survived: {survivor}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
