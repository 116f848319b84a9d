"""Options for the azure-core HTTP transport that storage clients send through.

With ``requests``' default ``trust_env``, every storage call re-reads the process
environment: ``getproxies_environment`` walks all of ``os.environ`` (decoding each
name and value) looking for proxies, then it looks for a CA bundle and ``~/.netrc``.
Its cost grows with the number of variables (0.09 ms a call with 39 of them), and on
Azure Functions every app setting is one (docs/reliability.md, Load). The environment
does not change while the process runs, so it is read once here instead:

* a proxy variable (``*_proxy``, any case) present: nothing changes, requests keeps
  reading the environment per call (its per-URL ``no_proxy`` rules included);
* otherwise: the client sends through a :class:`DirectSession` (ADR 0018), with the CA
  bundle requests would have used (``REQUESTS_CA_BUNDLE``, then ``CURL_CA_BUNDLE``)
  passed as ``connection_verify``. ``~/.netrc`` is no longer consulted, which only
  ever could have replaced a storage client's own ``Authorization`` header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests.models import PreparedRequest
from urllib3.util.retry import Retry

# Connections a client keeps open to its storage host. Many threads of one process share a client (the
# queue workers, the exit handlers, the upload pools); past the pool's size, requests opens a connection
# for a call and closes it after ("Connection pool is full, discarding connection"): on Azure, a TLS
# handshake per call. requests' default is 10.
POOL_SIZE = 64


def names_proxy(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` sets a proxy variable that requests would read (pure)."""
    return any(value and name.lower().endswith("_proxy") for name, value in environ.items())


def transport_options(environ: Mapping[str, str]) -> dict[str, Any]:
    """Keyword options for one storage client built in a process whose environment is ``environ``.

    Call it once per client: the session it holds is that client's (the client closes it).
    """
    if names_proxy(environ):
        return {}
    bundle = environ.get("REQUESTS_CA_BUNDLE") or environ.get("CURL_CA_BUNDLE")
    return {
        "use_env_settings": False,
        "session": DirectSession(),
        "session_owner": True,
        **({"connection_verify": bundle} if bundle else {}),
    }


class DirectSession(requests.Session):
    """A requests session that hands each request straight to its connection adapter.

    ``Session.request`` merges the session's cookies, auth, hooks, headers and
    environment into every request, stores the cookies of every response and resolves
    redirects. azure-core's transport uses none of it: it sets its own headers, turns
    redirects and retries off and keeps the environment out; yet the merging costs
    about 0.15 ms of CPU a call, some 8 % of a storage call (ADR 0018). What is left is
    what a call needs: the request prepared as requests prepares it, and the adapter's
    connection pool, TLS and timeouts. A call that asks for anything skipped (cookies,
    auth, hooks, proxies, redirects) goes the whole way, as with any session.

    The session is set up as azure-core sets up its own: no environment, and adapters
    that never retry (the client's retry policy decides).
    """

    def __init__(self) -> None:
        super().__init__()
        self.trust_env = False
        adapter = HTTPAdapter(
            pool_maxsize=POOL_SIZE, max_retries=Retry(total=False, redirect=False, raise_on_status=False)
        )
        for scheme in ("http://", "https://"):
            self.mount(scheme, adapter)

    def request(  # type: ignore[override]  # the same parameters, by keyword, as Session.request
        self,
        method: str,
        url: str,
        params: Any = None,
        data: Any = None,
        headers: Any = None,
        cookies: Any = None,
        files: Any = None,
        auth: Any = None,
        timeout: Any = None,
        allow_redirects: bool = True,
        proxies: Any = None,
        hooks: Any = None,
        stream: bool | None = None,
        verify: Any = None,
        cert: Any = None,
        json: Any = None,
    ) -> requests.Response:
        if cookies or auth or hooks or proxies or allow_redirects or self._merges_something():
            return super().request(
                method, url, params=params, data=data, headers=headers, cookies=cookies, files=files, auth=auth,
                timeout=timeout, allow_redirects=allow_redirects, proxies=proxies, hooks=hooks, stream=stream,
                verify=verify, cert=cert, json=json,
            )  # fmt: skip
        prepared = PreparedRequest()
        prepared.prepare(method=method, url=url, headers=headers, files=files, data=data, params=params, json=json)
        response = self.get_adapter(prepared.url or url).send(
            prepared,
            stream=bool(stream),
            timeout=timeout,
            verify=self.verify if verify is None else verify,
            cert=self.cert if cert is None else cert,
            proxies={},
        )
        if not stream:
            _ = response.content  # read now, as Session.send does: the connection goes back to the pool
        return response

    def _merges_something(self) -> bool:
        """Whether session-level settings would change a request (someone set them on this session)."""
        return bool(self.trust_env or self.cookies or self.auth or self.proxies or self.hooks["response"])
