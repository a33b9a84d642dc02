"""Check a request body against its provider's rules: pairing, ordering, roles, ids, blank text.

The rules of each wire live in a module of their own here (``check.anthropic`` ...), beside the checks
they share (``check._rules``).

Accepts both a ``to_request`` result and the wire body an SDK sends (model, tools and options
included; Gemini in snake_case or camelCase)::

    problems = check_request("anthropic", body)      # [] when valid
    assert_valid("bedrock", params)                  # raises RequestInvalid

Whether the tools declaration is checked (Anthropic ``tools``, Bedrock ``toolConfig``) follows the
body: it is when the body names a model (``model`` / ``modelId``) or carries the tools key, and
``require_tools=True`` / ``False`` forces it. Run ``python -m turnmemory.providers.check PROVIDER
FILE.json`` to check a saved body.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

from turnmemory.providers import PROVIDERS
from turnmemory.providers.check import anthropic, bedrock, gemini, openai_chat, openai_responses

__all__ = ["PROVIDERS", "RequestInvalid", "assert_valid", "check_request", "main"]

_CHECKERS: dict[str, Callable[..., list[str]]] = {
    "anthropic": anthropic.problems,
    "openai_chat": openai_chat.problems,
    "openai_responses": openai_responses.problems,
    "gemini": gemini.problems,
    "bedrock": bedrock.problems,
}

_SHOWN = 5


class RequestInvalid(ValueError):
    """A request body breaks its provider's rules; ``problems`` lists every violation."""

    def __init__(self, provider: str, problems: list[str]) -> None:
        shown = "; ".join(problems[:_SHOWN])
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        super().__init__(f"invalid {provider} request: {shown}{more}")
        self.provider = provider
        self.problems = problems


def check_request(
    provider: str,
    body: Mapping[str, Any],
    *,
    require_tools: bool | None = None,
    previous: Mapping[str, Any] | None = None,
) -> list[str]:
    """Readable one-line problems of ``body`` for ``provider`` (one of ``PROVIDERS``); empty when valid.

    ``previous``, the conversation's previous request to the same model, adds the rules that span two
    requests (Anthropic's cache look-back).
    """
    checker = _CHECKERS.get(provider)
    if checker is None:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    if not isinstance(body, Mapping):
        return [f"request: expected an object, got {type(body).__name__}"]
    problems = checker(body, require_tools=require_tools)
    if previous is not None and provider == "anthropic":
        problems.extend(anthropic.lookback_problems(body, previous))
    return problems


def assert_valid(provider: str, body: Mapping[str, Any], *, require_tools: bool | None = None) -> None:
    """Raise :class:`RequestInvalid` (a ``ValueError``) naming the first problems of ``body``."""
    problems = check_request(provider, body, require_tools=require_tools)
    if problems:
        raise RequestInvalid(provider, problems)


def main(argv: list[str] | None = None) -> int:
    """``python -m turnmemory.providers.check PROVIDER FILE.json``: print problems, exit 1 if any."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in PROVIDERS:
        print(
            f"usage: python -m turnmemory.providers.check {{{','.join(PROVIDERS)}}} FILE.json",
            file=sys.stderr,
        )
        return 2
    try:
        with open(args[1], encoding="utf-8") as file:
            body = json.load(file)
    except (OSError, ValueError) as error:
        print(f"{args[1]}: {error}", file=sys.stderr)
        return 2
    problems = check_request(args[0], body)
    for problem in problems:
        print(problem)
    return 1 if problems else 0
