"""Route templates and precedence, as ASP.NET Core / the Functions host resolve them."""

from __future__ import annotations

import pytest

from hastegeo_dev.devhost.functions import discover
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
        ("opt/{name?}", "/api/opt", {}),
        ("opt/{name?}", "/api/opt/x", {"name": "x"}),
        ("files/{*path}", "/api/files/a/b/c.txt", {"path": "a/b/c.txt"}),
        ("files/{*path}", "/api/files", {}),
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
        ("jobs/{id}/cancel", "/api/jobs/1/other"),
        ("opt/{name?}", "/api/opt/x/y"),
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
        "{*a}/b",
        "{a?}/b",
        "a/{x}/{X}",
        # Features no route uses are refused, so the host never routes differently from production.
        "jobs/{id:int}",
        "jobs/{id:regex(^j-[0-9]+$)}",
        "opt/{name=dflt}",
        "files/{name}.{ext}",
        "lit{{eral}}",
    ],
)
def test_malformed_templates_raise(template: str) -> None:
    with pytest.raises(RouteError):
        compile_route(template, "api")


def test_literals_beat_parameters_beat_catch_alls() -> None:
    table: RouteTable[str] = RouteTable("api")
    table.add("items/{*rest}", None, "catch-all")
    table.add("items/{id}", ["GET"], "param")
    table.add("items/special", ["GET"], "literal")
    assert table.resolve("GET", "/api/items/special") == RouteMatch("literal", {})
    assert table.resolve("GET", "/api/items/5") == RouteMatch("param", {"id": "5"})
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


def test_every_route_of_the_app_compiles_and_resolves() -> None:
    """The app's own routes are all the host needs to support."""
    import function_app

    table: RouteTable[str] = RouteTable("api")
    routes = [function.route for function in discover(function_app.app).http]
    for function in discover(function_app.app).http:
        table.add(function.route, function.methods, function.route)
    assert {"jobs", "jobs/{id}", "jobs/{id}/cancel"} <= set(routes)
    assert table.resolve("GET", "/api/jobs/abc") == RouteMatch("jobs/{id}", {"id": "abc"})
    assert table.resolve("POST", "/api/jobs/abc/cancel") == RouteMatch("jobs/{id}/cancel", {"id": "abc"})
    assert table.resolve("POST", "/api/jobs") == RouteMatch("jobs", {})
