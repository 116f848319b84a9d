"""Continuation tokens: a signed position, bound to its listing, bounded, and refused in every other form."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from hastegeo.store import cursor
from hastegeo.store.cursor import TOKEN_MAX_CHARS, InvalidTokenError, Position
from hastegeo.store.index import EPOCH_MAX_MS

KEY_BYTES = b"k" * 32


def the_key() -> bytes:
    return KEY_BYTES


HERE = cursor.scope("p1", None)
AT = Position(1_764_000_000_123, "job-0001")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_token_round_trips_to_its_position_and_names_no_blob() -> None:
    token = cursor.encode(AT, HERE, KEY_BYTES)
    assert cursor.decode(token, HERE, the_key) == AT
    assert len(token) <= TOKEN_MAX_CHARS
    assert not [part for part in ("index", "/", "jobs") if part in token]


def test_the_state_filter_binds_in_any_order_and_spelling() -> None:
    token = cursor.encode(AT, cursor.scope("p1", ["running", "queued"]), KEY_BYTES)
    assert cursor.decode(token, cursor.scope("p1", ["queued", "running", "queued"]), the_key) == AT


def _refused(token: str, bound_to: bytes = HERE, key: Callable[[], bytes] = the_key) -> str:
    with pytest.raises(InvalidTokenError) as raised:
        cursor.decode(token, bound_to, key)
    assert isinstance(raised.value, ValueError)
    return raised.value.reason


@pytest.mark.parametrize(
    "token",
    [
        "\x00\x01",
        "%%%garbage",
        "a" * 20_000,
        "a" * (TOKEN_MAX_CHARS + 1),
        "not-a-token",
        "abc.def",
        "abc." + "A" * 23,
        " " + "A" * 10 + "." + "A" * 22,
        "é" * 10 + "." + "A" * 22,
        "A." + "A" * 22,  # one character of base64: not decodable
    ],
)
def test_malformed_tokens_are_refused_before_anything_else(token: str) -> None:
    reason = _refused(token)
    assert "continuation token" in reason or "longer than" in reason


def test_valid_base64_of_junk_is_refused() -> None:
    assert "not issued for this listing" in _refused(_b64(b"\x00junk" * 5) + "." + _b64(b"\x01" * 16))


def test_a_token_of_another_project_or_state_filter_is_refused() -> None:
    token = cursor.encode(AT, HERE, KEY_BYTES)
    assert "not issued for this listing" in _refused(token, cursor.scope("p2", None))
    assert "not issued for this listing" in _refused(token, cursor.scope("p1", ["running"]))
    filtered = cursor.encode(AT, cursor.scope("p1", ["running"]), KEY_BYTES)
    assert "not issued for this listing" in _refused(filtered, HERE)


def test_a_token_forged_to_point_elsewhere_is_refused() -> None:
    body, _, mac = cursor.encode(AT, HERE, KEY_BYTES).partition(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    for version, created_ms, job_id in (
        (payload[0], payload[1], "job-9999"),  # another job
        (payload[0], payload[1] - 1, payload[2]),  # another time
        (payload[0], payload[1], "../../jobs/x"),  # a path
    ):
        forged = _b64(json.dumps([version, created_ms, job_id], separators=(",", ":")).encode())
        assert "not issued for this listing" in _refused(f"{forged}.{mac}")
    assert "not issued for this listing" in _refused(f"{body}.{'A' * 22}")


def test_a_token_signed_with_another_key_is_refused() -> None:
    assert "not issued for this listing" in _refused(cursor.encode(AT, HERE, b"x" * 32))


def test_the_key_is_not_asked_for_until_the_token_has_a_token_s_shape() -> None:
    def no_key() -> bytes:
        raise AssertionError("the key was asked for")

    for token in ("\x00\x01", "%%%garbage", "A" * 20_000, "abc.def"):
        assert _refused(token, key=no_key)


def test_a_signed_payload_of_the_wrong_shape_is_refused() -> None:
    # Only a holder of the key could make these; the check still does not trust them.
    for payload in (b'[2,1,"a"]', b'[0,1,"a"]', b'[1,-1,"a"]', b'[1,1.5,"a"]', b'[1,1,"UPPER"]', b"{}", b"\xff"):
        assert "this version understands" in _refused(_signed(payload))


def _signed(payload: bytes) -> str:
    """A token for ``payload`` signed with the key, as a holder of it (another release, say) could make."""
    return f"{_b64(payload)}.{_b64(cursor._mac(KEY_BYTES, HERE, payload))}"


def test_a_token_names_only_a_time_the_index_can_sort() -> None:
    """The index sorts creation times above 0 and below ``EPOCH_MAX_MS`` (its names hold 13 digits of
    ``EPOCH_MAX_MS - ms``): a token at another time would continue the listing at the wrong place."""
    for ms in (1, EPOCH_MAX_MS - 1):
        assert cursor.decode(_signed(f'[1,{ms},"a"]'.encode()), HERE, the_key) == Position(ms, "a")
    for beyond in (0, -1, EPOCH_MAX_MS, EPOCH_MAX_MS + 1, 10 * EPOCH_MAX_MS):
        assert "this version understands" in _refused(_signed(f'[1,{beyond},"a"]'.encode()))


def test_a_token_given_out_before_an_upgrade_still_continues_its_listing() -> None:
    """Clients keep tokens across deployments: the format (version 1, the MAC's framing) must not drift."""
    issued = "WzEsMTc2NDAwMDAwMDEyMywiam9iLTAwMDEiXQ.TyZGRUbm-PUP3k2gt-loFw"
    assert cursor.decode(issued, HERE, the_key) == AT
    assert cursor.encode(AT, HERE, KEY_BYTES) == issued


def test_a_token_over_the_length_limit_is_refused_for_its_length() -> None:
    """The length is checked first (no pattern runs over a huge input), and the reason says so."""
    assert "longer than" in _refused("A" * (TOKEN_MAX_CHARS + 1))
    assert "longer than" not in _refused("A" * TOKEN_MAX_CHARS)
