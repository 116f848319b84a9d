"""The development Functions host: one object that runs a FunctionApp's HTTP and queue triggers.

Azure Functions Core Tools cannot be installed here, so this is what runs
the same ``function_app:app`` locally, against Azurite: it serves the HTTP
triggers (``http_server``) and drives each queue trigger (``queue_driver``)
with the semantics host.json declares. It starts no storage itself; the
caller starts Azurite and sets the app settings first::

    from hastegeo_dev.devhost.azurite import Azurite
    from hastegeo_dev.devhost.host import DevHost

    with Azurite(in_memory=True) as azurite:
        os.environ["AzureWebJobsStorage"] = azurite.connection_string
        with DevHost("function_app:app", host_json="host.json", port=7071) as host:
            print(host.api_url)  # http://127.0.0.1:7071/api
            ...
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from hastegeo.auth import PRINCIPAL_HEADER, Principal, encode_principal
from hastegeo.store.sends import listen_for_sends
from hastegeo_dev.devhost.cors import CorsPolicy
from hastegeo_dev.devhost.functions import AppFunctions, DevHostError, FunctionRegistry, discover, load_app
from hastegeo_dev.devhost.hostjson import HostConfig, load_host_config
from hastegeo_dev.devhost.http_server import DEFAULT_BODY_TIMEOUT_S, DEFAULT_MAX_BODY_BYTES, DevHttpServer
from hastegeo_dev.devhost.outputs import OutputSender
from hastegeo_dev.devhost.principal import parse_dev_principal
from hastegeo_dev.devhost.queue_driver import DriverOptions, QueueDriver
from hastegeo_dev.devhost.storage import QueueClients, resolve_connection
from hastegeo_dev.devhost.timers import TimerDriver

log = logging.getLogger(__name__)

DEV_PRINCIPAL_VARIABLE = "HASTE_DEV_PRINCIPAL"
TRUST_VARIABLE = "HASTE_DEV_TRUST_CLIENT_PRINCIPAL"
# Headers App Service authentication sets and never takes from a client: the caller and the provider's tokens.
PLATFORM_HEADER_PREFIXES = ("x-ms-client-principal", "x-ms-token-")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


class DevHost:
    """Run a FunctionApp's HTTP and queue triggers locally.

    ``app``: a ``"module:attribute"`` path (imported with ``app_dir`` first on
    sys.path) or an already-built FunctionApp. ``host_json``: a path, a parsed
    ``HostConfig``, or None for ``<app_dir or cwd>/host.json`` when it exists
    (else the Functions defaults). ``environ``: where app settings (connection
    strings) are read, at ``start()``; defaults to ``os.environ``.
    ``port=0`` picks a free port; see ``base_url``/``api_url``.

    Like App Service authentication in Azure, the host can tell the app who is
    calling: when ``HASTE_DEV_PRINCIPAL`` is set in ``environ`` (for example
    ``name=dev@example.com;roles=Haste.Admin;projects=demo,p1``), every HTTP
    request gets an ``X-MS-CLIENT-PRINCIPAL`` for that caller. As in Azure, the
    ``X-MS-CLIENT-PRINCIPAL*`` and ``X-MS-TOKEN-*`` headers a client sends are
    removed first, so nobody reaching the host (a page on another site included)
    can claim to be someone. ``HASTE_DEV_TRUST_CLIENT_PRINCIPAL=true`` keeps them
    (a test acting as several callers); the host says which at start-up.
    """

    def __init__(
        self,
        app: str | FunctionRegistry = "function_app:app",
        *,
        app_dir: str | Path | None = None,
        host_json: str | Path | HostConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        cors_allowed_origins: Sequence[str] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
        environ: Mapping[str, str] | None = None,
        driver_options: DriverOptions | None = None,
        serve_http: bool = True,
        run_queues: bool = True,
        run_timers: bool = True,
        wake_elsewhere: Callable[[str], None] | None = None,
    ) -> None:
        """``wake_elsewhere``: told the queue name each time this host sends to a queue (an output
        binding), for queues whose triggers run in other processes (see ``__main__``)."""
        self._wake_elsewhere = wake_elsewhere
        self._app = app
        self._app_dir = Path(app_dir) if app_dir is not None else None
        self._host_json = host_json
        self._bind = (host, port)
        self._cors = CorsPolicy.from_origins(cors_allowed_origins)
        self._max_body = max_body_bytes
        self._body_timeout_s = body_timeout_s
        self._environ = environ if environ is not None else os.environ
        self._driver_options = driver_options or DriverOptions()
        self._serve_http = serve_http
        self._run_queues = run_queues
        self._run_timers = run_timers  # timers are singletons: one process of a host runs them
        self._clients = QueueClients()
        self._http: DevHttpServer | None = None
        self._drivers: list[QueueDriver] = []
        self._timers: list[TimerDriver] = []
        self._stop_hearing_sends: Callable[[], None] | None = None
        self.config = HostConfig()
        self.functions = AppFunctions()
        self.dev_principal: Principal | None = None
        self.trust_client_principal = False

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> DevHost:
        """Load the app, then start queue pollers and the HTTP server. Raises DevHostError / HostJsonError."""
        self.config = self._load_config()
        self.dev_principal = self._load_dev_principal()
        self.trust_client_principal = self._load_trust()
        registry = load_app(self._app, self._app_dir) if isinstance(self._app, str) else self._app
        self.functions = discover(registry)
        outputs = OutputSender(self._clients, self._environ, self.config.queues.message_encoding, self.wake)
        if self._run_queues:
            for function in self.functions.queues:
                connection = resolve_connection(function.connection, self._environ)
                self._drivers.append(
                    QueueDriver(function, self.config.queues, connection, self._clients, outputs, self._driver_options)
                )
        if self._run_timers:
            self._timers = [TimerDriver(timer) for timer in self.functions.timers]
        if self._serve_http:
            self._http = DevHttpServer(
                self.functions.http,
                route_prefix=self.config.route_prefix,
                host=self._bind[0],
                port=self._bind[1],
                cors=self._cors,
                max_body_bytes=self._max_body,
                body_timeout_s=self._body_timeout_s,
                outputs=outputs,
                default_headers=(
                    {PRINCIPAL_HEADER: encode_principal(self.dev_principal)} if self.dev_principal is not None else {}
                ),
                platform_prefixes=() if self.trust_client_principal else PLATFORM_HEADER_PREFIXES,
            )
        try:
            for driver in self._drivers:
                driver.start()
            for timer in self._timers:
                timer.start()
            if self._http is not None:
                self._http.start()
            self._stop_hearing_sends = listen_for_sends(self._woken_by_app)
        except BaseException:
            self.stop(timeout=1.0)
            raise
        self._log_started()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop fetching, let running functions finish (up to ``DriverOptions.stop_grace``), release the rest,
        stop HTTP. Returns within about ``timeout`` seconds (default: the grace period + 1 s)."""
        budget = timeout if timeout is not None else self._driver_options.stop_grace + 1.0
        deadline = time.monotonic() + budget
        if self._stop_hearing_sends is not None:
            self._stop_hearing_sends()
            self._stop_hearing_sends = None
        for timer in self._timers:
            timer.stop()
        self._timers = []
        for driver in self._drivers:
            driver.begin_stop()
        if self._http is not None:
            self._http.stop()
            self._http = None
        grace_end = min(deadline, time.monotonic() + self._driver_options.stop_grace)
        for driver in self._drivers:
            driver.finish_stop(grace_end)
        self._drivers = []
        self._clients.close()

    def __enter__(self) -> DevHost:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- use -------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the HTTP server (RuntimeError before start or with serve_http=False)."""
        if self._http is None:
            raise RuntimeError("the HTTP server is not running")
        return self._http.base_url

    @property
    def api_url(self) -> str:
        """``base_url`` plus the route prefix, e.g. ``http://127.0.0.1:7071/api``."""
        prefix = self.config.route_prefix
        return f"{self.base_url}/{prefix}" if prefix else self.base_url

    def wake(self, queue_name: str) -> None:
        """Poll ``queue_name`` now instead of after the current back-off (its drivers here, or ``wake_elsewhere``)."""
        for driver in self._drivers:
            if driver.queue_name == queue_name:
                driver.wake()
        if self._wake_elsewhere is not None:
            self._wake_elsewhere(queue_name)

    def _woken_by_app(self, queue_name: str) -> None:
        """The app sent a message to ``queue_name`` itself (not through a binding): wake its listener if it has one.

        Azure's host does this only for output bindings; an SDK send waits for the listener's next
        poll there (docs/adr/0050). Here every send the app makes in this process wakes it.
        """
        if any(function.queue_name == queue_name for function in self.functions.queues):
            self.wake(queue_name)

    def in_flight(self, queue_name: str) -> int:
        """Messages of ``queue_name`` being processed right now."""
        return sum(d.in_flight for d in self._drivers if d.queue_name == queue_name)

    # -- helpers ---------------------------------------------------------------------------------

    def _load_config(self) -> HostConfig:
        if isinstance(self._host_json, HostConfig):
            return self._host_json
        if self._host_json is not None:
            return load_host_config(self._host_json)
        default = (self._app_dir or Path.cwd()) / "host.json"
        return load_host_config(default if default.exists() else None)

    def _load_dev_principal(self) -> Principal | None:
        """The identity to inject (``HASTE_DEV_PRINCIPAL``), or None. Raises DevHostError when it is malformed."""
        text = self._environ.get(DEV_PRINCIPAL_VARIABLE, "").strip()
        if not text:
            return None
        try:
            return parse_dev_principal(text)
        except ValueError as exc:
            raise DevHostError(f"{DEV_PRINCIPAL_VARIABLE}: {exc}") from None

    def _load_trust(self) -> bool:
        """``HASTE_DEV_TRUST_CLIENT_PRINCIPAL`` as a boolean. Raises DevHostError for a value that is neither."""
        text = self._environ.get(TRUST_VARIABLE, "").strip().lower()
        if text not in _TRUE | _FALSE:
            raise DevHostError(f"{TRUST_VARIABLE}: {text[:40]!r} is not true or false")
        return text in _TRUE

    def _log_started(self) -> None:
        principal = self.dev_principal
        if self._http is not None and self.trust_client_principal:
            log.warning(
                "%s=true: %s and the other X-MS-CLIENT-PRINCIPAL-*/X-MS-TOKEN-* headers a client sends are believed; "
                "anyone who reaches this host can act as anyone (Azure removes them)",
                TRUST_VARIABLE,
                PRINCIPAL_HEADER,
            )
        elif self._http is not None:
            log.info(
                "%s and the other X-MS-CLIENT-PRINCIPAL-*/X-MS-TOKEN-* headers a client sends are removed, as App "
                "Service authentication does (%s=true keeps them)",
                PRINCIPAL_HEADER,
                TRUST_VARIABLE,
            )
        if principal is not None and self._http is not None:
            log.warning(
                "%s is set: the development host adds %s to every HTTP request without one, as caller %s "
                "(roles %s; projects %s)",
                DEV_PRINCIPAL_VARIABLE,
                PRINCIPAL_HEADER,
                principal.describe(),
                ", ".join(sorted(principal.roles)) or "none",
                ", ".join(sorted(principal.projects)) or ("all" if principal.is_admin else "none"),
            )
        keyed = [f.name for f in self.functions.http if f.auth_level != "anonymous"]
        if keyed and self._http is not None:
            log.info("function keys are not enforced by the development host (like Core Tools): %s", ", ".join(keyed))
        for function in self.functions.http if self._http is not None else ():
            methods = ",".join(function.methods) if function.methods else "*"
            log.info("http  %s [%s] %s/%s", function.name, methods, self.api_url, function.route)
        for driver in self._drivers:
            log.info("queue %s <- %s", driver.function.name, driver.queue_name)
        for timer in self._timers:
            log.info("timer %s [%s]", timer.function.name, timer.function.schedule)
        if self.functions.queues:
            log.info(
                "a queue's listener looks at once when the app sends to that queue itself; Azure wakes it only for "
                "output bindings, so there an idle queue's message waits for the next poll (up to %ss)",
                self.config.queues.max_polling_interval.total_seconds(),
            )
