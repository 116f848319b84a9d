"""Options for the azure-core HTTP transport that storage clients send through.

With ``requests``' default ``trust_env``, every storage call re-reads the process
environment: ``getproxies_environment`` walks all of ``os.environ`` (decoding each
name and value) looking for proxies, then it looks for a CA bundle and ``~/.netrc``.
Its cost grows with the number of variables (0.09 ms a call with 39 of them), and on
Azure Functions every app setting is one (docs/reliability.md, Load). The environment
does not change while the process runs, so it is read once here instead:

* a proxy variable (``*_proxy``, any case) present: nothing changes, requests keeps
  reading the environment per call (its per-URL ``no_proxy`` rules included);
* otherwise: ``use_env_settings=False``, with the CA bundle requests would have used
  (``REQUESTS_CA_BUNDLE``, then ``CURL_CA_BUNDLE``) passed as ``connection_verify``.
  ``~/.netrc`` is no longer consulted, which only ever could have replaced a storage
  client's own ``Authorization`` header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def names_proxy(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` sets a proxy variable that requests would read (pure)."""
    return any(value and name.lower().endswith("_proxy") for name, value in environ.items())


def transport_options(environ: Mapping[str, str]) -> dict[str, Any]:
    """Keyword options for a storage client built in a process whose environment is ``environ`` (pure)."""
    if names_proxy(environ):
        return {}
    bundle = environ.get("REQUESTS_CA_BUNDLE") or environ.get("CURL_CA_BUNDLE")
    return {"use_env_settings": False, **({"connection_verify": bundle} if bundle else {})}
