"""The project's one error hierarchy, and the function that makes any error readable.

    HasteError
    ├── ConfigurationError        a setting is missing or invalid (names the variable)
    ├── JobNotFoundError          no stored job has that id
    ├── ConflictError             a conditional write lost, or the request conflicts with state
    │   └── IllegalTransitionError   the state machine forbids the move
    ├── InvalidJobError           a request is well-formed JSON but cannot be run as asked
    └── BackendError              a compute backend could not do what was asked
        ├── BackendUnavailableError  unknown, disabled, or unable to run the workload
        ├── TransientBackendError    safe to retry later (the queue redelivers)
        └── TerminalBackendError     retrying will not help; the job fails with the reason

Provider SDK exceptions are translated into this tree at the edge of their
adapter and chained (``raise ... from exc``), so callers branch on these
classes and the original is still there for logs.
"""

from __future__ import annotations

import enum
import re
from typing import Any

from hastegeo.utils.redaction import redact


class HasteError(Exception):
    """Base of every error this project raises on purpose."""


class ConfigurationError(HasteError):
    """A setting is missing or invalid. The message names the environment variable."""


class JobNotFoundError(HasteError):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"No job with id {job_id!r}")
        self.job_id = job_id


class ConflictError(HasteError):
    """The stored state changed under us, or the request conflicts with it."""


class IllegalTransitionError(ConflictError):
    def __init__(self, current: str, target: str) -> None:
        super().__init__(f"A job cannot move from {current!r} to {target!r}")
        self.current = current
        self.target = target


class InvalidJobError(HasteError):
    """The request is well-formed but cannot run as asked; ``field`` locates the cause."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class BackendError(HasteError):
    """A compute backend failed. ``backend`` names it."""

    def __init__(self, message: str, *, backend: str | None = None) -> None:
        super().__init__(message)
        self.backend = backend


class BackendUnavailableError(BackendError):
    """The backend is unknown, disabled, or cannot run this workload."""


class TransientBackendError(BackendError):
    """Retrying later may succeed: the provider was busy, throttled or mid-transition."""


class TerminalBackendError(BackendError):
    """Retrying will not help: bad request, permission, or a provider-side failure."""


# Azure service messages end with a diagnostic trailer that helps support
# engineers and nobody else: "RequestId:… Time:…" on separate lines.
_TRAILER = re.compile(r"\s*(RequestId:\S*|Time:\S*|ErrorCode:\S*)", re.IGNORECASE)
_MAX_LEN = 500


def describe_exception(exc: BaseException) -> str:
    """Reduce any exception to one readable, sanitized line, ``Code: message``.

    Azure SDK errors are matched by shape rather than class (``.error.code`` and
    ``.error.message``, whose value may be a plain string or a ``{"value": …}``
    dict), so this module never imports a provider SDK. The ``RequestId``/``Time``
    trailer is stripped, secrets are redacted, and the line is capped in length.
    Project errors that wrap a provider error describe themselves by their message.
    """
    return describe_error(*_code_and_message(exc), fallback=type(exc).__name__)


def describe_error(code: Any, message: Any, *, fallback: str = "error") -> str:
    """:func:`describe_exception` for a code and message that arrived without an exception.

    A streamed response's body or a run history's ``RootError`` carry the same
    two facts as an SDK exception; adapters describe them with this one shim
    instead of dressing them up as exceptions.
    """
    code, message = _text(code), readable_message(_text(message))
    line = f"{code}: {message}" if code and message else (code or message)
    line = redact(line or fallback)
    if len(line) > _MAX_LEN:
        line = line[: _MAX_LEN - 1] + "…"
    return line


def readable_message(text: str) -> str:
    """A provider message on one line, without its diagnostic trailer or raw response body."""
    text = text.split("\nContent:", 1)[0].split(" Content: <", 1)[0]
    text = _TRAILER.sub(" ", text)
    return " ".join(text.split())


def _code_and_message(exc: BaseException) -> tuple[str, str]:
    error = getattr(exc, "error", None)
    if error is not None:
        code = _text(getattr(error, "code", None))
        message = _text(getattr(error, "message", None))
        if code or message:
            return code, message
    status = getattr(exc, "status_code", None)
    reason = _text(getattr(exc, "reason", None))
    if isinstance(exc, HasteError):
        return "", str(exc)
    message = _text(getattr(exc, "message", None)) or str(exc)
    # azure-core puts "(Code) Message\nCode: …\nMessage: …" in str(); keep the first line.
    first_line = message.strip().splitlines()[0] if message.strip() else ""
    match = re.fullmatch(r"\((\w+)\)\s*(.*)", first_line)
    if match:
        return match.group(1), match.group(2)
    storage_code = _text(getattr(exc, "error_code", None))  # azure-storage errors carry the code here
    if storage_code:
        return storage_code, first_line
    if status is not None and not first_line:
        return f"HTTP {status}", reason
    return type(exc).__name__, first_line


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, enum.Enum):  # azure-storage's StorageErrorCode: its value, not "StorageErrorCode.X"
        return _text(value.value)
    if isinstance(value, dict):
        return _text(value.get("value") or value.get("message") or "")
    inner = getattr(value, "value", None)
    if inner is not None and not isinstance(value, str):
        return _text(inner)
    return str(value)
