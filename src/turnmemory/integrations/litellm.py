"""TurnMemory for a LiteLLM proxy: a ``CustomLogger`` whose pre-call hook compacts each request.

A team that runs LiteLLM's proxy as its gateway adds the callback to the proxy's config; every
``/chat/completions``, ``/v1/responses`` and ``/v1/messages`` request then has its completed turns
replaced by their TurnMemory replay before LiteLLM routes it, as ``turnmemory proxy`` does::

    litellm_settings:
      callbacks: ["turnmemory.integrations.litellm.turnmemory_callback"]

Needs the ``litellm`` extra (``pip install 'turnmemory[litellm]'``). The hook fails open: a request
it cannot compact goes on as it came.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from turnmemory.integrations._adapter import missing_extra

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as error:  # pragma: no cover - only without the extra
    raise missing_extra("litellm", "litellm", "litellm", error) from None

from turnmemory.boundary import DEFAULT_POLICY, BoundaryPolicy
from turnmemory.integrations._agents import GATEWAY_RULES
from turnmemory.integrations._compact import ResultParser
from turnmemory.integrations._request import Wire, compact_request
from turnmemory.retention import ToolRule

__all__ = ["TurnMemoryCallback", "turnmemory_callback", "wire_of"]

log = logging.getLogger("turnmemory.litellm")


def wire_of(call_type: str) -> Wire | None:
    """The request body LiteLLM's ``call_type`` carries: Anthropic Messages, OpenAI Responses or
    Chat; ``None`` for the calls that hold no conversation (embeddings, images, audio ...)."""
    name = str(getattr(call_type, "value", call_type)).lstrip("_")
    if "anthropic_messages" in name:
        return "anthropic"
    if name in ("responses", "aresponses"):
        return "openai_responses"
    if name in ("completion", "acompletion"):
        return "openai_chat"
    return None


class TurnMemoryCallback(CustomLogger):
    """Compacts the completed turns of each conversation request in LiteLLM's ``async_pre_call_hook``.

    ``rules``, ``result_parser``, ``workspace`` and ``boundary`` mean what they mean for
    :func:`turnmemory.integrations.compact` (a gateway sees each request alone: no pause is known); the default rules know Claude Code's, Codex's and
    OpenCode's tools too (:data:`~turnmemory.integrations.GATEWAY_RULES`).
    """

    def __init__(
        self,
        *,
        rules: Mapping[str, ToolRule] = GATEWAY_RULES,
        result_parser: ResultParser | None = None,
        workspace: str | None = None,
        boundary: BoundaryPolicy = DEFAULT_POLICY,
    ) -> None:
        super().__init__()
        self.rules = rules
        self.result_parser = result_parser
        self.workspace = workspace
        self.boundary: BoundaryPolicy = boundary

    def compact(self, data: dict[str, Any], call_type: str) -> dict[str, Any]:
        """``data`` with its completed turns compacted (``data`` itself when there is nothing to do)."""
        wire = wire_of(call_type)
        if wire is None:
            return data
        try:
            done = compact_request(
                wire,
                data,
                rules=self.rules,
                result_parser=self.result_parser,
                workspace=self.workspace,
                boundary=self.boundary,
            )
        except Exception as error:  # fail open: the request goes on as it came
            log.warning("turnmemory: request not compacted (%s)", type(error).__name__)
            return data
        return data if done is None else done.apply(data)

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any]:
        """LiteLLM's proxy hook: the request body to route on."""
        return self.compact(data, call_type)


turnmemory_callback = TurnMemoryCallback()
"""The instance a LiteLLM proxy config names in ``litellm_settings.callbacks``."""
