"""Contract test: the REAL ``MLClient`` (azure-ai-ml, pinned) against an HTTPS test service on loopback.

The service is a few lines of ``http.server`` behind TLS with a self-signed
certificate generated here. ``MLClient(cloud=…, cloud_metadata=…)`` registers
a cloud whose Resource Manager endpoint is the loopback URL, and
``connection_verify`` trusts our certificate, so every ARM call the SDK makes
lands here. The test drives the backend's submit → status → cancel and asserts
the exact wire body of the job PUT (no code upload), which pins what the
service receives to this SDK version: an upgrade that changes the body fails
here first.
"""

from __future__ import annotations

import copy
import datetime
import importlib.metadata
import ipaddress
import json
import shlex
import ssl
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.storage.blob import BlobServiceClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from hastegeo.compute.azure_ml.adapter import AzureMLBackend, create
from hastegeo.compute.azure_ml.client import create_ml_client
from hastegeo.compute.azure_ml.streams import TEE
from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import BlobLocation, ComputeState
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError
from hastegeo_dev.devhost.azurite import Azurite
from tests.unit.azure_ml.aml_support import context_settings, make_spec

pytestmark = [
    pytest.mark.azurite,
    pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning"),
]
SDK_VERSION = "1.35.2"
WS = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-haste"
    "/providers/Microsoft.MachineLearningServices/workspaces/ws-haste"
)


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@dataclass
class FakeArm:
    """An ARM endpoint for one workspace: stores PUT resources, answers GET, accepts job cancel."""

    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_next: list[int] = field(default_factory=list)  # statuses to answer the next requests with
    url: str = ""

    def handle(self, method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        self.requests.append((method, path, body))
        if self.fail_next:
            status = self.fail_next.pop(0)
            code = {401: "InvalidAuthenticationToken", 403: "AuthorizationFailed"}.get(status, "ServiceUnavailable")
            return status, {"error": {"code": code, "message": "try later" if status >= 500 else "not allowed"}}
        resource = path.split("?", 1)[0]
        if method == "PUT":
            stored = {**copy.deepcopy(body), "id": resource, "name": resource.rsplit("/", 1)[-1]}
            if "/jobs/" in resource:
                stored["properties"]["status"] = "NotStarted"
            self.resources[resource] = stored
            return 201, stored
        if method == "GET" and resource in self.resources:
            return 200, self.resources[resource]
        if method == "GET" and resource.endswith("/jobs"):  # jobs.list: one page of every job in the workspace
            return 200, {"value": [job for key, job in self.resources.items() if key.startswith(resource + "/")]}
        if method == "POST" and resource.endswith("/cancel") and resource.removesuffix("/cancel") in self.resources:
            self.resources[resource.removesuffix("/cancel")]["properties"]["status"] = "CancelRequested"
            return 200, {}
        return 404, {"error": {"code": "ResourceNotFound", "message": f"{resource} not found"}}


@pytest.fixture
def arm(tmp_path: Path) -> Iterator[tuple[FakeArm, Path]]:
    cert_path, key_path = self_signed(tmp_path)
    service = FakeArm()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            status, document = service.handle(self.command, self.path, json.loads(raw) if raw else None)
            out = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        do_GET = do_PUT = do_POST = do_DELETE = _serve

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    service.url = f"https://127.0.0.1:{server.server_address[1]}/"
    try:
        yield service, cert_path
    finally:
        server.shutdown()
        server.server_close()


class StaticToken:
    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("loopback-token", 2**31)


def real_client_backend(
    arm: tuple[FakeArm, Path],
    azurite: Azurite,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sleeps: list[float],
    **aml: str,
) -> tuple[AzureMLBackend, str]:
    """The backend on the real ``MLClient`` pointed at the loopback ARM; and the output container."""
    service, cert = arm
    monkeypatch.delenv("AZUREML_CURRENT_CLOUD", raising=False)  # MLClient sets it; restore afterwards
    monkeypatch.chdir(tmp_path)  # not a git checkout: the SDK adds git properties to jobs submitted from one
    endpoints = ("azure_portal", "resource_manager", "active_directory", "aml_resource_id", "storage_endpoint")
    metadata = {key: service.url for key in (*endpoints, "registry_discovery_endpoint")}
    cloud = f"HasteLoopback{uuid.uuid4().hex[:8]}"  # the SDK keeps clouds in a module-level registry

    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    container = f"out-{unique}"
    blobs.create_container(container)
    context = BackendContext(
        settings=context_settings(azurite.connection_string, AML_DATASTORES=f"{container}=haste_outputs", **aml),
        blob_service=blobs,
        sleep=sleeps.append,
    )
    backend = create(
        context,
        client_factory=lambda settings: create_ml_client(
            settings, credential=StaticToken(), cloud=cloud, cloud_metadata=metadata, connection_verify=str(cert)
        ),
    )
    return backend, container


def test_real_ml_client_submits_the_pinned_job_body(
    arm: tuple[FakeArm, Path], azurite: Azurite, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert importlib.metadata.version("azure-ai-ml") == SDK_VERSION, (
        "azure-ai-ml changed: re-check the job PUT body below against the new SDK, then update SDK_VERSION"
    )
    service, _ = arm
    sleeps: list[float] = []
    backend, container = real_client_backend(arm, azurite, unique, tmp_path, monkeypatch, sleeps)
    spec = make_spec(output=BlobLocation(container=container, path="p1/job-0001"))
    service.fail_next = [503]  # the SDK must not retry by itself (retry_total=0): the adapter's budget does
    handle = backend.submit(spec)

    puts = [(path, body) for method, path, body in service.requests if method == "PUT"]
    env_path, env_body = puts[0]
    assert "/environments/CliV2AnonymousEnvironment/versions/" in env_path
    assert env_body == {
        "properties": {"image": "hasteacr.azurecr.io/haste/runtime:1.0", "isAnonymous": True, "isArchived": False}
    }
    job_path, job_body = puts[-1]
    assert job_path == f"{WS}/jobs/haste-job-0001?api-version=2025-01-01-preview"
    assert len([p for p, _ in puts if "/jobs/" in p]) == 1
    assert sleeps == [0.5]  # one 503 on the first GET, retried once by the adapter, not by the SDK
    assert [m for m, p, _ in service.requests[:2]] == ["GET", "GET"]
    env_id = env_path.split("?", 1)[0]
    expected = {
        "properties": {
            "displayName": "imagery job-0001",
            "description": "haste imagery job job-0001",
            "command": (
                "set -e\n"
                'mkdir -p "$HASTE_JOB_WORKDIR/inputs"\n'
                'ln -sfn "${{outputs.outputs}}" "$HASTE_JOB_WORKDIR/outputs"\n'
                'ln -sfn "${{outputs.logs}}" "$HASTE_JOB_WORKDIR/logs"\n'
                'mkdir -p "$(dirname "$HASTE_JOB_WORKDIR/inputs/"scene.tif)"\n'
                'ln -sfn "${{inputs.input_0}}" "$HASTE_JOB_WORKDIR/inputs/"scene.tif\n'
                'mkdir -p "$(dirname "$HASTE_JOB_WORKDIR/inputs/"tiles)"\n'
                'ln -sfn "${{inputs.input_1}}" "$HASTE_JOB_WORKDIR/inputs/"tiles\n'
                "if command -v python3 >/dev/null 2>&1; then\n"
                f'  exec python3 -c {shlex.quote(TEE)} "$HASTE_JOB_WORKDIR/logs" python -m hastegeo.workloads.imagery\n'
                "fi\n"
                "exec python -m hastegeo.workloads.imagery"
            ),
            "computeId": f"{WS}/computes/haste-cpu",
            "properties": {},
            "experimentName": "haste-p1",
            "isArchived": False,
            "inputs": {
                "input_0": {
                    "uri": "azureml://datastores/haste_inputs/paths/p1/scene.tif",
                    "mode": "ReadOnlyMount",
                    "jobInputType": "uri_file",
                },
                "input_1": {
                    "uri": "azureml://datastores/haste_inputs/paths/p1/tiles/",
                    "mode": "ReadOnlyMount",
                    "jobInputType": "uri_folder",
                },
            },
            "outputs": {
                "outputs": {
                    "uri": "azureml://datastores/haste_outputs/paths/p1/job-0001/outputs/",
                    "mode": "ReadWriteMount",
                    "jobOutputType": "uri_folder",
                },
                "logs": {
                    "uri": "azureml://datastores/haste_outputs/paths/p1/job-0001/logs/",
                    "mode": "ReadWriteMount",
                    "jobOutputType": "uri_folder",
                },
            },
            "environmentId": env_id,
            "tags": {
                "project": "p1",
                "job": "job-0001",
                "workload": "imagery",
                "haste_job_id": "job-0001",
                "haste_fingerprint": spec.fingerprint(),
            },
            "environmentVariables": {
                "HASTE_PARAMS_JSON": '{"bands": 3}',
                "HASTE_JOB_ID": "job-0001",
                "HASTE_JOB_WORKDIR": "/tmp/haste-job",
                "AZ_BATCH_TASK_WORKING_DIR": "/tmp/haste-job",  # the alias older images read, as on Batch
                "HASTE_CHECKPOINT_DIR": "/tmp/haste-job/checkpoints",  # on the node's disk (ADR 0044)
            },
            "identity": {"identityType": "Managed"},  # the cluster's: its mounts and checkpoint copies
            "limits": {"timeout": "PT1H", "jobLimitsType": "Command"},
            "jobType": "Command",
        }
    }
    assert job_body == expected

    # The real client's GET and deserialization feed the status mapping; a resubmit binds.
    assert backend.status(handle).state is ComputeState.QUEUED
    assert backend.submit(spec).provider_ids == handle.provider_ids
    assert len([1 for method, path, _ in service.requests if method == "PUT" and "/jobs/" in path]) == 1
    service.resources[job_path.split("?", 1)[0]]["properties"]["status"] = "Running"
    # The reconciler's listing, through the real client: our running job, never someone else's.
    foreign = copy.deepcopy(service.resources[job_path.split("?", 1)[0]])
    foreign.update(id=f"{WS}/jobs/someone-else", name="someone-else")
    foreign["properties"]["tags"] = {"project": "p1"}
    service.resources[foreign["id"]] = foreign
    listed = backend.list_active()
    assert [(ours, h.backend, h.provider_ids["job_name"]) for ours, h in listed] == [
        ("job-0001", "azure_ml", "haste-job-0001")
    ]
    backend.cancel(listed[0][1])
    assert any(m == "POST" and p.startswith(f"{WS}/jobs/haste-job-0001/cancel") for m, p, _ in service.requests)
    assert "CancelRequested" in (backend.status(handle).detail or "")
    # Failed: the reason comes from run history when reachable; here it is not (no discovery endpoint),
    # and the status is still FAILED with a readable reason rather than an exception.
    service.resources[job_path.split("?", 1)[0]]["properties"]["status"] = "Failed"
    failed = backend.status(handle)
    assert failed.state is ComputeState.FAILED
    assert failed.reason
    assert backend.list_active() == []  # ended: nothing left for the reconciler to stop


def test_real_ml_client_errors_are_retried_or_translated_by_the_one_call(
    arm: tuple[FakeArm, Path], azurite: Azurite, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 503 that outlasts the budget is transient; a 403 is terminal at once and names the setting to fix."""
    service, _ = arm
    sleeps: list[float] = []
    attempts = 2
    backend, container = real_client_backend(
        arm, azurite, unique, tmp_path, monkeypatch, sleeps, AML_RETRY_ATTEMPTS=str(attempts)
    )
    spec = make_spec(output=BlobLocation(container=container, path="p1/job-0001"))
    service.fail_next = [503] * attempts
    with pytest.raises(TransientBackendError, match="temporarily unavailable") as busy:
        backend.submit(spec)
    assert type(busy.value.__cause__).__name__ == "HttpResponseError"
    assert (len(service.requests), len(sleeps)) == (attempts, attempts - 1)  # one budget; the SDK adds none
    service.requests.clear()
    sleeps.clear()
    service.fail_next = [403]
    with pytest.raises(TerminalBackendError, match="AML_IDENTITY_MODE") as refused:
        backend.submit(spec)
    assert "AuthorizationFailed: not allowed" in str(refused.value)
    assert (len(service.requests), sleeps) == (1, [])
    assert backend.submit(spec).provider_ids["job_name"] == "haste-job-0001"  # the service answers again
