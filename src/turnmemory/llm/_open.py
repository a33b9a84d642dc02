"""``open_client``: one entry point for every provider."""

from __future__ import annotations

import importlib
from typing import Any

from turnmemory.boundary import DEFAULT_POLICY, BoundaryPolicy
from turnmemory.llm._client import DEFAULT_CACHE_TTL, Client
from turnmemory.llm._retry import RetryPolicy
from turnmemory.llm._sdk import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, Endpoint, Settings
from turnmemory.llm._tokens import ContextLimits, Tokenizer, open_counter
from turnmemory.llm._turn import (
    DEFAULT_MAX_ARGUMENT_BYTES,
    DEFAULT_MAX_CALLS,
    DEFAULT_MAX_TOOL_TURNS,
    TurnLimits,
)
from turnmemory.providers import PROVIDERS
from turnmemory.replay import ArgumentPolicy, IdStyle

__all__ = ["PROVIDERS", "open_client"]


_SDKS: dict[str, tuple[str, str, str]] = {
    "anthropic": ("turnmemory.llm.anthropic", "AnthropicSdk", "anthropic"),
    "openai_chat": ("turnmemory.llm.openai_chat", "OpenAIChatSdk", "openai"),
    "openai_responses": ("turnmemory.llm.openai_responses", "OpenAIResponsesSdk", "openai"),
    "gemini": ("turnmemory.llm.gemini", "GeminiSdk", "google-genai"),
    "bedrock": ("turnmemory.llm.bedrock", "BedrockSdk", "boto3"),
}
"""Provider name → (module, SDK half, the SDK's package), for every name of ``PROVIDERS``."""


def open_client(
    provider: str,
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    client: Any = None,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    deadline: float | None = None,
    region: str | None = None,
    max_tool_turns: int = DEFAULT_MAX_TOOL_TURNS,
    max_calls: int = DEFAULT_MAX_CALLS,
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
    retry: RetryPolicy | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    thinking: int | None = None,
    reasoning_effort: str | None = None,
    session_id: str | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle | None = None,
    single_calls: bool | None = None,
    context_window: int | None = None,
    context_reserve: int | None = None,
    clear_at_least: int | None = None,
    tokenizer: Tokenizer = "auto",
    boundary: BoundaryPolicy = DEFAULT_POLICY,
    cache_ttl: float | None = DEFAULT_CACHE_TTL,
) -> Client:
    """A streaming client for ``provider`` and ``model``.

    ``provider`` is ``"anthropic"``, ``"openai_chat"`` (also any OpenAI-compatible server, given its
    ``base_url``), ``"openai_responses"``, ``"gemini"`` or ``"bedrock"``. The SDK client is built from
    ``base_url`` (Bedrock: the endpoint URL), ``api_key`` (Bedrock takes none: it reads the AWS
    credential chain), ``region`` (Bedrock), ``timeout`` (seconds to wait for the next bytes of a
    response; 300 by default) and
    ``connect_timeout`` (seconds to wait for a connection; 10), with the SDK's own retries off; or
    pass a ready SDK object as ``client`` (Anthropic and OpenAI clients get their retries turned off;
    configure a Gemini or boto3 client's retries and timeouts yourself).

    ``retry`` is the policy for failed requests; ``max_tool_turns`` bounds the tool rounds of one turn
    (10,000) and ``deadline`` (seconds, tools included; the read timeout never exceeds it) its
    duration; ``max_calls`` the calls of one response that run (100) and ``max_argument_bytes`` the
    size of the arguments one call may carry and run (1,000,000 bytes of compact JSON): the model is
    told in one line of each call that did not run.
    ``max_tokens`` caps the output (Anthropic needs one: 8192 by default). ``temperature`` is not
    accepted by Anthropic. ``thinking`` is a reasoning token budget (Anthropic, Gemini, Claude on
    Bedrock) and ``reasoning_effort`` an effort level (OpenAI). ``session_id`` becomes OpenAI's
    ``prompt_cache_key``. ``arguments`` and ``id_style`` choose how history replays (see
    :mod:`turnmemory.replay`: ``"empty"`` or ``"target"``; ``"historical"`` or ``"compact"``).
    On ``"openai_chat"`` the history takes the form the model's family needs (see
    :func:`turnmemory.providers.openai_chat.family`); ``id_style`` and ``single_calls`` (one call per
    assistant message) force either behaviour.
    A system prompt is the first message of the history.

    ``context_window`` (tokens) overrides the model's window from the table
    (:func:`turnmemory.llm.context_window`); ``context_reserve`` is what a request leaves for the output
    (default ``max_tokens``, else 8192, at most a quarter of the window); ``clear_at_least`` the fewest
    tokens the in-turn reducer clears at a time (default a fifth of the window); ``tokenizer`` the
    offline estimate (``"auto"``: o200k where available offline, else bytes / 3).

    ``boundary`` says when a finished turn is replaced by its TurnMemory: ``"every_turn"`` (the spec),
    ``"when_it_pays"`` (once the cache rewrite pays for itself, given the provider's cache lifetime
    ``cache_ttl`` in seconds) or ``"never"`` (the raw trace of every turn, in memory only, while it fits).
    """
    entry = _SDKS.get(provider)
    if entry is None:
        raise ValueError(f"provider: expected one of {', '.join(PROVIDERS)}, got {provider!r}")
    if not isinstance(model, str) or not model:
        raise ValueError("model: expected a non-empty string")
    turn_limits = TurnLimits(max_tool_turns, max_calls, max_argument_bytes, deadline)
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    connect_timeout = DEFAULT_CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
    for name, seconds in (("timeout", timeout), ("connect_timeout", connect_timeout)):
        if not seconds > 0:
            raise ValueError(f"{name}: expected a positive number of seconds, got {seconds!r}")
    if deadline is not None and deadline > 0:
        timeout = min(timeout, deadline)  # a silent stream must not outlast the whole turn
    settings = Settings(
        model=model,
        max_tokens=max_tokens,
        temperature=temperature,
        thinking=thinking,
        reasoning_effort=reasoning_effort,
        session_id=session_id,
        arguments=arguments,
        id_style=id_style,
        single_calls=single_calls,
    )
    limits = ContextLimits.of(
        model,
        window=context_window,
        reserve=context_reserve,
        max_tokens=max_tokens,
        clear_at_least=clear_at_least,
    )
    counter = open_counter(tokenizer)
    module_name, class_name, package = entry
    sdk_class = getattr(importlib.import_module(module_name), class_name)
    endpoint = Endpoint(
        base_url=base_url,
        api_key=api_key,
        client=client,
        timeout=timeout,
        connect_timeout=connect_timeout,
        region=region,
    )
    try:
        sdk = sdk_class(settings, endpoint)
    except ImportError as error:
        raise ImportError(
            f"the {provider} client needs the {package!r} package ({error}); install turnmemory[llm]"
        ) from error
    return Client(
        sdk,
        provider=provider,
        model=model,
        retry=retry or RetryPolicy(),
        turn_limits=turn_limits,
        limits=limits,
        counter=counter,
        boundary=boundary,
        cache_ttl=cache_ttl,
    )
