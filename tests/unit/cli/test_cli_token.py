"""The CLI signs in with azure-identity and renews its token while it watches a job.

A loopback API refuses any token past its expiry; the real ``AzureCliCredential`` runs a
stand-in ``az`` that issues tokens living two seconds; ``haste watch`` follows a job for
longer than that. Without renewal the watch would end in a 401.
"""

from __future__ import annotations

import json
import stat
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from azure.core.credentials import AccessToken

from hastegeo.cli import main as cli
from hastegeo.cli.client import ApiClient, ApiError, CredentialToken
from hastegeo.cli.exits import ExitCode

TOKEN_LIFETIME_S = 2
JOB_RUNS_S = 4.5
STATIC = "static-token"

AZ = """#!{python}
import json, os, sys, time
log = os.environ["AZ_TOKEN_LOG"]
count = sum(1 for _ in open(log)) if os.path.exists(log) else 0
expires = int(time.time()) + {lifetime}
with open(log, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
print(json.dumps({{"accessToken": f"tok-{{count}}-{{expires}}", "expires_on": expires, "tokenType": "Bearer"}}))
"""


@dataclass
class Api:
    url: str
    authorised: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    started: float = 0.0


def valid(token: str) -> bool:
    if token == STATIC:
        return True
    parts = token.split("-")
    return len(parts) == 3 and parts[0] == "tok" and time.time() < int(parts[2])


@pytest.fixture
def api() -> Iterator[Api]:
    state = Api(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: dict[str, object]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if status < 400 else "application/problem+json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            token = self.headers.get("Authorization", "").removeprefix("Bearer ")
            if not valid(token):
                state.refused.append(token)
                self._send(401, {"title": "Unauthorized", "status": 401, "detail": "token expired or missing"})
                return
            state.authorised.append(token)
            state.started = state.started or time.monotonic()
            done = time.monotonic() - state.started > JOB_RUNS_S
            history = [{"at": "2026-01-01T00:00:00Z", "state": "running", "source": "test", "message": "running"}]
            if done:
                history.append({"at": "2026-01-01T00:00:05Z", "state": "succeeded", "source": "test", "message": "ok"})
            job = {
                "id": "job-1",
                "workload": "artifacts",
                "backend": "azure_batch",
                "state": "succeeded" if done else "running",
                "history": history,
                "outputs": [],
            }
            self._send(200, job)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def az_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "az"
    script.write_text(AZ.format(python=sys.executable, lifetime=TOKEN_LIFETIME_S), encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "az-tokens.jsonl"
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    monkeypatch.setenv("AZ_TOKEN_LOG", str(log))
    monkeypatch.delenv("HASTE_API_TOKEN", raising=False)
    monkeypatch.delenv("HASTE_FUNCTION_KEY", raising=False)
    return log


def test_watch_renews_the_token_it_gets_from_the_azure_cli(api: Api, az_log: Path) -> None:
    scope = "api://client-1/.default"
    code = cli.main(["--url", api.url, "--scope", scope, "watch", "job-1", "--timeout", "30"])
    assert code == 0
    assert api.refused == []
    issued = [json.loads(line) for line in az_log.read_text(encoding="utf-8").splitlines()]
    assert all(args[args.index("--resource") + 1] == "api://client-1" for args in issued)
    assert len(set(api.authorised)) >= 2, "a watch longer than a token's life used more than one token"
    assert len(issued) < len(api.authorised), "a token is reused until it nears its expiry, not fetched per request"


def test_without_renewal_the_same_watch_is_refused(api: Api, az_log: Path) -> None:
    """The control: one token fetched once expires during the watch, and the API says 401."""
    token = CredentialToken(cli.sign_in_credential(), "api://client-1/.default")()
    client = ApiClient(api.url, bearer_token=token)
    with pytest.raises(ApiError) as refused:
        client.watch("job-1", lambda event: None, timeout=30)
    assert refused.value.status == 401


def test_a_token_from_the_environment_still_wins(api: Api, az_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HASTE_API_TOKEN", STATIC)
    assert cli.main(["--url", api.url, "--scope", "api://client-1/.default", "get", "job-1"]) == 0
    assert api.authorised == [STATIC]
    assert not az_log.exists(), "no sign-in when a token is given"


def test_credential_token_refreshes_before_expiry_on_its_clock() -> None:
    now = [1000.0]
    issued: list[str] = []

    class Credential:
        def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
            issued.append(scopes[0])
            return AccessToken(f"t{len(issued)}", int(now[0]) + 3600)

    token = CredentialToken(Credential(), "api://x/.default", clock=lambda: now[0])  # type: ignore[arg-type]
    assert token() == "t1"
    now[0] += 3600 - 301
    assert token() == "t1", "still more than the margin (300 s) away from expiry"
    now[0] += 2
    assert token() == "t2"
    assert issued == ["api://x/.default", "api://x/.default"]


def test_without_any_sign_in_a_script_fails_at_once_with_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No environment credential, no az, no azd, no terminal: refused now, never a device code prompt."""
    monkeypatch.setenv("PATH", str(tmp_path))  # neither az nor azd can be found
    for name in ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("HASTE_API_TOKEN", raising=False)
    monkeypatch.delenv("HASTE_FUNCTION_KEY", raising=False)
    credential = cli.sign_in_credential()  # pytest's stdin is not a terminal
    assert "DeviceCodeCredential" not in {type(c).__name__ for c in credential.credentials}  # type: ignore[attr-defined]
    code = cli.main(["--url", "http://127.0.0.1:9", "--scope", "api://client-1/.default", "get", "job-1"])
    assert code == ExitCode.REFUSED
    err = capsys.readouterr().err
    assert "could not sign in" in err
    assert "az login" in err


def test_a_person_at_a_terminal_may_still_sign_in_with_a_device_code() -> None:
    names = [type(c).__name__ for c in cli.sign_in_credential(interactive=True).credentials]  # type: ignore[attr-defined]
    assert names == [
        "EnvironmentCredential",
        "AzureCliCredential",
        "AzureDeveloperCliCredential",
        "DeviceCodeCredential",
    ]
