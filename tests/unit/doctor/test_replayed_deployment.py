"""The doctor through the real SDK clients, against recorded responses of a healthy and of broken deployments."""

from __future__ import annotations

import json

from hastegeo.doctor.result import Status, exit_code
from hastegeo.doctor.run import run
from tests.unit.doctor.conftest import AML_LOCATION, ARM, BATCH, GRAPH, SITE, TARGET, WORKSPACE, Deployment, by_name
from tests.unit.doctor.replay import recorded


def test_a_healthy_deployment_passes_every_check(deployment: Deployment) -> None:
    results = deployment.run()
    bad = [r for r in results if r.status is not Status.PASS]
    assert not bad, bad
    assert exit_code(results) == 0
    names = by_name(results)
    # every role the Bicep grants, both identities, every resource
    assert {n for n in names if n.startswith(("app:", "compute:"))} == {
        "app: Storage Blob Data Owner on storage",
        "app: Storage Queue Data Contributor on storage",
        "app: Azure Batch Job Submitter on batch",
        "app: Monitoring Metrics Publisher on insights",
        "app: Key Vault Secrets User on vault",
        "app: AzureML Data Scientist on workspace",
        "app: EventGrid Data Sender on topic",
        "compute: AcrPull on registry",
        "compute: Storage Blob Data Reader on inputs",
        "compute: Storage Blob Data Contributor on outputs",
    }
    # 4 nodes (batch.bicep's formula cap) of 4 vCPUs each
    assert names["dedicated cores, standardNCASv3_T4Family"].found.startswith("16 needed by haste-training")
    assert names["dedicated cores, standardDSv5Family"].found.startswith("64 needed")
    assert names["console redirect URI"].status is Status.PASS
    assert names["records in the last 24 h"].found.startswith("1842")
    assert names["project group demo"].status is Status.PASS
    # the app settings were read through the list action, not guessed
    assert any("/config/appsettings/list" in url for url in deployment.arm.requests)


def test_a_missing_role_assignment_fails_with_the_command_that_grants_it(deployment: Deployment) -> None:
    body = recorded("role_assignments")["body"]
    without = [
        a
        for a in body["value"]
        if not a["properties"]["roleDefinitionId"].endswith("48e5e92e-a480-4e71-aa9c-2778f4c13781")
    ]
    deployment.arm.add("GET", r"/roleAssignments\?", {**recorded("role_assignments"), "body": {"value": without}})
    result = by_name(deployment.run("roles"))["app: Azure Batch Job Submitter on batch"]
    assert result.status is Status.FAIL
    assert "11111111-1111-4111-8111-111111111111" in result.found
    assert result.fix.startswith("az role assignment create --assignee-object-id 11111111-1111-4111-8111-111111111111")
    assert '--role "Azure Batch Job Submitter"' in result.fix
    assert "/providers/Microsoft.Batch/batchAccounts/bahasteabc123" in result.fix


def test_a_broader_blob_role_meets_a_narrower_need(deployment: Deployment) -> None:
    body = recorded("role_assignments")["body"]
    swapped = json.loads(
        json.dumps(body).replace("ba92f5b4-2d11-453d-a403-e96b0029c9fe", "b7e6dc6d-f1e8-4753-8033-0f276bb0955b")
    )
    deployment.arm.add("GET", r"/roleAssignments\?", {**recorded("role_assignments"), "body": swapped})
    assert by_name(deployment.run("roles"))["compute: Storage Blob Data Contributor on outputs"].status is Status.PASS


def test_a_compute_identity_nobody_may_read_is_unknown_with_the_reason(deployment: Deployment) -> None:
    deployment.arm.add("GET", r"/userAssignedIdentities/id-haste-pool-abc123\?", recorded("arm_403"))
    results = by_name(deployment.run("roles"))
    assert results["compute: AcrPull on registry"].status is Status.UNKNOWN
    assert "403 AuthorizationFailed" in results["compute: AcrPull on registry"].found
    assert results["app: Azure Batch Job Submitter on batch"].status is Status.PASS


def test_a_403_on_role_assignments_is_unknown_not_pass(deployment: Deployment) -> None:
    deployment.arm.add(
        "GET", r"batchAccounts/bahasteabc123/providers/Microsoft\.Authorization/roleAssignments", recorded("arm_403")
    )
    results = deployment.run("roles")
    result = by_name(results)["app: Azure Batch Job Submitter on batch"]
    assert result.status is Status.UNKNOWN
    assert "403 AuthorizationFailed" in result.found
    assert "Reader" in result.fix
    assert exit_code(results) == 1


