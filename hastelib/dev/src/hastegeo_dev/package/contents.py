"""Which files the platform's remote build needs: pure functions of requirements.txt and pyproject.toml.

Flex Consumption (remote build) runs ``pip install -r requirements.txt`` in the
unpacked package. A local requirement such as ``./hastelib`` is built there from
source, so its ``pyproject.toml``, its readme and every file under its package
folders must be in the package; a nested ``-r``/``-c`` file must be too. An
ignore rule that strips one of them breaks the deployment, not the build of the
zip, which is why the builder checks before it writes anything.
"""

from __future__ import annotations

import posixpath
import tomllib
from dataclasses import dataclass
from typing import Any

# What the app cannot start without, besides what requirements.txt asks for.
ENTRY_FILES = ("function_app.py", "host.json", "requirements.txt")


@dataclass(frozen=True)
class Requirements:
    """The parts of a requirements file that name files of the package."""

    projects: tuple[str, ...]  # local projects, e.g. "hastelib"
    files: tuple[str, ...]  # nested -r / -c files


def _local(target: str, base: str) -> str | None:
    if target.startswith(("./", "../")) or target in (".", ".."):
        return posixpath.normpath(posixpath.join(base, target))
    return None


def parse_requirements(text: str, base: str = "") -> Requirements:
    """Local projects and nested files named by a requirements file at folder ``base`` of the package."""
    projects: list[str] = []
    files: list[str] = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        option, _, rest = line.partition(" ")
        if option in ("-r", "--requirement", "-c", "--constraint"):
            files.append(posixpath.normpath(posixpath.join(base, rest.strip())))
            continue
        if option in ("-e", "--editable"):
            line = rest.strip()
        target = line.split(";", 1)[0].split("[", 1)[0].strip()
        local = _local(target, base)
        if local is not None:
            projects.append(local)
    return Requirements(tuple(projects), tuple(files))


def _readme(project: dict[str, Any]) -> str | None:
    readme = project.get("readme")
    if isinstance(readme, str):
        return readme
    if isinstance(readme, dict) and isinstance(readme.get("file"), str):
        return str(readme["file"])
    return None


def _license_file(project: dict[str, Any]) -> str | None:
    license_ = project.get("license")
    if isinstance(license_, dict) and isinstance(license_.get("file"), str):
        return str(license_["file"])
    return None


def source_folders(pyproject_text: str) -> tuple[str, ...]:
    """The folders (relative to the project) setuptools takes packages from; ``.`` when not said."""
    document = tomllib.loads(pyproject_text)
    find = document.get("tool", {}).get("setuptools", {}).get("packages", {})
    where = find.get("find", {}).get("where") if isinstance(find, dict) else None
    return tuple(where) if isinstance(where, list) and where else (".",)


def project_build_files(project_dir: str, pyproject_text: str, source_files: list[str]) -> list[str]:
    """What ``pip install ./<project_dir>`` reads: pyproject.toml, readme, license file and the sources.

    ``source_files`` are the files found under the project's source folders (paths relative
    to the package root), listed by the caller from the repository, not from the package.
    """
    project = tomllib.loads(pyproject_text).get("project", {})
    needed = [posixpath.join(project_dir, "pyproject.toml")]
    for extra in (_readme(project), _license_file(project)):
        if extra is not None:
            needed.append(posixpath.normpath(posixpath.join(project_dir, extra)))
    return sorted({*needed, *source_files})


def missing(needed: list[str], shipped: list[str]) -> list[str]:
    """The needed files the package would not hold, sorted."""
    return sorted(set(needed) - set(shipped))
