"""The pure rules behind ``make package``: gitignore semantics of ``.funcignore`` and what pip needs."""

from __future__ import annotations

import pytest

from hastegeo_dev.package import contents, ignorefile

TREE = [
    "README.md",
    "pyproject.toml",
    "function_app.py",
    "hastelib/README.md",
    "hastelib/pyproject.toml",
    "hastelib/src/hastegeo/__init__.py",
    "hastelib/src/hastegeo/py.typed",
    "hastelib/dev/pyproject.toml",
    "hastelib/dev/src/hastegeo_dev/devhost/host.py",
    "api/__pycache__/x.cpython-311.pyc",
    "docs/adr/0013.md",
]


@pytest.mark.parametrize(
    ("rules", "kept"),
    [
        # Unanchored names match at any depth: the rules that broke the remote build.
        (
            "*.md\npyproject.toml\n",
            {
                "function_app.py",
                "hastelib/src/hastegeo/__init__.py",
                "hastelib/src/hastegeo/py.typed",
                "hastelib/dev/src/hastegeo_dev/devhost/host.py",
                "api/__pycache__/x.cpython-311.pyc",
            },
        ),
        # Anchored, they match the root only.
        (
            "/*.md\n/pyproject.toml\n/docs/\n/hastelib/dev/\n__pycache__/\n",
            {
                "function_app.py",
                "hastelib/README.md",
                "hastelib/pyproject.toml",
                "hastelib/src/hastegeo/__init__.py",
                "hastelib/src/hastegeo/py.typed",
            },
        ),
        # A slash inside anchors too; ** crosses folders; a negation re-includes a file of a kept folder.
        (
            "hastelib/dev\n**/*.pyc\n*.md\n!/hastelib/README.md\n/docs\n",
            {
                "pyproject.toml",
                "function_app.py",
                "hastelib/README.md",
                "hastelib/pyproject.toml",
                "hastelib/src/hastegeo/__init__.py",
                "hastelib/src/hastegeo/py.typed",
            },
        ),
        # Nothing inside an excluded folder comes back, as in git.
        ("/hastelib/\n!/hastelib/pyproject.toml\n/docs/\n/api/\n", {"README.md", "pyproject.toml", "function_app.py"}),
        # A folder-only rule leaves a file of that name alone; comments and blanks are not rules.
        (
            "# comment\n\nfunction_app.py/\n/docs/\n/api/\n/hastelib/\n",
            {"README.md", "pyproject.toml", "function_app.py"},
        ),
        (
            "/hastelib/src/hastegeo/py.type?\n/[ad]*/\n/hastelib/dev/\n*.md\n/pyproject.toml\n",
            {"function_app.py", "hastelib/pyproject.toml", "hastelib/src/hastegeo/__init__.py"},
        ),
    ],
)
def test_ignore_rules_follow_gitignore(rules: str, kept: set[str]) -> None:
    assert ignorefile.select(ignorefile.parse(rules), TREE) == sorted(kept)


def test_requirements_name_local_projects_and_nested_files() -> None:
    text = """# pins
azure-functions==1.26.0
./hastelib
-e ./tools[extra] ; python_version >= "3.11"
-r more.txt
--constraint sub/c.txt  # trailing comment
pydantic==2.14.3
"""
    parsed = contents.parse_requirements(text)
    assert parsed.projects == ("hastelib", "tools")
    assert parsed.files == ("more.txt", "sub/c.txt")


def test_a_local_project_needs_its_pyproject_readme_license_and_sources() -> None:
    pyproject = """
[project]
name = "x"
readme = {file = "docs/README.rst"}
license = {file = "LICENSE"}
[tool.setuptools.packages.find]
where = ["src"]
"""
    assert contents.source_folders(pyproject) == ("src",)
    assert contents.source_folders("[project]\nname = 'y'\n") == (".",)
    needed = contents.project_build_files("lib", pyproject, ["lib/src/x/__init__.py"])
    assert needed == ["lib/LICENSE", "lib/docs/README.rst", "lib/pyproject.toml", "lib/src/x/__init__.py"]
    assert contents.missing(needed, ["lib/pyproject.toml", "lib/src/x/__init__.py"]) == [
        "lib/LICENSE",
        "lib/docs/README.rst",
    ]