def test_a_gpu_family_at_zero_quota_fails_and_says_which_quota_to_raise(deployment: Deployment) -> None:
    account = recorded("batch_account")
    props = account["body"]["properties"]
    props["dedicatedCoreQuotaPerVMFamily"] = [
        {**family, "coreQuota": 0} if family["name"] == "standardNCASv3_T4Family" else family
        for family in props["dedicatedCoreQuotaPerVMFamily"]
    ]
    deployment.arm.add("GET", BATCH + r"\?", account)
    result = by_name(deployment.run("batch"))["dedicated cores, standardNCASv3_T4Family"]
    assert result.status is Status.FAIL
    assert "16 needed by haste-training" in result.found
    assert "no node can start" in result.found
    assert "request at least 16 dedicated cores, standardNCASv3_T4Family for Batch account bahasteabc123" in result.fix


def test_a_pool_quota_below_the_pools_fails(deployment: Deployment) -> None:
    account = recorded("batch_account")
    account["body"]["properties"]["poolQuota"] = 3
    deployment.arm.add("GET", BATCH + r"\?", account)
    result = by_name(deployment.run("batch"))["pool quota"]
    assert result.status is Status.FAIL
    assert "5 pool(s) needed" in result.found


def test_a_pool_with_a_resize_error_fails_with_the_error(deployment: Deployment) -> None:
    pools = recorded("pools")
    training = pools["body"]["value"][3]["properties"]
    training["allocationState"] = "Resizing"
    # PoolList.json's own resize error
    training["resizeOperationStatus"] = {
        "startTime": "2017-08-28T10:22:55.9407275Z",
        "targetDedicatedNodes": 6,
        "nodeDeallocationOption": "TaskCompletion",
        "resizeTimeout": "PT8M",
        "errors": [
            {
                "code": "AllocationTimedout",
                "message": "Desired number of dedicated nodes could not be allocated as the resize timeout was reached",
            }
        ],
    }
    deployment.arm.add("GET", BATCH + r"/pools\?", pools)
    result = by_name(deployment.run("batch"))["pool haste-training"]
    assert result.status is Status.FAIL
    assert "AllocationTimedout: Desired number of dedicated nodes" in result.found
    assert by_name(deployment.run("batch"))["pool haste-imagery"].status is Status.PASS


def test_a_missing_pool_fails(deployment: Deployment) -> None:
    pools = recorded("pools")
    pools["body"]["value"] = pools["body"]["value"][:3]
    deployment.arm.add("GET", BATCH + r"/pools\?", pools)
    result = by_name(deployment.run("batch"))["pool haste-training"]
    assert result.status is Status.FAIL
    assert "does not exist" in result.found


def test_a_missing_console_redirect_uri_fails_with_the_registration_command(deployment: Deployment) -> None:
    deployment.graph.add(
        "GET", GRAPH + r"/applications\(appId=", recorded("graph_application", spa={"redirectUris": []})
    )
    result = by_name(deployment.run("entra"))["console redirect URI"]
    assert result.status is Status.FAIL
    assert "AADSTS50011" in result.fix
    # the deploy workflow goes on when Graph refuses this step; an owner registers it later
    assert result.deferred
    assert "infra/scripts/console-redirect.sh 33333333-3333-4333-8333-333333333333" in result.fix
    assert "--console-url https://func-haste-abc123.azurewebsites.net/api/console/" in result.fix


def test_a_project_group_not_assigned_to_the_app_fails(deployment: Deployment) -> None:
    grants = recorded("graph_role_assignments")
    grants["body"]["value"] = grants["body"]["value"][1:]
    deployment.graph.add("GET", GRAPH + r"/servicePrincipals/[^/]+/appRoleAssignedTo", grants)
    result = by_name(deployment.run("entra"))["project group demo"]
    assert result.status is Status.FAIL
    assert "P1/P2" in result.fix


def test_a_registration_nobody_may_read_is_unknown(deployment: Deployment) -> None:
    deployment.graph.add("GET", GRAPH + r"/applications\(appId=", recorded("graph_403"))
    [result] = deployment.run("entra")
    assert result.status is Status.UNKNOWN
    assert "403 Authorization_RequestDenied: Insufficient privileges" in result.found


def test_easy_auth_without_the_api_audience_fails(deployment: Deployment) -> None:
    auth = recorded("auth_settings_v2")
    aad = auth["body"]["properties"]["identityProviders"]["azureActiveDirectory"]
    aad["validation"]["allowedAudiences"] = ["33333333-3333-4333-8333-333333333333"]
    deployment.arm.add("GET", SITE + r"/config/authsettingsV2(/list)?\?", auth)
    results = by_name(deployment.run("easyauth"))
    assert results["allowed audience"].status is Status.FAIL
    assert results["App Service authentication"].status is Status.PASS


