"""TurnMemory for agents built on a framework or on a provider-format message list.

``compact(messages, provider=...)`` (and an incremental ``Compactor`` per conversation) works on plain
OpenAI Chat, Anthropic, OpenAI Responses, Gemini and Bedrock message lists and needs nothing beyond
the standard library; ``compact_request(wire, body)`` applies it to a whole Anthropic Messages, OpenAI
Chat or OpenAI Responses request body, as ``turnmemory proxy`` does. One module per framework, each
imported only when used and needing only its own extra:

- :mod:`turnmemory.integrations.langchain` — ``TurnMemoryMiddleware`` for LangChain v1
  ``create_agent`` (``pip install 'turnmemory[langchain]'``);
- :mod:`turnmemory.integrations.pydantic_ai` — ``turn_memory()``, the pydantic-ai ``ProcessHistory``
  capability around ``TurnMemoryProcessor`` (``pip install 'turnmemory[pydantic-ai]'``);
- :mod:`turnmemory.integrations.openai_agents` — ``TurnMemoryInputFilter``, a
  ``call_model_input_filter`` for the OpenAI Agents SDK (``pip install 'turnmemory[agents]'``);
- :mod:`turnmemory.integrations.litellm` — ``TurnMemoryCallback``, a LiteLLM ``CustomLogger`` whose
  pre-call hook compacts each request a LiteLLM proxy routes (``pip install 'turnmemory[litellm]'``).
"""

from turnmemory.integrations._agents import AGENT_RULES, GATEWAY_RULES
from turnmemory.integrations._compact import (
    CompactOptions,
    Compactor,
    CompactorOptions,
    Provider,
    ResultParser,
    compact,
    parse_result,
)
from turnmemory.integrations._request import WIRES, CompactedRequest, Wire, compact_request

__all__ = [
    "AGENT_RULES",
    "GATEWAY_RULES",
    "WIRES",
    "CompactOptions",
    "CompactedRequest",
    "Compactor",
    "CompactorOptions",
    "Provider",
    "ResultParser",
    "Wire",
    "compact",
    "compact_request",
    "parse_result",
]
