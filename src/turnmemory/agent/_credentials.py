"""The agent's own credentials, kept from the commands it runs and from the model.

The agent reads provider API keys and tokens: the environment variables of
:data:`CREDENTIAL_VARIABLES`, each ``api_key`` of the config file, for Bedrock the keys of the AWS
credential chain (:func:`aws_keys`), and the environment variables an MCP server's ``headers`` name. :func:`remember` records their
values once they are read; from then on

- a host-side command (escalated, or with the sandbox off) gets the environment the user's shell gave
  the agent minus every credential, by name and by value (:func:`host_environment`); a contained
  command's minimal environment loses them by value too (:func:`without_credentials`);
- each value is a secret to the redactor everywhere (:func:`turnmemory.redaction.register` with the
  escaped literal), so the memory, the session store and later requests never hold it;
- :func:`scrub` replaces each value in a tool's result before the model reads it in the same turn (a
  host command can still read the agent's own files or ``/proc``: what it prints is scrubbed).

Values shorter than :data:`MIN_LENGTH` are not taken for credentials: no real key is that short, and
removing or redacting every occurrence of a short string would damage ordinary text.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from turnmemory import redaction

__all__ = [
    "CREDENTIAL_VARIABLES",
    "MIN_LENGTH",
    "aws_keys",
    "configured_keys",
    "credentials",
    "host_environment",
    "remember",
    "remember_environment",
    "scrub",
    "without_credentials",
]

CREDENTIAL_VARIABLES = frozenset(
    {
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
    }
)
"""Environment variables the agent or its provider SDKs read a credential from."""
MIN_LENGTH = 12
"""The shortest value taken for a credential."""

_lock = threading.Lock()
_values: frozenset[str] = frozenset()
_pattern: re.Pattern[str] | None = None


def remember(values: Iterable[str | None]) -> None:
    """Record credential values the agent has read (from the environment, the config file)."""
    global _values, _pattern
    fresh = {value for value in values if value and len(value) >= MIN_LENGTH} - _values
    if not fresh:
        return
    with _lock:
        for value in sorted(fresh - _values):
            redaction.register(re.escape(value), hints=[value.lower()])
        _values = _values | fresh
        literals = sorted(_values, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(value) for value in literals))


def remember_environment(env: Mapping[str, str] | None = None) -> None:
    """Record the credentials of :data:`CREDENTIAL_VARIABLES` set in ``env`` (the process's)."""
    env = os.environ if env is None else env
    remember(env.get(name) for name in CREDENTIAL_VARIABLES)


def configured_keys(table: Mapping[str, Any]) -> list[str]:
    """Every ``api_key`` of a parsed config file's ``[providers.NAME]`` tables."""
    providers = table.get("providers")
    if not isinstance(providers, Mapping):
        return []
    sections = [section for section in providers.values() if isinstance(section, Mapping)]
    return [key for section in sections if isinstance(key := section.get("api_key"), str)]


def aws_keys() -> list[str]:
    """The AWS secret key and session token Bedrock's client resolves (environment, profile, role)."""
    try:
        import boto3

        found = boto3.Session().get_credentials()
    except Exception:  # no boto3, or a profile it cannot read: then the client has no keys either
        return []
    if found is None:
        return []
    frozen = found.get_frozen_credentials()
    return [value for value in (frozen.secret_key, frozen.token) if value]


def credentials() -> frozenset[str]:
    """The credential values recorded so far."""
    return _values


def without_credentials(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables that hold a credential, by name or by value."""
    pattern = _pattern
    return {
        name: value
        for name, value in env.items()
        if name not in CREDENTIAL_VARIABLES and (pattern is None or pattern.search(value) is None)
    }


def host_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a host-side command: the agent's own (what the user's shell gave it) with
    every credential removed, and ``extra`` on top."""
    remember_environment()
    return {**without_credentials(os.environ), **(extra or {})}


def scrub(value: Any) -> Any:
    """``value`` (a tool's result: strings, lists, dicts) with each credential replaced by ``[REDACTED]``."""
    pattern = _pattern
    if pattern is None:
        return value
    return _scrub(value, pattern)


def _scrub(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(redaction.REDACTED, value)
    if isinstance(value, dict):
        return {_scrub(key, pattern): _scrub(item, pattern) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(item, pattern) for item in value]
    return value