def test_easy_auth_off_fails(deployment: Deployment) -> None:
    auth = recorded("auth_settings_v2")
    auth["body"]["properties"]["platform"]["enabled"] = False
    deployment.arm.add("GET", SITE + r"/config/authsettingsV2(/list)?\?", auth)
    assert by_name(deployment.run("easyauth"))["App Service authentication"].status is Status.FAIL


def test_no_telemetry_fails_with_what_to_check(deployment: Deployment) -> None:
    empty = recorded("logs_query")
    empty["body"]["tables"][0]["rows"] = [[0, None]]
    deployment.monitor.add("POST", r"/query", empty)
    [result] = deployment.run("telemetry")
    assert result.status is Status.FAIL
    assert "Monitoring Metrics Publisher" in result.fix


def test_an_unreadable_app_stops_early_with_the_permission_needed(deployment: Deployment) -> None:
    deployment.arm.add("GET", SITE + r"\?", recorded("arm_403"))
    [result] = deployment.run()
    assert result.status is Status.UNKNOWN
    assert "403 AuthorizationFailed" in result.found
    assert "FUNCTION_APP_NAME" in result.fix


def test_only_reads_what_the_selected_area_needs(deployment: Deployment) -> None:
    deployment.run("easyauth")
    assert not deployment.graph.requests
    assert not deployment.monitor.requests
    assert not any("batchAccounts" in url for url in deployment.arm.requests)


def test_a_missing_datastore_fails_the_aml_area(deployment: Deployment) -> None:
    deployment.aml.add("GET", r"/datastores/haste_inputs\?", recorded("arm_404"))
    results = by_name(deployment.run("aml"))
    assert results["datastore haste_inputs"].status is Status.FAIL
    assert "AML_DATASTORES" in results["datastore haste_inputs"].fix
    assert results["datastore haste_outputs"].status is Status.PASS
    assert results["compute haste-gpu"].status is Status.PASS


def test_a_workspace_the_operator_may_not_read_is_unknown(deployment: Deployment) -> None:
    deployment.aml.add("GET", WORKSPACE + r"\?", recorded("arm_403"))
    result = by_name(deployment.run("aml"))["workspace mlw-haste-abc123"]
    assert result.status is Status.UNKNOWN
    assert "AzureML Data Scientist or Reader" in result.fix


def test_the_arm_requests_go_to_the_deployment_named(deployment: Deployment) -> None:
    deployment.run("app")
    assert all(url.startswith("GET https://management.azure.com") or "POST" in url for url in deployment.arm.requests)
    assert any(url.startswith(f"GET {ARM.lstrip('^').replace(chr(92), '')}") for url in deployment.arm.requests)


# ---- Azure ML quota where Azure ML counts it, the Event Grid sender, the no-P1 path, cluster identities


def test_azure_ml_quota_is_read_from_azure_mls_usages_for_the_region(deployment: Deployment) -> None:
    results = by_name(deployment.run("aml"))
    gpu = results["Azure ML dedicated vCPUs, standardNCASv3_T4Family"]
    assert gpu.status is Status.PASS
    assert gpu.found.startswith("16 needed by haste-gpu at full size, quota 16")
    assert results["Azure ML dedicated vCPUs, region total"].found.startswith("32 needed")
    # the subscription-level line is the quota, not the workspace's line (limit 0) listed beside it
    assert any(
        "/providers/Microsoft.MachineLearningServices/locations/westeurope/usages" in u for u in deployment.arm.requests
    )


def test_a_gpu_family_at_zero_azure_ml_quota_fails_deferred_with_the_request_to_make(deployment: Deployment) -> None:
    usages = recorded("aml_usages")
    for line in usages["body"]["value"]:
        if line["id"].endswith("/usages/Standard_NCASv3_T4_Family_Cluster_Dedicated_vCPUs"):
            line["limit"] = 0
    deployment.arm.add("GET", AML_LOCATION + r"/usages\?", usages)
    results = deployment.run("aml")
    gpu = by_name(results)["Azure ML dedicated vCPUs, standardNCASv3_T4Family"]
    assert gpu.status is Status.FAIL
    assert "no node can start" in gpu.found
    assert "az ml compute list-usage --location westeurope" in gpu.fix
    assert "Not the VM cores of `az vm list-usage`" in gpu.fix
    assert gpu.deferred
    assert exit_code(results) == 1
    assert exit_code(results, deferred_ok=True) == 0


def test_azure_ml_quota_nobody_may_read_is_unknown(deployment: Deployment) -> None:
    deployment.arm.add("GET", AML_LOCATION + r"/usages\?", recorded("arm_403"))
    result = by_name(deployment.run("aml"))["Azure ML quota in westeurope"]
    assert result.status is Status.UNKNOWN
    assert "403 AuthorizationFailed" in result.found


