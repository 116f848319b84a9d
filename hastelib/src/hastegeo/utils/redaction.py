"""Remove credentials from text before it is stored or logged.

One module owns this so that the status history, API error bodies and every
log record are cleaned by the same rules. The rules are deliberately
broad: a false positive costs a few characters of a message, a false
negative leaks a key.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[REDACTED]"
_REDACTED = "_haste_redacted"  # set on a log record once RedactingFilter has cleaned it

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # SAS signature (and the signed-key fields of user-delegation SAS) wherever they stand.
    (
        re.compile(r"(?i)((?<![A-Za-z0-9_])(?:sig|skoid|sktid|skt|ske|sks|skv|sdd)=)[^&\s\"'<>]+"),
        rf"\1{REDACTED}",
    ),
    # The Functions key passed in a query string.
    (re.compile(r"(?i)([?&]code=)[^&\s\"'<>]+"), rf"\1{REDACTED}"),
    # Connection-string secrets: AccountKey=…; SharedAccessKey=…; SharedAccessSignature=…
    (
        re.compile(r"(?i)\b(AccountKey|SharedAccessKey|SharedAccessSignature|Password|ClientSecret)=([^;\s\"']+)"),
        rf"\1={REDACTED}",
    ),
    # Authorization headers: Bearer/SharedKey/Basic credentials.
    (re.compile(r"(?i)\b(Bearer|Basic)\s+[A-Za-z0-9\-._~+/]+=*"), rf"\1 {REDACTED}"),
    (re.compile(r"(?i)\b(SharedKey(?:Lite)?)\s+([\w\-.]+):[A-Za-z0-9+/=]+"), rf"\1 \2:{REDACTED}"),
    # JSON Web Tokens anywhere (three base64url segments starting with a JSON header).
    (re.compile(r"\beyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"), REDACTED),
    # Key-like fields in dict reprs or JSON: 'account_key': '…', "accessToken": "…"
    (
        re.compile(
            r"(?i)([\"']?(?:account_?key|access_?token|client_?secret|secret|password|sas_?token|x-functions-key)"
            r"[\"']?\s*[:=]\s*[\"'])[^\"']+([\"'])"
        ),
        rf"\1{REDACTED}\2",
    ),
)


def redact(text: str) -> str:
    """Return ``text`` with every credential-like fragment replaced by ``[REDACTED]``."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where the rules match in ``text``, as (start, end): text cut inside one of these would split a
    credential into halves that no rule recognises (docs/adr/0045)."""
    return [match.span() for pattern, _ in _RULES for match in pattern.finditer(text)]


class RedactingFilter(logging.Filter):
    """A logging filter that renders and redacts each record before any handler sees it.

    Attach it to the handlers (not loggers) so records from third-party
    libraries, which propagate past logger filters, are cleaned too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if is_redacted(record):  # another handler's filter cleaned it: its text is final
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not drop the record
            message = str(record.msg)
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        setattr(record, _REDACTED, True)
        return True


def is_redacted(record: logging.LogRecord) -> bool:
    """Whether a :class:`RedactingFilter` has rendered and cleaned ``record`` (its message and traceback).

    A record goes to every handler on its way up: with telemetry on, the JSON lines or
    Azure Monitor handler of ``hastegeo`` and the root logger's. Each has the filter, and
    the JSON formatter redacted the message once more; at a dozen patterns a pass, that
    was most of what a log line cost (docs/adr/0012). The first filter marks the record,
    and the later passes skip it.
    """
    return getattr(record, _REDACTED, False) is True


def install_redacting_filter(root: logging.Logger | None = None) -> None:
    """Attach one :class:`RedactingFilter` to every handler of ``root`` (idempotent)."""
    logger = root or logging.getLogger()
    for handler in logger.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
