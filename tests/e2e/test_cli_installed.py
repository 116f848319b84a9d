"""The installed ``haste``, run as a user runs it (a subprocess, from a folder outside the checkout),
against the development stack and against nothing at all: every command, every error it can meet,
each with its documented exit code and never a traceback (unless ``--debug`` asks for one)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient, ApiError
from hastegeo.cli.exits import ExitCode
from hastegeo_dev.stack import HostProcess, LocalStack, free_port
from tests.support.hosts import HttpOnlyHost

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

HASTE = str(Path(sys.executable).parent / "haste")
SMALL = b"small input\n" * 1000
LARGE = 32 * 1024 * 1024
# One submission every five seconds: a second one at once is answered 429 with Retry-After.
RATE = {"HASTE_SUBMIT_RATE_PER_S": "0.2", "HASTE_SUBMIT_BURST": "1"}


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every command runs from: not the checkout, nor inside it."""
    return tmp_path_factory.mktemp("elsewhere")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    settings = {"HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "2", **RATE}
    with LocalStack(tmp_path_factory.mktemp("stack"), settings=settings) as running:
        inputs = BlobServiceClient.from_connection_string(running.azurite.connection_string)
        inputs.get_container_client("haste-inputs").upload_blob("p1/small.txt", SMALL)
        # Random bytes do not compress: zipping them takes long enough for a cancel to catch the job.
        inputs.get_container_client("haste-inputs").upload_blob("p1/large.bin", random.Random(7).randbytes(LARGE))
        yield running


def haste(
    *args: str, url: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("HASTE_", "AzureWebJobs"))}
    clean.update({"HASTE_API_URL": url, **(env or {})})
    return subprocess.run([HASTE, *args], cwd=cwd, env=clean, capture_output=True, text=True, timeout=timeout)


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


