"""Development hosts that tests start in place of the whole one."""

from __future__ import annotations

import sys

from hastegeo_dev.stack import HostProcess


class HttpOnlyHost(HostProcess):
    """:class:`HostProcess` running :mod:`tests.support.http_only_host`: the same app, but nothing consumes
    the queues."""

    name = "HTTP-only host"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "tests.support.http_only_host", str(self.port)]
