"""uv is handed the package sources pip is configured with, and only those."""

from __future__ import annotations

import subprocess
import sys

from hastegeo_dev import pip_options
from hastegeo_dev.pip_options import uv_options


def test_every_source_pip_is_configured_with_reaches_uv_with_pips_choice_of_versions() -> None:
    listed = "\n".join(
        [
            "global.cert='/etc/ssl/certs/ca-certificates.crt'",  # not a source: uv has its own settings for it
            "global.extra-index-url='https://mirror.example/simple https://other.example/simple'",
            "global.constraint='/etc/pip/constraints.txt'",
            "global.timeout='60'",
        ]
    )
    assert uv_options(listed) == [
        "--index-strategy=unsafe-best-match",
        "--extra-index-url=https://mirror.example/simple",
        "--extra-index-url=https://other.example/simple",
        "--constraint=/etc/pip/constraints.txt",
    ]


def test_install_section_overrides_global_and_the_environment_overrides_both_in_any_order() -> None:
    listed = "\n".join(
        [
            ":env:.index-url='https://from-env.example/simple'",
            "install.index-url='https://install.example/simple'",
            "global.index-url='https://global.example/simple'",
            "global.find-links='/wheels/global'",
            "install.find-links='/wheels/install'",
        ]
    )
    assert uv_options(listed) == ["--index-url=https://from-env.example/simple", "--find-links=/wheels/install"]


def test_no_configuration_means_no_options_and_uvs_own_defaults() -> None:
    assert uv_options("") == []
    assert uv_options("global.no-cache-dir='true'\nnot a setting line") == []


def test_it_runs_as_a_file_before_anything_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-I", pip_options.__file__], capture_output=True, text=True, check=True, timeout=60
    )
    assert all(line.startswith("--") for line in done.stdout.splitlines())
