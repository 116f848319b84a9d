"""Route templates and precedence, as ASP.NET Core / the Functions host resolve them."""

from __future__ import annotations

import pytest

from hastegeo_dev.devhost.routes import MethodNotAllowed, RouteError, RouteMatch, RouteTable, compile_route


@pytest.mark.parametrize(
    ("template", "path", "expected"),
    [
        ("jobs", "/api/jobs", {}),
        ("jobs", "/api/JOBS/", {}),
        ("jobs/{id}", "/api/jobs/abc", {"id": "abc"}),
        ("jobs/{id}", "/api/jobs/a%20b", {"id": "a b"}),
        ("jobs/{id}", "/api/jobs/a%2Fb", {"id": "a/b"}),
        ("jobs/{id}/history", "/api/jobs/7/history", {"id": "7"}),
        ("jobs/{id:int}", "/api/jobs/42", {"id": "42"}),
        (
            "jobs/{id:guid}",
            "/api/jobs/0f8fad5b-d9cb-469f-a165-70867728950e",
            {"id": "0f8fad5b-d9cb-469f-a165-70867728950e"},
        ),
        ("jobs/{id:regex(^j-[0-9]+$)}", "/api/jobs/j-12", {"id": "j-12"}),
        ("jobs/{id:alpha:minlength(2)}", "/api/jobs/ab", {"id": "ab"}),
        ("jobs/{id:range(1,10)}", "/api/jobs/10", {"id": "10"}),
        ("opt/{name?}", "/api/opt", {}),
        ("opt/{name?}", "/api/opt/x", {"name": "x"}),
        ("opt/{name:int?}", "/api/opt/3", {"name": "3"}),
        ("opt/{name=dflt}", "/api/opt", {"name": "dflt"}),
        ("files/{*path}", "/api/files/a/b/c.txt", {"path": "a/b/c.txt"}),
        ("files/{*path}", "/api/files", {}),
        ("files/{name}.{ext}", "/api/files/report.tar.gz", {"name": "report", "ext": "tar.gz"}),
        ("lit{{eral}}", "/api/lit{eral}", {}),  # literal braces are escaped as {{ }}
    ],
)
def test_templates_match(template: str, path: str, expected: dict[str, str] | None) -> None:
    assert compile_route(template, "api").match(path) == expected


@pytest.mark.parametrize(
    ("template", "path"),
    [
        ("jobs/{id}", "/api/jobs"),
        ("jobs/{id}", "/api/jobs/1/2"),
        ("jobs/{id}", "/jobs/1"),
        ("jobs/{id:int}", "/api/jobs/abc"),
        ("jobs/{id:int}", "/api/jobs/99999999999"),
        ("jobs/{id:long}", "/api/jobs/1.5"),
        ("jobs/{id:bool}", "/api/jobs/yes"),
        ("jobs/{id:guid}", "/api/jobs/not-a-guid"),
        ("jobs/{id:regex(^j-[0-9]+$)}", "/api/jobs/x-12"),
        ("jobs/{id:maxlength(2)}", "/api/jobs/abc"),
        ("jobs/{id:length(2)}", "/api/jobs/abc"),
        ("jobs/{id:min(5)}", "/api/jobs/4"),
    ],
)
def test_templates_reject(template: str, path: str) -> None:
    assert compile_route(template, "api").match(path) is None


def test_empty_prefix_and_root_route() -> None:
    assert compile_route("jobs/{id}", "").match("/jobs/1") == {"id": "1"}
    assert compile_route("", "api").match("/api") == {}
    assert compile_route("", "").match("/") == {}


@pytest.mark.parametrize(
    "template",
    [
        "jobs/{id",
        "jobs/id}",
        "jobs/{1id}",
        "jobs/{id:nosuch}",
        "jobs/{id:regex(()}",
        "{*a}/b",
        "a/{x}/{X}",
        "a/{id:min(x)}",
    ],
)
def test_malformed_templates_raise(template: str) -> None:
    with pytest.raises(RouteError):
        compile_route(template, "api")


def test_literals_beat_parameters_beat_catch_alls() -> None:
    table: RouteTable[str] = RouteTable("api")
    table.add("items/{*rest}", None, "catch-all")
    table.add("items/{id}", ["GET"], "param")
    table.add("items/{id:int}", ["GET"], "int")
    table.add("items/special", ["GET"], "literal")
    assert table.resolve("GET", "/api/items/special") == RouteMatch("literal", {})
    assert table.resolve("GET", "/api/items/5") == RouteMatch("int", {"id": "5"})
    assert table.resolve("GET", "/api/items/x") == RouteMatch("param", {"id": "x"})
    assert table.resolve("GET", "/api/items/x/y") == RouteMatch("catch-all", {"rest": "x/y"})


def test_wrong_method_is_405_with_the_allowed_methods_and_unknown_is_none() -> None:
    table: RouteTable[str] = RouteTable("api")
    table.add("jobs", ["GET"], "list")
    table.add("jobs", ["post"], "create")
    table.add("anything", None, "any")
    assert table.resolve("post", "/api/jobs") == RouteMatch("create", {})
    assert table.resolve("DELETE", "/api/jobs") == MethodNotAllowed(frozenset({"GET", "POST"}))
    assert table.resolve("PATCH", "/api/anything") == RouteMatch("any", {})
    assert table.resolve("GET", "/api/nothing") is None
