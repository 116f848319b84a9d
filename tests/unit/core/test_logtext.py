"""The part of a log a reader gets next: whole lines, redacted, and a secret split across reads never leaks."""

from __future__ import annotations

from hastegeo.compute.logtext import cut_long_line, next_part, redact_lines
from hastegeo.utils.redaction import redact

SECRET = "AccountKey=c2VjcmV0LWtleS10aGF0LW11c3Qtbm90LWxlYWs="


def follow(log: bytes, window: int, *, ended_at: int | None = None) -> str:
    """Read ``log`` window by window as a follower would; the job ends once ``ended_at`` bytes are written."""
    offset, text = 0, []
    written = len(log) if ended_at is None else ended_at
    for _ in range(10_000):
        data = log[offset:written][:window]
        part = next_part(data, offset, final=written == len(log), window=window)
        text.append(part.text)
        if part.next_offset == offset and (written == len(log) and len(data) < window):
            break
        offset = part.next_offset
    return "".join(text)


def test_only_complete_lines_go_out_while_the_log_grows() -> None:
    part = next_part(b"one\ntwo\nthr", 100, final=False)
    assert (part.text, part.next_offset) == ("one\ntwo\n", 108)


def test_the_unterminated_last_line_goes_out_once_the_job_ended() -> None:
    part = next_part(b"one\nlast words", 0, final=True)
    assert (part.text, part.next_offset) == ("one\nlast words", 14)


def test_a_full_window_of_an_ended_job_still_keeps_its_partial_line() -> None:
    part = next_part(b"one\ntwo", 0, final=True, window=7)
    assert (part.text, part.next_offset) == ("one\n", 4)


def test_a_secret_split_across_two_reads_is_redacted() -> None:
    line = f"connecting with {SECRET}\n".encode()
    log = b"starting\n" + line + b"done\n"
    for window in range(len(b"starting\n") + 1, len(log) + 1):  # every cut through the secret's line
        text = follow(log, window=max(window, len(line) + 1))
        assert "c2VjcmV0" not in text, window
        assert "[REDACTED]" in text
    # Read while it is written: the line arrives in pieces, the reader sees it only whole.
    written = len(b"starting\n") + 20
    first = next_part(log[:written], 0, final=False)
    assert first.text == "starting\n"
    second = next_part(log[first.next_offset :], first.next_offset, final=True)
    assert "c2VjcmV0" not in second.text
    assert second.text.endswith("done\n")


def test_a_line_longer_than_a_window_is_cut_at_whitespace_and_progresses() -> None:
    data = b"word " * 10 + b"tail"
    part = next_part(data, 0, final=False, window=len(data))
    assert part.text == "word " * 5  # the last whitespace at least half a window (at most SECRET_BYTES) back
    assert part.next_offset == 25
    solid = b"x" * 32
    assert next_part(solid, 0, final=False, window=32).next_offset == 16


SIGNATURE = "c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw%3D"
SAS_URL = f"https://acct.blob.core.windows.net/in/a.tif?sv=2024-05-04&sr=b&sig={SIGNATURE}&se=2030-01-01"


def pieces(secret: str, size: int = 6) -> list[str]:
    return [secret[index : index + size] for index in range(len(secret) - size + 1)]


def test_a_sas_url_across_every_cut_of_a_long_line_is_never_handed_out_in_halves() -> None:
    window, hold = 256, 64
    for before in range(window - len(SAS_URL) - hold - 8, window + 8):  # the URL over every cut near the end
        for filler in (b"x", b"x "):  # one solid token, or words with a space to cut at
            head = (filler * window)[:before]
            line = head + SAS_URL.encode() + (filler * window)[: window * 2] + b"\n"
            text = follow_long(line, window, hold)
            assert not any(piece in text for piece in pieces(SIGNATURE)), (before, filler)
            assert text == redact(line.decode()), (before, filler)  # the parts add up to the line, redacted


def test_a_credential_longer_than_the_window_less_the_hold_goes_out_whole_and_redacted() -> None:
    line = b"Password=" + b"p" * 300
    cut = cut_long_line(line[:256], hold=64)
    assert cut == 256
    assert next_part(line[:256], 0, final=False, window=256).text == "Password=[REDACTED]"


def follow_long(line: bytes, window: int, hold: int) -> str:
    """Read one long line of an ended log as a follower does, with ``hold`` as the credential bound."""
    offset, text = 0, []
    while offset < len(line):
        data = line[offset : offset + window]
        if len(data) < window:
            text.append(redact_lines(data))
            break
        end = data.rfind(b"\n") + 1 or cut_long_line(data, hold)
        text.append(redact_lines(data[:end]))
        offset += end
    return "".join(text)


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert next_part(b"caf\xc3\n\xff\n", 0, final=False).text == "caf\ufffd\n\ufffd\n"
