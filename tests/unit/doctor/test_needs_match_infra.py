"""What the doctor expects is what infra/ deploys: the same role assignments, app roles and autoscale cap.

The doctor ships without infra/ (it runs from an installed package), so it keeps its own
tables; these tests read the Bicep and the registration script and fail when either side moves.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hastegeo.doctor.checks_batch import largest_size
from hastegeo.doctor.facts import Pool
from hastegeo.doctor.needs import APP_ROLE_IDS, ROLE_IDS, ROLE_NEEDS

REPO = Path(__file__).resolve().parents[3]
MODULES = REPO / "infra" / "modules"
# The Bicep's principal parameters, by whom they name.
PRINCIPALS = {"functionPrincipalId": "app", "principalId": "app", "poolPrincipalId": "compute"}


def bicep_assignments(path: Path) -> set[tuple[str, str, str]]:
    """(who, role, scope symbol) of every role assignment to the app or the compute identity in a Bicep file."""
    text = path.read_text(encoding="utf-8")
    roles = dict(re.findall(r"^\s+(\w+): '([0-9a-f-]{36})'$", text, re.MULTILINE))
    roles |= dict(re.findall(r"^var (\w+) = '([0-9a-f-]{36})'$", text, re.MULTILINE))
    found = set()
    for block in re.split(r"^resource ", text, flags=re.MULTILINE)[1:]:
        if not block.split("'", 2)[1].startswith("Microsoft.Authorization/roleAssignments@"):
            continue
        scope = re.search(r"^\s+scope: (\w+)$", block, re.MULTILINE)
        role = re.search(r"roleDefinitions', (?:role\.)?(\w+)\)", block)
        principal = re.search(r"^\s+principalId: (\w+)$", block, re.MULTILINE)
        unreadable = f"{path.name}: a role assignment the test cannot read:\n{block[:300]}"
        assert scope, unreadable
        assert role, unreadable
        assert principal, unreadable
        who = PRINCIPALS.get(principal.group(1))
        if who is not None:
            name = role.group(1)
            assert roles.get(name) == ROLE_IDS.get(name), f"{path.name}: {name} is {roles.get(name)} there"
            found.add((who, name, scope.group(1)))
    return found


def test_the_doctor_expects_exactly_the_roles_the_bicep_grants() -> None:
    bicep = (
        bicep_assignments(MODULES / "roles.bicep")
        | bicep_assignments(MODULES / "amlAccess.bicep")
        | bicep_assignments(MODULES / "eventGridSender.bicep")
    )
    assert {(need.who, need.role, need.scope) for need in ROLE_NEEDS} == bicep


def test_the_app_role_ids_are_the_registration_scripts() -> None:
    script = (REPO / "infra" / "scripts" / "app-registration.sh").read_text(encoding="utf-8")
    ids = dict(re.findall(r'^(\w+)_ROLE_ID="([0-9a-f-]{36})"$', script, re.MULTILINE))
    assert {role.value.split(".")[1].upper(): role_id for role, role_id in APP_ROLE_IDS.items()} == ids
    for role in APP_ROLE_IDS:
        assert f'"{role.value}"' in script, f"the script does not register {role.value}"


@pytest.mark.parametrize(("max_nodes", "low"), [(4, False), (10, True), (1, False)])
def test_the_largest_pool_size_is_read_from_the_formula_batch_bicep_writes(max_nodes: int, low: bool) -> None:
    text = (MODULES / "batch.bicep").read_text(encoding="utf-8")
    template = re.search(r"var formulaTemplate = '''\n(.*?)'''", text, re.DOTALL)
    assert template, "batch.bicep no longer has formulaTemplate: update checks_batch.largest_size with it"
    formula = (
        template.group(1)
        .replace("__MAX_NODES__", str(max_nodes))
        .replace("__LOW_PRIORITY__", "1" if low else "0")
        .replace("__DEALLOCATION__", "taskcompletion")
    )
    pool = Pool("p", "Standard_D4s_v5", "Steady", formula, 0, 0, (), None)
    size = largest_size(pool)
    assert size.known
    assert (size.dedicated, size.low_priority) == ((0, max_nodes) if low else (max_nodes, 0))


def test_an_unknown_formula_is_bounded_at_one_node_and_says_so() -> None:
    size = largest_size(Pool("p", "x", "Steady", "$TargetDedicatedNodes = 2;", 0, 0, (), None))
    assert not size.known
    assert (size.dedicated, size.low_priority) == (1, 0)
