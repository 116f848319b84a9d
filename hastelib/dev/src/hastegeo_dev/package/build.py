"""Build ``function-app.zip`` and its unpacked folder from a repository (the I/O around the pure rules).

The zip is reproducible (sorted entries, fixed timestamps and modes), so two builds
of one commit are byte-identical and a deployed package can be compared with a
local build. The unpacked folder is extracted from the zip, so it cannot differ:
``func azure functionapp publish`` is run from it.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from hastegeo_dev.package import contents, ignorefile

IGNORE_FILE = ".funcignore"
ZIP_NAME = "function-app.zip"
FOLDER_NAME = "function-app"
# Caches never belong to a build input, whatever the ignore file says.
_CACHE_DIRS = {"__pycache__"}
_CACHE_SUFFIXES = (".pyc", ".pyo")
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


class PackageError(RuntimeError):
    """The package cannot be built as asked (a needed file would be left out)."""


@dataclass(frozen=True)
class Package:
    zip_path: Path
    folder: Path
    files: tuple[str, ...]


def _is_cache(name: str) -> bool:
    return name in _CACHE_DIRS or name.endswith(".egg-info") or name.endswith(_CACHE_SUFFIXES)


def _walk(root: Path, rules: tuple[ignorefile.Rule, ...] = ()) -> list[str]:
    """Files under ``root`` as ``/``-separated relative paths, not descending into ignored folders."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        dirs[:] = sorted(
            d for d in dirs if not _is_cache(d) and not ignorefile.is_ignored(rules, prefix + d, is_dir=True)
        )
        for name in sorted(files):
            keep = not _is_cache(name) and not ignorefile.is_ignored(rules, prefix + name)
            if keep and (Path(folder) / name).is_file():
                found.append(prefix + name)
    return found


def _needed(root: Path) -> list[str]:
    """Entry files, nested requirement files and the build inputs of every local project."""
    needed = list(contents.ENTRY_FILES)
    requirements = contents.parse_requirements((root / "requirements.txt").read_text(encoding="utf-8"))
    needed += requirements.files
    for project in requirements.projects:
        pyproject = root / project / "pyproject.toml"
        if not pyproject.is_file():
            raise PackageError(f"requirements.txt installs ./{project}, which has no pyproject.toml")
        text = pyproject.read_text(encoding="utf-8")
        sources: list[str] = []
        for where in contents.source_folders(text):
            base = root / project / where
            sources += [(Path(project) / where / path).as_posix() for path in _walk(base)] if base.is_dir() else []
        needed += contents.project_build_files(project, text, sources)
    return needed


def _explain(rules: tuple[ignorefile.Rule, ...], path: str) -> str:
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        sub = "/".join(parts[:depth])
        hits = [r for r in rules if r.matches(sub, depth < len(parts))]
        if hits and not hits[-1].negated:
            return f"{path} (excluded by {hits[-1].pattern!r})"
    return f"{path} (not in the repository)"


def select_files(root: Path) -> list[str]:
    """The files every deploy path ships: the repository less ``.funcignore``; checked for what pip needs."""
    ignore = root / IGNORE_FILE
    rules = ignorefile.parse(ignore.read_text(encoding="utf-8")) if ignore.is_file() else ()
    shipped = _walk(root, rules=rules)
    gaps = contents.missing(_needed(root), shipped)
    if gaps:
        raise PackageError(
            "the remote build needs files the package would not hold: " + "; ".join(_explain(rules, p) for p in gaps)
        )
    return shipped


def _write_zip(root: Path, files: list[str], target: Path) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".function-app-", suffix=".zip")
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name in files:
                source = root / name
                info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
                executable = source.stat().st_mode & stat.S_IXUSR
                info.external_attr = (0o755 if executable else 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, source.read_bytes())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def build(root: Path, out: Path) -> Package:
    """Write ``out/function-app.zip`` and ``out/function-app/`` (extracted from it); return what they hold."""
    root = root.resolve()
    out = out.resolve()
    files = select_files(root)
    if out == root or out.is_relative_to(root):
        inside = out.relative_to(root).as_posix()
        files = [name for name in files if not (name == inside or name.startswith(inside + "/"))]
    out.mkdir(parents=True, exist_ok=True)
    zip_path = out / ZIP_NAME
    _write_zip(root, files, zip_path)
    folder = out / FOLDER_NAME
    shutil.rmtree(folder, ignore_errors=True)
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(folder)
    return Package(zip_path, folder, tuple(files))
