"""Running the proxy under uvicorn, loopback unless told otherwise, one log line per request."""

from __future__ import annotations

import ipaddress
import logging
import sys
from collections.abc import Callable

import uvicorn

from turnmemory.boundary import DEFAULT_POLICY, BoundaryPolicy
from turnmemory.proxy._app import ANTHROPIC_API, OPENAI_API, Limits, ProxyApp

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "is_loopback", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Unfinished(logging.Filter):
    """Drop uvicorn's note on a response left unfinished: the proxy's own line says why (the upstream broke)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("ASGI callable returned without completing response")


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    anthropic_upstream: str = ANTHROPIC_API,
    openai_upstream: str = OPENAI_API,
    limits: Limits | None = None,
    boundary: BoundaryPolicy = DEFAULT_POLICY,
    say: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True),
) -> None:
    """Serve the proxy until interrupted; a host other than loopback gets a warning first."""
    if not is_loopback(host):
        say(
            f"turnmemory proxy: warning: listening on {host}, not loopback: anyone who can reach this "
            "port can send requests upstream with the credentials they carry"
        )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("turnmemory proxy: %(message)s"))
    log = logging.getLogger("turnmemory.proxy")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    logging.getLogger("uvicorn.error").addFilter(_Unfinished())
    logging.getLogger("httpx").setLevel(logging.WARNING)  # its lines carry whole URLs
    app = ProxyApp(
        anthropic_upstream=anthropic_upstream,
        openai_upstream=openai_upstream,
        limits=limits or Limits(),
        boundary=boundary,
    )
    say(
        f"turnmemory proxy: listening on http://{host}:{port} "
        f"(anthropic -> {anthropic_upstream}, openai -> {openai_upstream})"
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=False,
        server_header=False,
        date_header=False,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    uvicorn.Server(config).run()
