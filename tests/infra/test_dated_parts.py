"""Every pinned platform part with a date on it is in docs/deploy.md's table, and none is close to it.

The parts are read from what deploys and builds (infra/, host.json, the Dockerfiles, the build
system of hastelib), so a new pin without a row fails here, and so does a row whose date is less
than WARNING_DAYS away: the move off a part is planned while there is time, not found in an
outage. A date is either an end of support a vendor announced or, where none is announced, the
day the part must be looked at again.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.drift.conftest import REPO

WARNING_DAYS = 180
INFRA = REPO / "infra"
TABLE_HEADING = "## Dated parts"


def parts_in_use() -> dict[str, str]:
    """Part key (as written in the table) to the file it was read from."""
    found: dict[str, str] = {}
    for path in sorted(INFRA.rglob("*.bicep")):
        text = path.read_text(encoding="utf-8")
        for api in re.findall(r"'([A-Za-z.]+/[A-Za-z/]+@\d{4}-\d{2}-\d{2}(?:-preview)?)'", text):
            found.setdefault(api, path.relative_to(REPO).as_posix())
        for agent in re.findall(r"nodeAgentSkuId:\s*'([^']+)'", text):
            found[agent] = path.relative_to(REPO).as_posix()
        for publisher, offer, sku in re.findall(
            r"publisher:\s*'([^']+)'\s*offer:\s*'([^']+)'\s*sku:\s*'([^']+)'", text
        ):
            found[f"{publisher}:{offer}:{sku}"] = path.relative_to(REPO).as_posix()
        runtime = re.search(r"runtime:\s*\{\s*name:\s*'([^']+)'\s*version:\s*'([^']+)'", text)
        if runtime:
            found[f"Flex Consumption {runtime.group(1)} {runtime.group(2)}"] = path.relative_to(REPO).as_posix()
    for path in sorted((INFRA / "docker").rglob("Dockerfile*")):
        for base in re.findall(r"^FROM\s+([^@\s]+)", path.read_text(encoding="utf-8"), re.MULTILINE):
            found[base] = path.relative_to(REPO).as_posix()
    bundle = json_bundle()
    found[f"{bundle['id']} {bundle['version']}"] = "host.json"
    azd = yaml.safe_load((REPO / "azure.yaml").read_text(encoding="utf-8"))["requiredVersions"]["azd"]
    found[f"azd {azd}"] = "azure.yaml"
    package = json.loads((REPO / "package.json").read_text(encoding="utf-8"))
    msal = package["dependencies"]["@azure/msal-browser"]
    found[f"@azure/msal-browser {msal}"] = "package.json"
    # The SDKs that speak a service's dated API for the app: their pins live in requirements.txt.
    for pin in re.findall(
        r"^((?:azure-batch|azure-ai-ml|azure-functions)==[\w.]+)", (REPO / "requirements.txt").read_text(), re.MULTILINE
    ):
        found[pin] = "requirements.txt"
    if re.search(r"^param batchLowPriority string$", (INFRA / "main.bicep").read_text(encoding="utf-8"), re.MULTILINE):
        found["Batch low-priority nodes"] = "infra/main.bicep"
    for project in ("hastelib/pyproject.toml", "hastelib/dev/pyproject.toml"):
        document = tomllib.loads((REPO / project).read_text(encoding="utf-8"))
        for requirement in document["build-system"]["requires"]:
            found[requirement] = project
        licence = document["project"].get("license")
        found[f"license = {licence!r}".replace("'", '"') if isinstance(licence, str) else f"license = {licence}"] = (
            project
        )
    return found


def json_bundle() -> dict[str, str]:
    bundle = json.loads((REPO / "host.json").read_text(encoding="utf-8"))["extensionBundle"]
    return {"id": str(bundle["id"]), "version": str(bundle["version"])}


def table() -> dict[str, tuple[dt.date, str]]:
    """The table under TABLE_HEADING: part key (in backticks) to (date, source)."""
    text = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert TABLE_HEADING in text, f"docs/deploy.md has no '{TABLE_HEADING}' section"
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[dt.date, str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not cells[0].startswith("`"):
            continue
        date = re.search(r"\d{4}-\d{2}-\d{2}", cells[2])
        assert date, f"row {cells[0]}: no date in {cells[2]!r}"
        assert cells[3], f"row {cells[0]}: no source"
        for key in re.findall(r"`([^`]+)`", cells[0]):
            rows[key] = (dt.date.fromisoformat(date.group(0)), cells[3])
    return rows


def test_the_old_dated_parts_are_gone() -> None:
    parts = parts_in_use()
    assert "batch.node.ubuntu 22.04" not in parts
    assert not [p for p in parts if p.startswith("license = {")], "the table form of license stops building"
    assert not [p for p in parts if p.startswith("setuptools") and "==" not in p], "setuptools is pinned"


@pytest.mark.parametrize("part", sorted(parts_in_use()))
def test_each_part_has_a_row_and_time_left(part: str) -> None:
    rows = table()
    assert part in rows, f"{part} ({parts_in_use()[part]}) is missing from docs/deploy.md '{TABLE_HEADING}'"
    date, source = rows[part]
    left = (date - dt.date.today()).days
    assert left >= WARNING_DAYS, f"{part}: {date} is {left} days away (source: {source}); move off it now"


# Resource API versions a provider announced the retirement of: every version older than the one
# named here. Checked against the providers' notices (the table's sources say which); add a line
# when a provider announces one.
RETIRED_BEFORE: dict[str, tuple[str, str]] = {
    "Microsoft.Batch": ("2025-06-01", "Azure/Batch#140: API versions prior to 2025-06-01 are retired"),
}


@pytest.mark.parametrize("part", sorted(p for p in parts_in_use() if re.match(r"Microsoft\.\w+/.+@", p)))
def test_no_resource_api_version_is_one_its_provider_retires(part: str) -> None:
    provider, version = part.split("/", 1)[0], part.rsplit("@", 1)[1]
    if provider in RETIRED_BEFORE:
        oldest, notice = RETIRED_BEFORE[provider]
        assert version[:10] >= oldest, f"{part} ({parts_in_use()[part]}): {notice}"


def test_every_row_names_a_part_in_use() -> None:
    """A row nothing uses any more is a date nobody needs to look at: it goes with the part."""
    stale = sorted(set(table()) - set(parts_in_use()))
    assert not stale, f"docs/deploy.md '{TABLE_HEADING}' lists parts nothing uses: {stale}"


def test_the_batch_sdk_speaks_an_api_version_batch_keeps() -> None:
    """The pipeline's Batch calls use the SDK's default data-plane version: the same retirement applies."""
    import importlib.util

    spec = importlib.util.find_spec("azure.batch")  # found, not imported (the SDK's home is the adapter)
    assert spec is not None
    assert spec.origin is not None
    source = (Path(spec.origin).parent / "_configuration.py").read_text(encoding="utf-8")
    version = re.search(r'api_version.*kwargs\.pop\("api_version", "(\d{4}-\d{2}-\d{2})"\)', source)
    assert version, "azure.batch no longer names its default API version where this test looks"
    oldest, notice = RETIRED_BEFORE["Microsoft.Batch"]
    assert version.group(1) >= oldest, f"azure-batch speaks {version.group(1)}: {notice}"