def test_the_app_without_eventgrid_data_sender_on_its_topic_fails(deployment: Deployment) -> None:
    body = recorded("role_assignments")["body"]
    without = [a for a in body["value"] if "Microsoft.EventGrid" not in a["properties"]["scope"]]
    deployment.arm.add("GET", r"/roleAssignments\?", {**recorded("role_assignments"), "body": {"value": without}})
    result = by_name(deployment.run("roles"))["app: EventGrid Data Sender on topic"]
    assert result.status is Status.FAIL
    assert '--role "EventGrid Data Sender"' in result.fix
    assert "/providers/Microsoft.EventGrid/topics/evgt-haste-abc123" in result.fix


def test_an_endpoint_without_a_topic_fails_and_no_endpoint_asks_for_no_role(deployment: Deployment) -> None:
    listing = recorded("resources")
    listing["body"]["value"] = [r for r in listing["body"]["value"] if r["type"] != "Microsoft.EventGrid/topics"]
    deployment.arm.add("GET", ARM + r"/resourceGroups/rg-haste-dev/resources\?", listing)
    result = by_name(deployment.run("roles"))["app: EventGrid Data Sender on topic"]
    assert result.status is Status.FAIL
    assert "DEPLOY_EVENT_GRID=true" in result.fix
    settings = recorded("app_settings")
    del settings["body"]["properties"]["HASTE_EVENTGRID_ENDPOINT"]
    deployment.arm.add("POST", SITE + r"/config/appsettings/list", settings)
    assert "app: EventGrid Data Sender on topic" not in by_name(deployment.run("roles"))


def no_p1(deployment: Deployment) -> None:
    """The documented path without Entra ID P1: SecurityGroup claims, users hold roles, no group is assigned."""
    deployment.graph.add(
        "GET", GRAPH + r"/applications\(appId=", recorded("graph_application", groupMembershipClaims="SecurityGroup")
    )
    grants = recorded("graph_role_assignments")
    grants["body"]["value"] = [g for g in grants["body"]["value"] if g["principalType"] != "Group"]
    assert grants["body"]["value"], "the recorded assignments hold a user too"
    deployment.graph.add("GET", GRAPH + r"/servicePrincipals/[^/]+/appRoleAssignedTo", grants)


def test_the_no_p1_path_passes_with_groups_claim_security(deployment: Deployment) -> None:
    no_p1(deployment)
    results = run(TARGET, deployment.clients(), ("entra",), groups_claim="security")
    assert [r for r in results if r.status is not Status.PASS] == []
    names = by_name(results)
    assert names["group claims"].found == "SecurityGroup (HASTE_GROUPS_CLAIM=security)"
    assert "security group" in names["project group demo"].found


def test_the_no_p1_path_passes_when_the_choice_is_not_named(deployment: Deployment) -> None:
    no_p1(deployment)
    assert all(r.status is Status.PASS for r in deployment.run("entra"))


def test_a_registration_that_is_not_the_deployments_choice_fails(deployment: Deployment) -> None:
    no_p1(deployment)
    results = by_name(run(TARGET, deployment.clients(), ("entra",), groups_claim="application"))
    assert results["group claims"].status is Status.FAIL
    assert results["group claims"].fix.endswith("--groups-claim application")
    assert results["project group demo"].status is Status.PASS  # judged by the claims the token really has


def test_a_cluster_identity_without_the_data_roles_fails_with_the_setting_that_grants_them(
    deployment: Deployment,
) -> None:
    """Existing mode: credential-less datastores are mounted with the cluster's identity."""
    gpu = recorded("aml_compute_gpu")
    gpu["body"]["identity"] = {"type": "SystemAssigned", "principalId": "77777777-7777-4777-8777-777777777777"}
    deployment.aml.add("GET", WORKSPACE + r"/computes/haste-gpu\?", gpu)
    results = by_name(deployment.run("aml"))
    assert results["cluster haste-cpu: Storage Blob Data Reader on inputs"].status is Status.PASS
    failing = results["cluster haste-gpu: Storage Blob Data Reader on inputs"]
    assert failing.status is Status.FAIL
    assert failing.fix.startswith("set DEPLOY_AML_COMPUTE_PRINCIPAL_ID=77777777-7777-4777-8777-777777777777")
    assert results["cluster haste-gpu: AcrPull on registry"].status is Status.FAIL


def test_a_cluster_without_an_identity_fails(deployment: Deployment) -> None:
    gpu = recorded("aml_compute_gpu")
    del gpu["body"]["identity"]
    deployment.aml.add("GET", WORKSPACE + r"/computes/haste-gpu\?", gpu)
    result = by_name(deployment.run("aml"))["cluster haste-gpu identity"]
    assert result.status is Status.FAIL
    assert "credential-less datastores" in result.found
