"""MCP server configuration: the ``[mcp]`` table of the agent's TOML config, and the MCP error type.

::

    [mcp]
    timeout = 30                      # seconds allowed for each tool call (default for every server)
    startup_timeout = 30              # seconds allowed for a server to start (default: timeout)

    [mcp.servers.time]
    command = "uvx"
    args = ["mcp-server-time", "--local-timezone", "UTC"]
    env = { TZ = "UTC" }              # merged over a minimal inherited environment
    cwd = "/srv/time"                 # optional working directory

    [mcp.servers.docs]
    url = "https://mcp.example.com/mcp"
    headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
    timeout = 60

String values in ``args``, ``env``, ``url`` and ``headers`` may reference environment variables as
``${NAME}`` or ``${NAME:-default}``, so secrets need not be written into the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["DEFAULT_TIMEOUT", "McpError", "McpServerConfig", "parse_mcp_config"]

DEFAULT_TIMEOUT = 30.0
"""Seconds allowed for each tool call, and for a server's start-up, unless the config says otherwise."""

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TIMEOUT_KEYS = frozenset({"timeout", "startup_timeout"})
_STDIO_KEYS = frozenset({"command", "args", "env", "cwd"}) | _TIMEOUT_KEYS
_HTTP_KEYS = frozenset({"url", "headers"}) | _TIMEOUT_KEYS


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


class McpError(Exception):
    """An MCP failure the model and the user should read: one line, no payload beyond a bounded excerpt."""


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One configured MCP server: a stdio ``command`` (with ``args``, ``env``, ``cwd``) or an HTTP ``url``.

    ``timeout`` bounds each tool call, ``startup_timeout`` the launch, handshake and tool listing.
    ``env`` and ``headers`` often hold credentials, so they are left out of ``repr``.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=_empty, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=_empty, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    startup_timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if not _SERVER_NAME.match(self.name):
            raise ValueError(f"mcp server name {self.name!r} must be 1-64 letters, digits, '_' or '-'")
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f"mcp.servers.{self.name}: give exactly one of 'command' (stdio) or 'url' (HTTP)"
            )
        if not (self.timeout > 0 and self.startup_timeout > 0):
            raise ValueError(f"mcp.servers.{self.name}: timeouts must be positive numbers of seconds")

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``"stdio"`` for a command, ``"http"`` for a streamable HTTP URL."""
        return "stdio" if self.command is not None else "http"


def parse_mcp_config(table: Mapping[str, Any] | None) -> tuple[McpServerConfig, ...]:
    """The servers of the ``[mcp]`` config table, in file order; ``ValueError`` (one line) on bad input.

    ``table`` is the parsed ``[mcp]`` table: ``{"servers": {name: {...}}, "timeout": seconds,
    "startup_timeout": seconds}``; ``None`` or an empty table means no servers.
    """
    if table is None:
        return ()
    if not isinstance(table, Mapping):
        raise ValueError("[mcp] must be a table")
    unknown = set(table) - {"servers"} - _TIMEOUT_KEYS
    if unknown:
        raise ValueError(
            f"[mcp]: unknown key {sorted(unknown)[0]!r} (expected 'servers', 'timeout', 'startup_timeout')"
        )
    defaults = _timeouts(table, DEFAULT_TIMEOUT, None, "[mcp]")
    servers = table.get("servers", {})
    if not isinstance(servers, Mapping):
        raise ValueError("mcp.servers must be a table of server tables")
    return tuple(_server(str(name), entry, defaults) for name, entry in servers.items())


def _server(name: str, entry: Any, defaults: tuple[float, float | None]) -> McpServerConfig:
    where = f"mcp.servers.{name}"
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where} must be a table")
    allowed = _STDIO_KEYS if "command" in entry else _HTTP_KEYS if "url" in entry else None
    if allowed is None:
        raise ValueError(f"{where}: give 'command' (stdio) or 'url' (HTTP)")
    unknown = set(entry) - allowed
    if unknown:
        raise ValueError(
            f"{where}: unknown key {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )
    timeout, startup = _timeouts(entry, *defaults, where)
    startup_timeout = startup if startup is not None else timeout
    if "command" in entry:
        command = _string(entry["command"], f"{where}.command")
        if not command.strip():
            raise ValueError(f"{where}.command must not be empty")
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise ValueError(f"{where}.args must be a list of strings")
        cwd = entry.get("cwd")
        return McpServerConfig(
            name=name,
            command=command,
            args=tuple(_expand(arg, f"{where}.args") for arg in args),
            env=_string_table(entry.get("env", {}), f"{where}.env"),
            cwd=_string(cwd, f"{where}.cwd") if cwd is not None else None,
            timeout=timeout,
            startup_timeout=startup_timeout,
        )
    url = _expand(_string(entry["url"], f"{where}.url"), f"{where}.url")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{where}.url must be an http:// or https:// URL")
    return McpServerConfig(
        name=name,
        url=url,
        headers=_string_table(entry.get("headers", {}), f"{where}.headers"),
        timeout=timeout,
        startup_timeout=startup_timeout,
    )


def _timeouts(
    table: Mapping[str, Any], timeout: float, startup_timeout: float | None, where: str
) -> tuple[float, float | None]:
    """``(timeout, startup_timeout)`` of ``table`` over the given defaults; ``None``: as the timeout."""
    call = _seconds(table.get("timeout", timeout), f"{where}.timeout")
    startup = table.get("startup_timeout", startup_timeout)
    return call, _seconds(startup, f"{where}.startup_timeout") if startup is not None else None


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{where} must be a positive number of seconds")
    return float(value)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a string")
    return value


def _string_table(value: Any, where: str) -> Mapping[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise ValueError(f"{where} must be a table of strings")
    return MappingProxyType({key: _expand(item, f"{where}.{key}") for key, item in value.items()})


def _expand(text: str, where: str) -> str:
    """``text`` with ``${NAME}`` and ``${NAME:-default}`` replaced from the environment."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise ValueError(f"{where}: environment variable {name} is not set")

    return _VARIABLE.sub(value, text)
