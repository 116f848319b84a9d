"""docs/deploy.md "Who may touch what" is the role assignments infra/ makes, in every Azure ML mode.

Each row granted by a Bicep file names, in backticks, the principal parameter, the role and the
scope symbol the Bicep uses. For each mode (``Create``, ``Existing``, ``Disabled``) with every
optional grant switched on, the assignments the Bicep makes (a module's condition in main.bicep
and the resource's own ``if``, evaluated) must be exactly the table's rows for that mode: a grant
the docs do not list fails, and so does a listed one the Bicep does not make.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.drift.conftest import REPO
from tests.infra.emitted import read

MODES = ("Create", "Existing", "Disabled")
HEADING = "## Who may touch what"
# The modules that assign roles, by the symbol main.bicep calls them, and their principal parameters.
MODULES = {
    "roles": "modules/roles.bicep",
    "amlExistingAccess": "modules/amlAccess.bicep",
    "eventGridSender": "modules/eventGridSender.bicep",
    "amlEvents": "modules/amlEvents.bicep",
}
# What main.bicep passes to a module's generic ``principalId``.
PRINCIPAL_PARAMS = {"principalId": "functionPrincipalId"}

Condition = Callable[[str], bool]
# Every condition found in the Bicep, evaluated for a mode with all optional grants on (a Key
# Vault, Event Grid, the uploaders group, the upstream sender, the Existing-mode cluster identity).
# A condition not listed here fails the test: say here what it means before relying on it.
CONDITIONS: dict[str, Condition] = {
    "": lambda mode: True,
    "!empty(keyVaultName)": lambda mode: True,
    "!empty(amlWorkspaceName)": lambda mode: mode == "Create",
    "!empty(amlComputePrincipalId)": lambda mode: mode == "Existing",
    "!empty(inputsUploaderGroupId)": lambda mode: True,
    "!empty(upstreamSenderPrincipalId)": lambda mode: True,
    "amlMode == 'Existing'": lambda mode: mode == "Existing",
    "createEventGrid": lambda mode: True,
    "amlMode == 'Create'": lambda mode: mode == "Create",
}


def module_condition(main: str, symbol: str) -> str:
    match = re.search(rf"^module {symbol} '[^']+' = (?:if \((.*?)\) )?\{{", main, re.MULTILINE)
    assert match, f"main.bicep calls no module {symbol}"
    return match.group(1) or ""


def bicep_grants(mode: str) -> set[tuple[str, str, str, str]]:
    """(principal parameter, role, scope symbol, file) of every assignment made in ``mode``."""
    main = read("main.bicep")
    found = set()
    for symbol, path in MODULES.items():
        outer = module_condition(main, symbol)
        assert outer in CONDITIONS, f"main.bicep: module {symbol} has a condition the test cannot read: {outer}"
        text = read(path)
        roles = dict(re.findall(r"^\s+(\w+): '([0-9a-f-]{36})'$", text, re.MULTILINE))
        roles |= dict(re.findall(r"^var (\w+) = '([0-9a-f-]{36})'$", text, re.MULTILINE))
        pattern = r"^resource (\w+) 'Microsoft\.Authorization/roleAssignments@[^']+' = (?:if \((.*?)\) )?\{\n(.*?)^\}"
        for match in re.finditer(pattern, text, re.MULTILINE | re.DOTALL):
            inner, body = match.group(2) or "", match.group(3)
            assert inner in CONDITIONS, f"{path}: {match.group(1)} has a condition the test cannot read: {inner}"
            if not (CONDITIONS[outer](mode) and CONDITIONS[inner](mode)):
                continue
            scope = re.search(r"^\s+scope: (\w+)$", body, re.MULTILINE)
            role = re.search(r"roleDefinitions', (?:role\.)?(\w+)\)", body)
            principal = re.search(r"^\s+principalId: (\w+)$", body, re.MULTILINE)
            unreadable = f"{path}: {match.group(1)} cannot be read"
            assert scope, unreadable
            assert role, unreadable
            assert principal, unreadable
            assert role.group(1) in roles, f"{path}: role {role.group(1)} has no id there"
            name = principal.group(1)
            found.add((PRINCIPAL_PARAMS.get(name, name), role.group(1), scope.group(1), path.split("/")[-1]))
    return found


def table_rows() -> list[dict[str, str]]:
    text = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert HEADING in text, f"docs/deploy.md has no '{HEADING}' section"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == len(header), f"a row of '{HEADING}' has {len(cells)} cells: {line}"
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def symbol(cell: str) -> str:
    names = re.findall(r"\(`(\w+)`\)", cell)
    assert len(names) == 1, f"{cell!r} names no Bicep symbol in the form (`name`)"
    return names[0]


def table_grants(mode: str) -> set[tuple[str, str, str, str]]:
    found = set()
    for row in table_rows():
        granted_by = re.fullmatch(r"`(\w+\.bicep)`", row["granted by"])
        if granted_by is None:
            continue
        modes = row["Azure ML modes"]
        if modes != "all" and mode not in [m.strip() for m in modes.split(",")]:
            continue
        found.add((symbol(row["identity"]), symbol(row["role"]), symbol(row["resource"]), granted_by.group(1)))
    return found


@pytest.mark.parametrize("mode", MODES)
def test_the_table_is_what_the_bicep_grants(mode: str) -> None:
    bicep, docs = bicep_grants(mode), table_grants(mode)
    assert not bicep - docs, f"{mode}: granted by the Bicep but not in docs/deploy.md: {sorted(bicep - docs)}"
    assert not docs - bicep, f"{mode}: in docs/deploy.md but not granted by the Bicep: {sorted(docs - bicep)}"


def test_every_identity_that_touches_data_is_in_the_table() -> None:
    identities = " ".join(row["identity"] for row in table_rows()).lower()
    for who in (
        "functions app",
        "compute identity",
        "cluster identity",
        "workspace",
        "deploying principal",
        "event grid",
    ):
        assert who in identities, f"'{HEADING}' has no row for the {who}"


def test_existing_mode_gives_the_clusters_identity_what_credential_less_datastores_need() -> None:
    # Azure ML mounts datastores without credentials with the compute's managed identity.
    existing = {(p, role, scope) for p, role, scope, _ in bicep_grants("Existing")}
    assert {
        ("amlComputePrincipalId", "storageBlobDataReader", "inputs"),
        ("amlComputePrincipalId", "storageBlobDataContributor", "outputs"),
        ("amlComputePrincipalId", "acrPull", "registry"),
    } <= existing
    main = read("main.bicep")
    assert "amlComputePrincipalId: amlMode == 'Existing' ? amlComputePrincipalId : ''" in main
    assert "readEnvironmentVariable('DEPLOY_AML_COMPUTE_PRINCIPAL_ID', '')" in read("main.bicepparam")


def test_no_role_is_assigned_that_azure_ml_assigns_itself() -> None:
    """Create mode's workspace identity gets its roles from Azure ML; assigning them again fails the deploy."""
    main = read("main.bicep")
    assert "amlCreate.outputs.principalId" not in main, "a module is given the workspace's own identity"
    create = bicep_grants("Create")
    workspace_resources = {"storage", "vault", "registry", "insights"}
    principals = {p for p, *_ in create}
    assert principals <= {
        "functionPrincipalId",
        "poolPrincipalId",
        "inputsUploaderGroupId",
        "upstreamSenderPrincipalId",
        "topicPrincipalId",  # the workspace's Event Grid system topic (amlEvents.bicep), not the workspace
    }, principals
    # what the workspace's own identity holds on those resources comes from Azure ML alone
    assert not [g for g in create if "workspace" in g[0].lower() and g[2] in workspace_resources]
