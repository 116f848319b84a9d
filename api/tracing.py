"""A server span for each HTTP request, continuing the caller's W3C ``traceparent`` header.

A job accepted inside the span stores it as the job's trace (``Job.trace_parent``),
so ``POST /api/jobs`` is the root of the job's trace (docs/adr/0012).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

import azure.functions as func

from hastegeo.telemetry import tracer

_P = ParamSpec("_P")


def traced(method: str, route: str) -> Callable[[Callable[_P, func.HttpResponse]], Callable[_P, func.HttpResponse]]:
    """Run the handler in a span named ``METHOD /api/route`` with the response's status code."""

    def decorate(handler: Callable[_P, func.HttpResponse]) -> Callable[_P, func.HttpResponse]:
        @functools.wraps(handler)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> func.HttpResponse:
            req = args[0] if args else kwargs.get("req")
            headers = req.headers if isinstance(req, func.HttpRequest) else {}
            with tracer.step_span(
                f"{method} /api/{route}",
                traceparent=headers.get("traceparent"),
                tracestate=headers.get("tracestate"),
                kind=tracer.SERVER,
                attributes={"http.request.method": method, "http.route": f"/api/{route}"},
            ) as span:
                response = handler(*args, **kwargs)
                if span.is_recording():
                    span.set_attribute("http.response.status_code", response.status_code)
                    if response.status_code >= 500:
                        span.set_status(tracer.Status(tracer.StatusCode.ERROR, f"HTTP {response.status_code}"))
                return response

        return wrapper

    return decorate
