"""The drift check passes on the real tree and catches each of the reviewers' seed bugs.

Each seed test breaks a temporary copy of infra/ and .github/ the way the source
change did, and asserts the check fails with a message naming the setting and the
file to fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.drift.conftest import REPO, drop_lines, edit, replace_line

APP_SETTINGS = "infra/modules/appSettings.bicep"
BICEPPARAM = "infra/main.bicepparam"
DEPLOY = ".github/workflows/deploy.yml"


def problems(drift: ModuleType, root: Path, code: dict[str, Any]) -> list[Any]:
    return list(drift.run_checks(root, code=code))


def named(found: list[Any], setting: str, file: str) -> list[str]:
    """The problems about ``setting`` whose location is ``file`` (optionally with a :line)."""
    return [str(p) for p in found if p.setting == setting and p.file.split(":")[0] == file]


def test_the_real_tree_has_no_drift(drift: ModuleType, code: dict[str, Any]) -> None:
    assert [str(p) for p in problems(drift, REPO, code)] == []


def test_the_script_exits_zero_on_the_real_tree(drift: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert drift.main(["--root", str(REPO)]) == 0
    assert "agree" in capsys.readouterr().out


# ---------------------------------------------------------------- seed bugs


def test_seed_identity_mode_emitted_empty_when_aml_is_disabled(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    """Seed bug 1: infra emitted AML_IDENTITY_MODE='' while AML_MODE=Disabled."""
    edit(
        tree / APP_SETTINGS,
        replace_line(
            "AML_IDENTITY_MODE: amlIdentityMode",
            "AML_IDENTITY_MODE: amlMode == 'Disabled' ? '' : amlIdentityMode",
        ),
    )
    found = problems(drift, tree, code)
    hits = named(found, "AML_IDENTITY_MODE", APP_SETTINGS)
    assert hits, found
    assert "emitted empty" in hits[0]
    assert re.search(r"appSettings\.bicep:\d+", hits[0]), "the message points at the line"


def test_seed_subscription_id_not_passed_by_the_workflow(drift: ModuleType, code: dict[str, Any], tree: Path) -> None:
    """Seed bug 2: the deploy path never set AML_SUBSCRIPTION_ID."""
    edit(tree / DEPLOY, drop_lines(lambda line: line.strip().startswith("AML_SUBSCRIPTION_ID:")))
    found = problems(drift, tree, code)
    assert named(found, "AML_SUBSCRIPTION_ID", DEPLOY), found
    assert all(p.setting == "AML_SUBSCRIPTION_ID" for p in found), "nothing else is reported"


def test_seed_subscription_id_never_read_by_the_parameters_file(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    edit(tree / BICEPPARAM, drop_lines(lambda line: "'AML_SUBSCRIPTION_ID'" in line))
    found = problems(drift, tree, code)
    assert named(found, "AML_SUBSCRIPTION_ID", BICEPPARAM), found


def test_seed_subscription_id_empty_when_aml_is_enabled(drift: ModuleType, code: dict[str, Any], tree: Path) -> None:
    """Seed bug 2, infra side: the id passes through unresolved, so Existing mode can get ''."""
    # Drop the @minLength(1) that guarantees the resolved id is never empty.
    edit(tree / APP_SETTINGS, lambda text: re.sub(r"@minLength\(1\)\n(param amlSubscriptionId )", r"\1", text))
    found = problems(drift, tree, code)
    hits = named(found, "AML_SUBSCRIPTION_ID", APP_SETTINGS)
    assert hits, found
    assert "AML_MODE=Existing" in hits[0] or "AML_MODE=Create" in hits[0]


def test_seed_workflow_passes_no_aml_variables(drift: ModuleType, code: dict[str, Any], tree: Path) -> None:
    """Seed bug 3: the workflow mapped Batch settings but none of the AML ones."""
    edit(tree / DEPLOY, drop_lines(lambda line: line.strip().startswith("AML_")))
    found = problems(drift, tree, code)
    operator = drift.parse_bicep((tree / APP_SETTINGS).read_text(encoding="utf-8"), APP_SETTINGS).objects[
        "operatorSettings"
    ]
    aml = sorted(name for name in operator if name.startswith("AML_"))
    assert aml, "the infra list has AML settings to miss"
    flagged = sorted({p.setting for p in found if p.file == DEPLOY})
    assert flagged == aml


def test_the_cli_names_setting_and_file(drift: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(tree / DEPLOY, drop_lines(lambda line: line.strip().startswith("AML_SUBSCRIPTION_ID:")))
    assert drift.main(["--root", str(tree)]) == 1
    err = capsys.readouterr().err
    assert f"{DEPLOY}: AML_SUBSCRIPTION_ID:" in err


# ---------------------------------------------------------------- other drift


def test_a_default_that_differs_in_the_workflow(drift: ModuleType, code: dict[str, Any], tree: Path) -> None:
    edit(
        tree / DEPLOY,
        replace_line(
            "AML_MODE: ${{ vars.AML_MODE || 'Disabled' }}",
            "AML_MODE: ${{ vars.AML_MODE || 'Existing' }}",
        ),
    )
    hits = named(problems(drift, tree, code), "AML_MODE", DEPLOY)
    assert hits
    assert "differs from the code's default 'Disabled'" in hits[0]


def test_a_default_that_differs_in_the_parameters_file(drift: ModuleType, code: dict[str, Any], tree: Path) -> None:
    edit(
        tree / BICEPPARAM,
        lambda text: text.replace("'HASTE_POLL_MAX_S', '60.0'", "'HASTE_POLL_MAX_S', '30'"),
    )
    hits = named(problems(drift, tree, code), "HASTE_POLL_MAX_S", BICEPPARAM)
    assert hits
    assert "differs" in hits[0]


def test_equal_defaults_in_another_spelling_are_not_drift(drift: ModuleType, code: dict[str, Any], tree: Path) -> None:
    edit(tree / BICEPPARAM, lambda text: text.replace("'HASTE_POLL_MAX_S', '60.0'", "'HASTE_POLL_MAX_S', '60'"))
    assert problems(drift, tree, code) == []


def test_an_invalid_default_is_reported(drift: ModuleType, code: dict[str, Any], tree: Path) -> None:
    edit(tree / BICEPPARAM, lambda text: text.replace("'AML_RETRY_ATTEMPTS', '3'", "'AML_RETRY_ATTEMPTS', 'three'"))
    hits = named(problems(drift, tree, code), "AML_RETRY_ATTEMPTS", BICEPPARAM)
    assert hits
    assert "not a valid value" in hits[0]


def test_a_fallback_missing_from_the_workflow_is_a_differing_default(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    edit(
        tree / DEPLOY,
        replace_line(
            "AML_IDENTITY_MODE: ${{ vars.AML_IDENTITY_MODE || 'managed_identity' }}",
            "AML_IDENTITY_MODE: ${{ vars.AML_IDENTITY_MODE }}",
        ),
    )
    hits = named(problems(drift, tree, code), "AML_IDENTITY_MODE", DEPLOY)
    assert hits
    assert "differs" in hits[0]


def test_a_setting_the_code_declares_but_infra_does_not_emit(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    edit(tree / APP_SETTINGS, drop_lines(lambda line: line.strip().startswith("HASTE_HISTORY_LIMIT:")))
    found = problems(drift, tree, code)
    assert named(found, "HASTE_HISTORY_LIMIT", APP_SETTINGS)
    assert named(found, "HASTE_HISTORY_LIMIT", BICEPPARAM), "still read from the environment, now for nothing"


def test_a_setting_infra_emits_but_the_code_does_not_declare(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    edit(
        tree / APP_SETTINGS,
        replace_line("AML_CODE_DIR: amlCodeDir", "AML_CODE_DIR: amlCodeDir\n  AML_SUBSCRIPTON_ID: amlSubscriptionId"),
    )
    hits = named(problems(drift, tree, code), "AML_SUBSCRIPTON_ID", APP_SETTINGS)
    assert hits
    assert "not declared by the code" in hits[0]


def test_a_derived_setting_must_not_also_come_from_the_workflow(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    edit(
        tree / DEPLOY,
        replace_line(
            "AML_MODE: ${{ vars.AML_MODE || 'Disabled' }}",
            "AML_MODE: ${{ vars.AML_MODE || 'Disabled' }}\n      BATCH_ACCOUNT_URL: ${{ vars.BATCH_ACCOUNT_URL }}",
        ),
    )
    hits = named(problems(drift, tree, code), "BATCH_ACCOUNT_URL", DEPLOY)
    assert any("derived by infra" in hit for hit in hits)


def test_a_workflow_variable_mapped_from_another_name(drift: ModuleType, code: dict[str, Any], tree: Path) -> None:
    edit(
        tree / DEPLOY,
        replace_line("AML_WORKSPACE: ${{ vars.AML_WORKSPACE }}", "AML_WORKSPACE: ${{ vars.AML_WORKSPACE_NAME }}"),
    )
    hits = named(problems(drift, tree, code), "AML_WORKSPACE", DEPLOY)
    assert hits
    assert "vars.AML_WORKSPACE_NAME" in hits[0]


def test_a_new_code_setting_must_reach_infra_workflow_and_docs(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    from pydantic import BaseModel, Field

    class Extra(BaseModel):
        knob: int = Field(5, alias="HASTE_NEW_KNOB", description="A knob added by the code.")

    extended = {**code, **drift.code_settings({"extra": Extra})}
    found = problems(drift, tree, extended)
    assert named(found, "HASTE_NEW_KNOB", APP_SETTINGS)
    assert any(p.file == "docs/deploy.md" for p in found), "the generated table is now out of date"


def test_an_expression_the_check_cannot_analyse_is_a_problem(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    edit(tree / APP_SETTINGS, replace_line("AML_IMAGE: amlImage", "AML_IMAGE: last(split(amlImage, '/'))"))
    hits = named(problems(drift, tree, code), "AML_IMAGE", APP_SETTINGS)
    assert hits
    assert "cannot analyse" in hits[0]


# ---------------------------------------------------------------- reading the code


def test_requirements_come_from_the_validators(code: dict[str, Any]) -> None:
    for name in ("AML_SUBSCRIPTION_ID", "AML_RESOURCE_GROUP", "AML_WORKSPACE"):
        conditions = code[name].required_when
        assert {"AML_MODE": ("Existing", "Create")} in [dict(c) for c in conditions], name
    assert code["AML_IDENTITY_MODE"].always_required


def test_required_when_marker_is_honoured(drift: ModuleType) -> None:
    from pydantic import BaseModel, Field

    class Marked(BaseModel):
        mode: str = Field("off", alias="X_MODE", description="Mode.")
        target: str = Field(
            "", alias="X_TARGET", description="Target.", json_schema_extra={"required_when": {"X_MODE": ["on"]}}
        )

    settings = drift.code_settings({"x": Marked})
    assert [dict(c) for c in settings["X_TARGET"].required_when] == [{"X_MODE": ("on",)}]
    assert settings["X_TARGET"].requirement() == "X_MODE = on"


def test_deploy_default_marker_overrides_the_expected_default(drift: ModuleType) -> None:
    from pydantic import BaseModel, Field

    class Marked(BaseModel):
        backends: str = Field(
            "local", alias="X_BACKENDS", description="B.", json_schema_extra={"deploy_default": "azure_batch"}
        )

    assert drift.code_settings({"x": Marked})["X_BACKENDS"].deploy_default == "azure_batch"


def test_the_allowlist_names_only_real_settings(drift: ModuleType, code: dict[str, Any]) -> None:
    """An entry for a setting the code no longer has would silently excuse a future one."""
    assert set(drift.NOT_DEPLOYED) <= set(code)
    for prefix in drift.NOT_DEPLOYED_PREFIXES:
        assert any(name.startswith(prefix) for name in code), prefix
    assert len(drift.NOT_DEPLOYED) + len(drift.NOT_DEPLOYED_PREFIXES) <= 5, "keep the allowlist short"
    assert set(drift.DEPLOYED_DESPITE_PREFIX) <= set(code)
    for name in drift.DEPLOYED_DESPITE_PREFIX:
        assert any(name.startswith(prefix) for prefix in drift.NOT_DEPLOYED_PREFIXES), f"{name}: no longer needed"


def test_the_local_opt_in_for_azure_is_a_deployment_setting(
    drift: ModuleType, code: dict[str, Any], tree: Path
) -> None:
    """Under the excluded HASTE_LOCAL_ prefix, yet deployed: a deployment replaces every app setting."""
    assert drift.not_deployed_reason("HASTE_LOCAL_ROOT")
    assert drift.not_deployed_reason("HASTE_LOCAL_ALLOW_IN_AZURE") is None
    edit(
        tree / APP_SETTINGS,
        drop_lines(lambda line: line.strip() == "HASTE_LOCAL_ALLOW_IN_AZURE: hasteLocalAllowInAzure"),
    )
    assert named(problems(drift, tree, code), "HASTE_LOCAL_ALLOW_IN_AZURE", APP_SETTINGS)


# ---------------------------------------------------------------- the Bicep evaluator


@pytest.mark.parametrize(
    ("expression", "env", "expected"),
    [
        ("mode == 'Disabled' ? '' : value", {"mode": "Disabled", "value": "x"}, ""),
        ("mode == 'Disabled' ? '' : value", {"mode": "Existing", "value": "x"}, "x"),
        ("empty(value) ? 'fallback' : value", {"value": ""}, "fallback"),
        ("'mlw-${value}'", {"value": "a"}, "mlw-a"),
        ("mode != 'Create' && !empty(value)", {"mode": "Existing", "value": "v"}, True),
        ("toLower('ABC')", {}, "abc"),
    ],
)
def test_evaluator(drift: ModuleType, expression: str, env: dict[str, Any], expected: Any) -> None:
    assert drift.evaluate(drift.parse_expression(expression), env, {}) == expected


def test_resource_functions_are_non_empty(drift: ModuleType) -> None:
    value = drift.evaluate(drift.parse_expression("subscription().subscriptionId"), {}, {})
    assert isinstance(value, drift.Opaque)


def test_comments_inside_strings_are_kept(drift: ModuleType) -> None:
    assert drift.strip_comment("  URL: 'https://x' // the url") == "  URL: 'https://x'"
