"""Which managed identity a node's runtime copies checkpoints with (ADR 0044), asked of a loopback token endpoint.

Azure ML gives a job's code its cluster's identity through an endpoint named by ``MSI_ENDPOINT`` and
``MSI_SECRET`` (azure-identity's Azure ML source); a job that wants the cluster's user-assigned identity
names its client id, which Azure ML sets in ``DEFAULT_IDENTITY_CLIENT_ID``. Batch names the pool's
identity by its resource id. The endpoint here answers as that one does and records what it was asked.
"""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import pytest

from hastegeo.checkpoints.agent import node_blob_service
from hastegeo.checkpoints.layout import (
    ACCOUNT_URL_VARIABLE,
    COMPUTE_CLIENT_ID_VARIABLE,
    COMPUTE_IDENTITY,
    IDENTITY_VARIABLE,
)
from hastegeo_dev.testing.loopback import LoopbackService, answer_json

ACCOUNT = "https://sthaste.blob.core.windows.net"
SECRET = "endpoint-secret"  # the loopback endpoint's own, not a credential


class TokenEndpoint(LoopbackService):
    """Azure ML's identity endpoint (api-version 2017-09-01): a token for every request with the secret."""

    def __init__(self) -> None:
        super().__init__(("GET",))
        self.asked: list[dict[str, str]] = []

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        query = {key: values[0] for key, values in parse_qs(urlsplit(handler.path).query).items()}
        self.asked.append(query)
        if handler.headers.get("secret") != SECRET:
            answer_json(handler, 401, {"error": "no secret"})
            return
        token = {"access_token": "t", "expires_on": int(time.time()) + 3600, "token_type": "Bearer"}
        answer_json(handler, 200, {**token, "resource": query.get("resource", "")})


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> TokenEndpoint:
    with TokenEndpoint() as service:
        monkeypatch.setenv("MSI_ENDPOINT", f"{service.base_url}/msi/token")
        monkeypatch.setenv("MSI_SECRET", SECRET)
        for name in ("IDENTITY_ENDPOINT", "IDENTITY_HEADER", "AZURE_CLIENT_ID"):
            monkeypatch.delenv(name, raising=False)
        yield service


def token_request(env: dict[str, str], endpoint: TokenEndpoint) -> dict[str, str]:
    service = node_blob_service(env)
    assert service is not None
    assert service.url.rstrip("/") == ACCOUNT
    assert service.credential.get_token("https://storage.azure.com/.default").token == "t"
    return endpoint.asked[-1]


def test_on_azure_ml_the_runtime_asks_for_the_clusters_user_assigned_identity(endpoint: TokenEndpoint) -> None:
    env = {ACCOUNT_URL_VARIABLE: ACCOUNT, IDENTITY_VARIABLE: COMPUTE_IDENTITY, COMPUTE_CLIENT_ID_VARIABLE: "uai-client"}
    asked = token_request(env, endpoint)
    assert asked["clientid"] == "uai-client"
    assert asked["resource"] == "https://storage.azure.com"
    assert "mi_res_id" not in asked


def test_on_a_cluster_without_a_user_assigned_identity_it_asks_for_the_system_assigned_one(
    endpoint: TokenEndpoint,
) -> None:
    asked = token_request({ACCOUNT_URL_VARIABLE: ACCOUNT, IDENTITY_VARIABLE: COMPUTE_IDENTITY}, endpoint)
    assert "clientid" not in asked
    assert "mi_res_id" not in asked


def test_a_resource_id_names_no_identity_on_azure_ml_which_is_why_its_jobs_name_the_compute(
    endpoint: TokenEndpoint,
) -> None:
    """Batch's form (the pool identity's resource id) reaches Azure ML's endpoint without it: the token would be
    the system-assigned identity's, not the one that may write the outputs. An Azure ML job says ``compute``."""
    pool = "/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/pool"
    env = {ACCOUNT_URL_VARIABLE: ACCOUNT, IDENTITY_VARIABLE: pool, COMPUTE_CLIENT_ID_VARIABLE: "uai-client"}
    asked = token_request(env, endpoint)
    assert "clientid" not in asked
    assert pool not in asked.values()


def test_no_account_or_no_identity_is_no_access() -> None:
    assert node_blob_service({IDENTITY_VARIABLE: COMPUTE_IDENTITY}) is None
    assert node_blob_service({ACCOUNT_URL_VARIABLE: ACCOUNT}) is None
