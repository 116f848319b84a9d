"""Static review of infra/: the Bicep compiler is not available here, so these checks stand in.

They prove the templates hang together (modules exist, parameters line up), that
every role assignment says who needs it, that no key reaches the app settings, and
that the resources match what the code expects (queues, containers, workloads).
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from hastegeo.store.queues import ALL_QUEUES, POISON_SUFFIX
from hastegeo.workloads.registry import workload_names
from tests.drift.conftest import REPO, load_drift

INFRA = REPO / "infra"
BICEP_FILES = sorted(INFRA.rglob("*.bicep"))


@pytest.fixture(scope="module")
def drift() -> ModuleType:
    return load_drift()


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def module_calls(text: str) -> list[tuple[str, str, set[str]]]:
    """(symbol, path, keys of its params block) for every ``module`` declaration."""
    calls = []
    for match in re.finditer(r"^module\s+(\w+)\s+'([^']+)'\s*=.*?\{\s*$", text, re.MULTILINE):
        body_start = match.end()
        depth, i = 1, body_start
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[body_start:i]
        keys: set[str] = set()
        params = re.search(r"^\s*params:\s*\{\s*$", body, re.MULTILINE)
        if params:
            depth, j = 1, params.end()
            line_start = j
            while depth and j < len(body):
                char = body[j]
                if char == "\n":
                    line = body[line_start:j]
                    key = re.match(r"^\s*(\w+)\s*:", line)
                    if key and depth == 1:
                        keys.add(key.group(1))
                    line_start = j + 1
                depth += {"{": 1, "}": -1, "[": 1, "]": -1}.get(char, 0)
                j += 1
        calls.append((match.group(1), match.group(2), keys))
    return calls


def test_there_are_templates() -> None:
    names = {path.name for path in BICEP_FILES}
    assert {
        "main.bicep",
        "appSettings.bicep",
        "storage.bicep",
        "functions.bicep",
        "batch.bicep",
        "roles.bicep",
    } <= names


@pytest.mark.parametrize("path", BICEP_FILES, ids=lambda p: str(p.relative_to(INFRA)))
def test_modules_exist_and_parameters_line_up(path: Path, drift: ModuleType) -> None:
    for symbol, relative, keys in module_calls(read(path)):
        target = path.parent / relative
        assert target.is_file(), f"{path.name}: module {symbol} points at missing {relative}"
        declared = drift.parse_bicep(read(target), str(target)).params
        unknown = keys - set(declared)
        assert not unknown, f"{path.name}: module {symbol} passes undeclared params {sorted(unknown)}"
        required = {name for name, param in declared.items() if param.default is None}
        missing = required - keys
        assert not missing, f"{path.name}: module {symbol} does not pass required params {sorted(missing)}"


@pytest.mark.parametrize("path", BICEP_FILES, ids=lambda p: str(p.relative_to(INFRA)))
def test_every_declared_parameter_is_used(path: Path, drift: ModuleType) -> None:
    text = read(path)
    for name in drift.parse_bicep(text, str(path)).params:
        uses = len(re.findall(rf"(?<![\w.']){name}\b", text))
        assert uses >= 2, f"{path.name}: param {name} is declared but never used"


def test_the_parameters_file_sets_every_required_main_parameter(drift: ModuleType) -> None:
    main = drift.parse_bicep(read(INFRA / "main.bicep"), "main.bicep").params
    env_params = drift.parse_bicepparam(read(INFRA / "main.bicepparam"), "main.bicepparam")
    set_params = {p.param for p in env_params.values()}
    assert set_params <= set(main), sorted(set_params - set(main))
    required = {name for name, param in main.items() if param.default is None}
    assert required <= set_params, sorted(required - set_params)
    assert read(INFRA / "main.bicepparam").count("using 'main.bicep'") == 1


@pytest.mark.parametrize("path", BICEP_FILES, ids=lambda p: str(p.relative_to(INFRA)))
def test_every_role_assignment_says_who_needs_it(path: Path) -> None:
    lines = read(path).splitlines()
    for index, line in enumerate(lines):
        if re.match(r"^resource\s+\w+\s+'Microsoft\.Authorization/roleAssignments@", line):
            comment = []
            j = index - 1
            while j >= 0 and lines[j].startswith("//"):
                comment.append(lines[j])
                j -= 1
            text = " ".join(comment)
            where = f"{path.name}:{index + 1}: role assignment without a Who/Why comment"
            assert "Who:" in text, where
            assert "Why:" in text, where


def test_no_broad_roles() -> None:
    owner, contributor, user_access = (
        "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
        "b24988ac-6180-42a0-ab88-20f7382dd24c",
        "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
    )
    for path in BICEP_FILES:
        text = read(path)
        for role in (owner, contributor, user_access):
            assert role not in text, f"{path.name} assigns a broad role {role}"


def test_no_keys_anywhere_in_infra(drift: ModuleType) -> None:
    for path in BICEP_FILES:
        text = "\n".join(drift.strip_comment(line) for line in read(path).splitlines())
        assert "listKeys(" not in text, path.name
        assert "listConnectionStrings(" not in text, path.name
        assert not re.search(r"AccountKey=|SharedAccessSignature|primaryKey|adminUserEnabled:\s*true", text), path.name


def test_app_settings_carry_no_secrets(drift: ModuleType) -> None:
    app = drift.parse_bicep(read(INFRA / "modules" / "appSettings.bicep"), "appSettings.bicep")
    for entries in app.objects.values():
        for name, (expression, _) in entries.items():
            assert not re.search(r"KEY$|SECRET|PASSWORD|TOKEN", name), name
            assert "list" not in expression.lower(), name
    storage = app.objects["derivedSettings"]
    assert "AzureWebJobsStorage" not in storage, "production uses identity, not a connection string"
    assert "AzureWebJobsStorage__accountName" in storage


def test_app_settings_are_set_only_by_the_one_list() -> None:
    for path in BICEP_FILES:
        text = read(path)
        if path.name == "functions.bicep":
            assert "for setting in items(appSettings)" in text
            assert text.count("name: setting.key") == 1
        else:
            assert "siteConfig" not in text, f"{path.name} configures the app outside functions.bicep"
            assert "'appsettings'" not in text, f"{path.name} writes app settings outside the list"


def test_storage_matches_the_code() -> None:
    text = read(INFRA / "modules" / "storage.bicep")
    for queue in ALL_QUEUES:
        assert f"'{queue}'" in text, queue
        assert f"'{queue}{POISON_SUFFIX}'" in text, queue
    assert "allowSharedKeyAccess: false" in text
    assert "minimumTlsVersion: 'TLS1_2'" in text
    assert "deleteRetentionPolicy" in text
    assert "containerDeleteRetentionPolicy" in text
    main = read(INFRA / "main.bicep")
    for param in ("hasteJobsContainer", "hasteOutputsContainer", "hasteInputsContainer"):
        assert re.search(rf"Container: {param}\b", main), f"storage does not create the container from {param}"


def test_functions_app_is_flex_consumption_python_311_with_identity_and_cors() -> None:
    text = read(INFRA / "modules" / "functions.bicep")
    assert "tier: 'FlexConsumption'" in text
    assert "name: 'python'" in text
    assert "version: '3.11'" in text
    assert "type: 'SystemAssigned'" in text
    assert "allowedOrigins: corsAllowedOrigins" in text
    assert "hasteCorsAllowedOrigins" in read(INFRA / "main.bicep")


def test_batch_pools_cover_every_workload_and_scale_to_zero() -> None:
    main = read(INFRA / "main.bicep")
    pooled = set(re.findall(r"\{ name: '(\w+)', image: 'haste-(?:geo|train)'", main))
    assert pooled == set(workload_names())
    batch = read(INFRA / "modules" / "batch.bicep")
    assert "'AAD'" in batch
    assert "SharedKey" not in batch
    for token in ("$TargetDedicatedNodes", "$TargetLowPriorityNodes", "$NodeDeallocationOption", "$PendingTasks"):
        assert token in batch, token
    assert "identityReference" in batch


def test_workload_images_match_the_dockerfiles() -> None:
    main = read(INFRA / "main.bicep")
    images = dict(re.findall(r"\{ name: '(\w+)', image: 'haste-(geo|train)'", main))
    for image in ("geo", "train"):
        dockerfile = read(INFRA / "docker" / image / "Dockerfile")
        declared = set(re.search(r'HASTE_WORKLOADS="([^"]+)"', dockerfile).group(1).split())  # type: ignore[union-attr]
        assert declared == {w for w, i in images.items() if i == image}, image


def test_aml_modes() -> None:
    main = read(INFRA / "main.bicep")
    assert "if (amlMode == 'Create')" in main
    assert "if (amlMode == 'Existing')" in main
    access = read(INFRA / "modules" / "amlAccess.bicep")
    assert "existing = {" in access, "Existing mode references the workspace"
    assert not re.search(r"^resource \w+ 'Microsoft\.MachineLearningServices/[^']+' = \{", access, re.MULTILINE), (
        "Existing mode creates no Azure ML resource"
    )
    create = read(INFRA / "modules" / "amlWorkspace.bicep")
    for needle in (
        "minNodeCount: 0",
        "systemDatastoresAuthMode: 'identity'",
        "credentialsType: 'None'",
        "image: image",
    ):
        assert needle in create, needle


def test_azd_project_points_at_the_templates() -> None:
    config = yaml.safe_load(read(REPO / "azure.yaml"))
    assert config["infra"] == {"provider": "bicep", "path": "infra", "module": "main"}
    assert config["services"]["api"]["host"] == "function"
    assert "'azd-service-name': 'api'" in read(INFRA / "modules" / "functions.bicep")
