"""Request validation: unknown and server-owned fields are named; paths point at the bad value."""

from __future__ import annotations

from typing import Any

import pytest

from hastegeo.models.job import SERVER_OWNED_FIELDS
from hastegeo.pipeline.accept import RequestRejected, decode_body, parse_request

VALID: dict[str, Any] = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "a/b.txt"}]}


def errors_of(body: Any) -> list[tuple[str, str]]:
    with pytest.raises(RequestRejected) as caught:
        parse_request(body)
    return caught.value.errors


def test_valid_request() -> None:
    request = parse_request(VALID)
    assert request.project_id == "p1"
    assert request.inputs[0].blob == "a/b.txt"


def test_server_owned_fields_are_named() -> None:
    errors = errors_of({**VALID, "state": "succeeded", "handle": {"backend": "x"}, "outputs": []})
    assert [field for field, _ in errors] == ["handle", "outputs", "state"]


def test_server_owned_fields_cover_the_runtime_fields() -> None:
    assert {"state", "handle", "outputs", "history", "id", "reason", "createdAt"} <= SERVER_OWNED_FIELDS
    assert "workload" not in SERVER_OWNED_FIELDS
    assert "backend" not in SERVER_OWNED_FIELDS


def test_snake_case_server_fields_are_refused_too() -> None:
    assert [field for field, _ in errors_of({**VALID, "created_at": "2026-01-01"})] == ["createdAt"]


def test_unknown_field() -> None:
    assert errors_of({**VALID, "colour": "red"}) == [("colour", "unknown field")]


def test_nested_paths() -> None:
    errors = errors_of({**VALID, "inputs": [{"blob": "ok.txt"}, {"blob": "../etc/passwd"}]})
    assert errors[0][0] == "inputs[1].blob"
    errors = errors_of({**VALID, "inputs": [{"blob": "a", "jobId": "j"}]})
    assert errors[0][0] == "inputs[0]"


@pytest.mark.parametrize(
    "blob", ["/abs/path", "a/../b", "https://evil.example/x?sig=1", "a//b", "./a", "file:///etc/passwd"]
)
def test_unsafe_input_paths(blob: str) -> None:
    assert errors_of({**VALID, "inputs": [{"blob": blob}]})[0][0] == "inputs[0].blob"


def test_bad_backend_and_workload() -> None:
    assert errors_of({**VALID, "backend": "kubernetes"})[0][0] == "backend"
    assert errors_of({**VALID, "workload": "mining"})[0][0] == "workload"


def test_not_an_object() -> None:
    assert errors_of([1, 2])[0][0] == ""


def test_deeply_nested_bodies_are_refused_without_recursion() -> None:
    with pytest.raises(RequestRejected, match="nested too deeply"):
        decode_body("[" * 100_000 + "]" * 100_000)
    nested: Any = {"leaf": 1}
    for _ in range(40):
        nested = {"n": nested}
    with pytest.raises(RequestRejected, match="nested too deeply"):
        parse_request({**VALID, "parameters": nested})
    with pytest.raises(RequestRejected, match="not valid JSON"):
        decode_body(b"\xff\xfe{")


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ('{"projectId": "p1", "projectId": "p2"}', ["projectId"]),
        ('{"parameters": {"level": 1, "level": 2, "level": 3}}', ["parameters.level"]),
        ('{"inputs": [{"blob": "p1/a"}, {"blob": "p1/b", "blob": "p2/b"}]}', ["inputs[1].blob"]),
        ('{"a": 1, "a": 1, "b": {"c": 1, "c": 2}}', ["a", "b.c"]),  # the same value twice is still twice
    ],
)
def test_a_member_named_twice_in_one_object_is_refused_at_its_path(body: str, paths: list[str]) -> None:
    """Python keeps the last of a repeated name and other parsers the first: such a body means two things."""
    with pytest.raises(RequestRejected, match="named twice") as refused:
        decode_body(body)
    assert [path for path, _ in refused.value.errors] == paths


def test_the_same_name_in_different_objects_is_fine() -> None:
    decoded = decode_body('{"a": {"name": 1}, "b": {"name": 2}, "c": [{"name": 3}, {"name": 4}]}')
    assert decoded == {"a": {"name": 1}, "b": {"name": 2}, "c": [{"name": 3}, {"name": 4}]}
    assert parse_request(decode_body('{"workload": "artifacts", "projectId": "p1"}')).project_id == "p1"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_body_in_another_unicode_encoding_is_refused(encoding: str) -> None:
    """RFC 8259: JSON between systems is UTF-8 (json.loads alone would detect and read these)."""
    with pytest.raises(RequestRejected, match="not valid JSON") as refused:
        decode_body('{"workload": "artifacts", "projectId": "p1"}'.encode(encoding))
    assert [path for path, _ in refused.value.errors] == [""]


def test_a_leading_byte_order_mark_is_ignored() -> None:
    assert decode_body(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ('{"labels": {"a": "\\ud800"}}', ["labels.a"]),
        ('{"inputs": [{"blob": "ok"}, {"blob": "x\\udfff"}]}', ["inputs[1].blob"]),
        ('{"p": {"\\ud83dname": {"deeper": "fine"}}}', ["p.\\ud83dname"]),
        ('{"a": "\\ud83d\\ude00"}', None),  # a pair is one character: fine
    ],
)
def test_a_lone_surrogate_is_refused_at_its_path(body: str, paths: list[str] | None) -> None:
    if paths is None:
        assert decode_body(body) == {"a": "\U0001f600"}
        return
    with pytest.raises(RequestRejected, match="not Unicode") as refused:
        decode_body(body.encode())
    assert [path for path, _ in refused.value.errors] == paths


def test_an_integer_too_long_to_read_is_refused_in_the_bodys_words() -> None:
    with pytest.raises(RequestRejected, match="not valid JSON") as refused:
        decode_body(b'{"n": -' + b"9" * 4301 + b"}")
    assert refused.value.errors == [("", "an integer of 4301 digits; at most 4300")]
    assert decode_body(b'{"n": ' + b"9" * 4300 + b"}")["n"] == int("9" * 4300)


@pytest.mark.parametrize("key", ["a", "A.b-c_1", "x" * 63, "x" * 64, "", "a b", "a/b", "é", "a\n"])
@pytest.mark.parametrize("value", ["v" * 256, "v" * 257])
def test_the_documented_label_rules_are_the_rules_checked(key: str, value: str) -> None:
    """A client that follows the document's Labels schema is never refused, and one that breaks it always is."""
    import re

    from api.openapi import openapi_document

    schema = openapi_document()["components"]["schemas"]["Labels"]
    documented = (
        re.fullmatch(schema["propertyNames"]["pattern"].removeprefix("^").removesuffix("$"), key) is not None
        and len(value) <= schema["additionalProperties"]["maxLength"]
    )
    try:
        parse_request({**VALID, "labels": {key: value}})
        checked = True
    except RequestRejected:
        checked = False
    assert checked is documented