def submit(stack: LocalStack, outside: Path, *extra: str, source: str = "blob:p1/small.txt") -> str:
    result = haste(
        "submit", "--workload", "artifacts", "--project", "p1", "--input", source, *extra,
        url=stack.base_url, cwd=outside,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["id"]


@pytest.fixture(scope="module")
def finished(stack: LocalStack, outside: Path) -> str:
    """A job that succeeded, submitted and followed with the table output."""
    result = haste(
        "submit", "--workload", "artifacts", "--project", "p1", "--input", "blob:p1/small.txt", "--watch",
        "-o", "table", url=stack.base_url, cwd=outside,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    job_id = result.stdout.splitlines()[0]
    assert "state: succeeded" in result.stdout
    assert "running" in result.stdout  # the events as they came
    return job_id


def test_version_and_help(outside: Path) -> None:
    from hastegeo import __version__

    result = haste("--version", url="http://127.0.0.1:9", cwd=outside)
    assert (result.returncode, result.stdout.strip()) == (0, f"haste {__version__}")
    helped = haste("--help", url="http://127.0.0.1:9", cwd=outside)
    for command in ("submit", "get", "list", "watch", "logs", "cancel", "outputs", "backends", "completion", "dev"):
        assert command in helped.stdout


def test_json_is_exactly_the_api_body(stack: LocalStack, outside: Path, finished: str) -> None:
    api = ApiClient(stack.base_url)
    got = haste("get", finished, url=stack.base_url, cwd=outside)  # piped: JSON by default
    assert got.returncode == 0
    assert json.loads(got.stdout) == api.get(finished)
    listed = haste("list", "--project", "p1", "-o", "json", url=stack.base_url, cwd=outside)
    lines = [json.loads(line) for line in listed.stdout.splitlines()]
    assert lines == list(api.list("p1"))[: len(lines)]
    assert finished in {job["id"] for job in lines}
    logs = haste("logs", finished, "--output", "json", url=stack.base_url, cwd=outside)
    assert [json.loads(line) for line in logs.stdout.splitlines()] == api.get(finished)["history"]
    outputs = haste("-o", "json", "outputs", finished, url=stack.base_url, cwd=outside)
    assert [json.loads(line) for line in outputs.stdout.splitlines()] == api.get(finished)["outputs"]
    backends = haste("backends", url=stack.base_url, cwd=outside)
    assert json.loads(backends.stdout) == api.backends()


def test_tables_for_people(stack: LocalStack, outside: Path, finished: str) -> None:
    env = {"HASTE_OUTPUT": "table"}
    got = haste("get", finished, url=stack.base_url, cwd=outside, env=env)
    assert got.stdout.startswith(f"job {finished}  artifacts  on local  state: succeeded")
    listed = haste("list", "--project", "p1", url=stack.base_url, cwd=outside, env=env)
    assert any(line.startswith(finished) and "succeeded" in line for line in listed.stdout.splitlines())
    outputs = haste("outputs", finished, url=stack.base_url, cwd=outside, env=env)
    assert "outputs/artifacts.zip" in outputs.stdout
    backends = haste("backends", url=stack.base_url, cwd=outside, env=env)
    assert backends.stdout.startswith("default: ")
    assert "local" in backends.stdout


def test_logs_follow_exits_as_watch(stack: LocalStack, outside: Path) -> None:
    job_id = submit(stack, outside)
    followed = haste("logs", job_id, "--follow", "-o", "table", url=stack.base_url, cwd=outside)
    assert followed.returncode == ExitCode.OK, followed.stderr
    lines = followed.stdout.splitlines()
    assert "queued" in lines[0]
    assert "succeeded" in lines[-1]
    # A job can finish before a cancel from a new process arrives (a busy machine starts processes
    # slowly): refused (409, "already ended"), or accepted after the work was done, when it still ends
    # succeeded. A large input makes that rare; submit again, a bounded number of times, until one is
    # caught before its end.
    for _ in range(5):
        cancelled = submit(stack, outside, source="blob:p1/large.bin")
        answer = haste("cancel", cancelled, url=stack.base_url, cwd=outside)
        if answer.returncode != ExitCode.OK:
            assert answer.returncode == ExitCode.REFUSED, answer.stderr
            assert "already ended" in answer.stderr
            continue
        followed = haste("logs", cancelled, "-f", "-o", "json", url=stack.base_url, cwd=outside)
        if json.loads(followed.stdout.splitlines()[-1])["state"] != "succeeded":
            break
        assert followed.returncode == ExitCode.OK
    else:
        pytest.fail("every job ended before its cancel arrived")
    assert followed.returncode == ExitCode.JOB_CANCELLED
    assert json.loads(followed.stdout.splitlines()[-1])["state"] == "cancelled"
    watched = haste("watch", cancelled, url=stack.base_url, cwd=outside)
    assert watched.returncode == ExitCode.JOB_CANCELLED
    assert json.loads(watched.stdout)["state"] == "cancelled"


def test_outputs_download_verified_and_resumable(
    stack: LocalStack, outside: Path, finished: str, tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    first = haste("outputs", finished, "--download", str(folder), url=stack.base_url, cwd=outside)
    assert first.returncode == 0, first.stderr
    reports = [json.loads(line) for line in first.stdout.splitlines()]
    records = ApiClient(stack.base_url).get(finished)["outputs"]
    assert [r["name"] for r in reports] == [r["name"] for r in records]
    for report, record in zip(reports, records, strict=True):
        data = (folder / record["name"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (record["size"], record["sha256"])
        assert report["action"] == "downloaded"
        assert "sig=" not in json.dumps(report)
    again = haste("outputs", finished, "--download", str(folder), url=stack.base_url, cwd=outside)
    assert {json.loads(line)["action"] for line in again.stdout.splitlines()} == {"present"}

    # Interrupted half way: the .part is kept and continued with a Range request.
    archive = folder / "outputs" / "artifacts.zip"
    whole = archive.read_bytes()
    archive.unlink()
    archive.with_name("artifacts.zip.part").write_bytes(whole[: len(whole) // 2])
    resumed = haste("outputs", finished, "--download", str(folder), url=stack.base_url, cwd=outside)
    actions = {json.loads(line)["name"]: json.loads(line)["action"] for line in resumed.stdout.splitlines()}
    assert actions["outputs/artifacts.zip"] == "resumed"
    assert archive.read_bytes() == whole

    # A .part that cannot be the file: refused, removed, and the next run fetches it whole.
    archive.unlink()
    archive.with_name("artifacts.zip.part").write_bytes(b"x" * len(whole))
    corrupt = haste("outputs", finished, "--download", str(folder), url=stack.base_url, cwd=outside)
    assert corrupt.returncode == ExitCode.UNAVAILABLE
    assert "does not match the job's manifest" in corrupt.stderr
    assert not archive.with_name("artifacts.zip.part").exists()
    assert not archive.exists()
    no_traceback(corrupt)
    fixed = haste("outputs", finished, "--download", str(folder), url=stack.base_url, cwd=outside)
    assert fixed.returncode == 0
    assert archive.read_bytes() == whole


def test_refusals_say_why(stack: LocalStack, outside: Path, finished: str, tmp_path: Path) -> None:
    missing = haste("get", "nosuchjob", url=stack.base_url, cwd=outside)
    assert missing.returncode == ExitCode.NOT_FOUND
    assert "Job not found (HTTP 404)" in missing.stderr
    ended = haste("cancel", finished, url=stack.base_url, cwd=outside)
    assert ended.returncode == ExitCode.REFUSED
    assert "cannot be cancelled (HTTP 409)" in ended.stderr
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"workload": "nosuch", "projectId": "p1", "colour": "red"}))
    invalid = haste("submit", "--file", str(request), url=stack.base_url, cwd=outside)
    assert invalid.returncode == ExitCode.REFUSED
    fields = [line.strip().split(":")[0] for line in invalid.stderr.splitlines()[1:]]
    assert {"workload", "colour"} <= set(fields), invalid.stderr
    request.write_text(json.dumps({"workload": "artifacts", "projectId": "p1", "parameters": {"nosuch": 1}}))
    parameter = haste("submit", "--file", str(request), url=stack.base_url, cwd=outside)
    assert parameter.returncode == ExitCode.REFUSED, parameter.stderr
    assert "parameters.nosuch" in parameter.stderr
    for result in (missing, ended, invalid, parameter):
        no_traceback(result)


@pytest.mark.parametrize(
    ("content", "says"),
    [(None, "cannot read the request file"), ("{not json", "is not JSON"), ("[1, 2]", "not an object")],
)
def test_a_bad_request_file_is_a_usage_error(outside: Path, tmp_path: Path, content: str | None, says: str) -> None:
    path = tmp_path / "request.json"
    if content is not None:
        path.write_text(content)
    result = haste("submit", "--file", str(path), url="http://127.0.0.1:9", cwd=outside)
    assert result.returncode == ExitCode.USAGE
    assert says in result.stderr
    no_traceback(result)


def test_usage_errors(outside: Path) -> None:
    unknown = haste("submit", "--workload", "nosuch", "--project", "p1", url="http://127.0.0.1:9", cwd=outside)
    assert unknown.returncode == ExitCode.USAGE
    assert "invalid choice: 'nosuch'" in unknown.stderr
    bad_input = haste(
        "submit", "--workload", "artifacts", "--project", "p", "--input", "x", url="http://x", cwd=outside
    )
    assert bad_input.returncode == ExitCode.USAGE
    assert "--input takes" in bad_input.stderr
    no_traceback(bad_input)


def test_a_429_is_retried_after_its_retry_after(stack: LocalStack, outside: Path) -> None:
    """Another client takes every submission token (its requests are refused 400 after taking one), so
    the API answers 429 to haste whatever the machine's speed; the retry itself is timed in
    tests/unit/cli/test_cli_errors.py against a server that answers as told."""
    stop = threading.Event()

    def drain() -> None:
        other = ApiClient(stack.base_url, retry_budget_s=0)
        while not stop.is_set():
            with contextlib.suppress(ApiError):
                other.submit({"workload": "artifacts", "projectId": "p1"})
            time.sleep(0.05)

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    try:
        refused = haste("submit", "--workload", "artifacts", "--project", "p1", "--retry-budget", "0",
                        url=stack.base_url, cwd=outside)  # fmt: skip
        waiting = subprocess.Popen(
            [HASTE, "--url", stack.base_url, "submit", "--workload", "artifacts", "--project", "p1",
             "--input", "blob:p1/small.txt"],
            cwd=outside, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    finally:
        stop.set()
        drainer.join(30)
    out, err = waiting.communicate(timeout=120)
    assert refused.returncode == ExitCode.UNAVAILABLE, refused.stderr
    assert "Too many submissions (HTTP 429)" in refused.stderr
    no_traceback(refused)
    assert waiting.returncode == 0, err  # accepted once the Retry-After allowed it
    assert json.loads(out)["state"] == "queued"


# The callers the two refusals need: none (an unsigned request) and a reader.
CALLERS = {"unsigned": "", "reader": "name=reader@localhost;roles=Haste.Reader"}


@pytest.fixture
def caller_urls(stack: LocalStack) -> Iterator[dict[str, str]]:
    """A host per caller in ``CALLERS`` (injected as ``HASTE_DEV_PRINCIPAL``), on the stack's storage, by URL.

    HTTP only, so they take none of the stack's queue work; started side by side, and the stack's
    own host is left running (restarting it once per caller cost three host starts and stops)."""
    hosts = {
        name: HttpOnlyHost(
            stack.root,
            {**stack.env, "HASTE_DEV_PRINCIPAL": value},
            free_port(),
            stack.workdir / f"host-{name}.log",
            stack.lease_seconds,
        )
        for name, value in CALLERS.items()
    }
    try:
        with ThreadPoolExecutor(len(hosts)) as starting:
            list(starting.map(HostProcess.start, hosts.values()))
        yield {name: host.base_url for name, host in hosts.items()}
    finally:
        for host in hosts.values():
            host.stop()


def test_401_says_how_to_sign_in_and_403_which_role(outside: Path, caller_urls: dict[str, str]) -> None:
    unsigned = haste("list", "--project", "p1", url=caller_urls["unsigned"], cwd=outside)
    assert unsigned.returncode == ExitCode.REFUSED
    assert "(HTTP 401)" in unsigned.stderr
    assert "HASTE_API_SCOPE" in unsigned.stderr
    assert "az login" in unsigned.stderr
    reader = haste("submit", "--workload", "artifacts", "--project", "p1", url=caller_urls["reader"], cwd=outside)
    assert reader.returncode == ExitCode.REFUSED
    assert "(HTTP 403)" in reader.stderr
    assert "Haste.Reader cannot submit" in reader.stderr
    assert "Haste.Submitter" in reader.stderr
    no_traceback(unsigned)
    no_traceback(reader)


COMMANDS = [
    ["submit", "--workload", "artifacts", "--project", "p1"],
    ["get", "j1"],
    ["list", "--project", "p1"],
    ["watch", "j1"],
    ["logs", "j1", "--follow"],
    ["cancel", "j1"],
    ["outputs", "j1", "--download", "out"],
    ["backends"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_stopped_stack_is_one_line_and_how_to_start_it(outside: Path, command: list[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = haste(*command, url=url, cwd=outside)
    assert result.returncode == ExitCode.UNAVAILABLE
    assert result.stderr.splitlines()[0] == f"error: nothing answered at {url} (connection refused)"
    assert "make dev" in result.stderr
    assert "HASTE_API_URL" in result.stderr
    no_traceback(result)


def test_debug_shows_the_traceback(outside: Path) -> None:
    result = haste("--debug", "get", "j1", url=f"http://127.0.0.1:{free_port()}", cwd=outside)
    assert result.returncode == ExitCode.UNAVAILABLE
    assert "Traceback" in result.stderr
    assert "ConnectionRefusedError" in result.stderr
    assert "error: nothing answered" in result.stderr


def serve(behaviour: str, accepted: threading.Event | None = None) -> tuple[str, threading.Event]:
    """A loopback server that never answers (``silent``) or closes each connection at once (``reset``)."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()
    accepted = accepted or threading.Event()

    def run() -> None:
        held = []
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.set()
            if behaviour == "reset":
                connection.recv(1024)
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                connection.close()
            else:
                held.append(connection)
        for connection in held:
            connection.close()
        listener.close()

    threading.Thread(target=run, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", done


@pytest.mark.parametrize(
    ("behaviour", "says"), [("silent", "did not answer in time"), ("reset", "was closed before an answer")]
)
def test_timeouts_and_resets(outside: Path, behaviour: str, says: str) -> None:
    url, done = serve(behaviour)
    try:
        result = haste("--request-timeout", "1", "get", "j1", url=url, cwd=outside)
    finally:
        done.set()
    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr
    assert says in result.stderr
    no_traceback(result)


def where_it_waits(pid: int) -> str:
    """The signal masks and the Python stack of a process that did not end: what a hung Ctrl-C needs explained."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError as exc:
        return f"no /proc entry ({exc})"
    masks = "\n".join(line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt")))
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if spy is None:
        return masks
    dump = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60, check=False)
    return f"{masks}\n{dump.stdout}{dump.stderr}"


def at_terminal_defaults() -> None:
    """In the child, before exec: SIGINT and SIGQUIT at their defaults, whatever the suite inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def test_ctrl_c_is_a_quiet_130(outside: Path) -> None:
    accepted = threading.Event()
    url, done = serve("silent", accepted)
    clean = {key: value for key, value in os.environ.items() if not key.startswith("HASTE_")}
    waiting = subprocess.Popen(
        [HASTE, "--url", url, "logs", "j1", "--follow"],
        cwd=outside,
        env=clean,
        stderr=subprocess.PIPE,
        text=True,
        # As a terminal starts it: a suite run in the background (`make test &`, nohup) has SIGINT ignored,
        # and a process started with SIGINT ignored keeps ignoring it, as it should.
        preexec_fn=at_terminal_defaults,
    )
    try:
        assert accepted.wait(60), "haste never connected"
        waiting.send_signal(signal.SIGINT)
        try:
            _, stderr = waiting.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"haste did not end within 30 s of SIGINT:\n{where_it_waits(waiting.pid)}")
    finally:
        done.set()
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert waiting.returncode == ExitCode.INTERRUPTED
    assert stderr == "error: interrupted\n"


def test_dns_and_tls(stack: LocalStack, outside: Path) -> None:
    dns = haste("get", "j1", url="http://no-such-host.invalid", cwd=outside)
    assert dns.returncode == ExitCode.UNAVAILABLE
    assert "could not resolve no-such-host.invalid" in dns.stderr
    tls = haste("get", "j1", url=stack.base_url.replace("http:", "https:"), cwd=outside)
    assert tls.returncode == ExitCode.UNAVAILABLE, tls.stderr
    assert "TLS with 127.0.0.1 failed" in tls.stderr
    no_traceback(dns)
    no_traceback(tls)


def test_a_503_is_retried_then_explained(tmp_path: Path, outside: Path) -> None:
    """Storage stops under a running host: the API answers 503 with Retry-After, tried again, then explained."""
    with LocalStack(tmp_path) as running:
        assert haste("get", "j1", url=running.base_url, cwd=outside).returncode == ExitCode.NOT_FOUND  # warmed up
        running.azurite.stop()
        result = haste("--retry-budget", "6", "get", "j1", url=running.base_url, cwd=outside)
    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr
    assert "Storage is unavailable (HTTP 503)" in result.stderr
    assert "after 2 tries" in result.stderr
    no_traceback(result)


def completions(line: str) -> list[str]:
    script = subprocess.run([HASTE, "completion", "bash"], capture_output=True, text=True, check=True).stdout
    words = line.split(" ")
    quoted = " ".join(repr(word) for word in words)
    probe = f'{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _haste; echo "${{COMPREPLY[@]}}"'
    return subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()


def test_bash_completion_from_the_parser() -> None:
    assert completions("haste lo") == ["logs"]
    assert "--follow" in completions("haste logs j1 --")
    assert completions("haste get j1 --output ") == ["table", "json"]
    assert completions("haste aml ") == ["check", "create-environment"]
    assert "artifacts" in completions("haste submit --workload ")


def test_zsh_completion_runs_the_same_function_through_bashcompinit() -> None:
    bash = subprocess.run([HASTE, "completion", "bash"], capture_output=True, text=True, check=True).stdout
    zsh = subprocess.run([HASTE, "completion", "zsh"], capture_output=True, text=True, check=True).stdout
    assert "bashcompinit" in zsh
    assert zsh.split("_haste() {", 1)[1] == bash.split("_haste() {", 1)[1]
    if shutil.which("zsh"):
        # Run as bashcompinit runs it (ksharrays); zsh's own matching narrows the words to what is typed.
        probe = "setopt ksharrays; COMP_WORDS=(haste get j1 -o ''); COMP_CWORD=4; _haste; print -- ${COMPREPLY[@]}"
        loaded = subprocess.run(["zsh", "-fc", f"{zsh}\n{probe}"], capture_output=True, text=True, timeout=60)
        assert loaded.stdout.split() == ["table", "json"], loaded.stderr


def test_make_dev_runs_from_outside_the_checkout(outside: Path, tmp_path: Path) -> None:
    """``python -m hastegeo_dev dev`` (what make dev runs) finds the app, host.json and Azurite from anywhere."""
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HASTE_", "AzureWebJobs"))}
    dev = subprocess.Popen(
        [sys.executable, "-m", "hastegeo_dev", "dev", "--port", str(port), "--workdir", str(tmp_path / "dev")],
        cwd=outside, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while True:
            assert dev.poll() is None, dev.stdout.read() if dev.stdout else ""
            try:
                if ApiClient(f"http://127.0.0.1:{port}", timeout=2).health()["status"] == "ok":
                    break
            except OSError:
                assert time.monotonic() < deadline, "haste dev did not answer"
                time.sleep(0.3)
        listed = haste("list", "--project", "p1", url=f"http://127.0.0.1:{port}", cwd=outside)
        assert listed.returncode == 0, listed.stderr
    finally:
        dev.send_signal(signal.SIGINT)
        output, _ = dev.communicate(timeout=60)
    assert dev.returncode == 0, output
    assert (tmp_path / "dev" / "host.log").is_file()
