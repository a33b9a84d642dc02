"""Streaming LLM clients over the official SDKs: the in-turn tool loop, events, retries, pending state.

::

    from turnmemory.llm import open_client, ToolSpec, ToolResult, record

    client = open_client("anthropic", model="claude-sonnet-4-5")
    recorder = turnmemory.TurnRecorder(workspace="/repo")
    for event in client.run_turn(history, "Fix the failing test", tools=[...], execute=execute):
        record(event, recorder)
    message = recorder.finish()      # the turn's Message with its TurnMemory

Importing this package needs no SDK; each provider's SDK is imported when its client is opened.
"""

from turnmemory.llm._client import Client, Pending, record_items
from turnmemory.llm._open import PROVIDERS, open_client
from turnmemory.llm._reduce import CLEARED
from turnmemory.llm._retry import RetryPolicy
from turnmemory.llm._tokens import (
    CONTEXT_WINDOWS,
    ContextLimits,
    TokenCounter,
    Tokenizer,
    context_window,
    o200k_cache_file,
    o200k_unavailable,
    open_counter,
)
from turnmemory.llm._tools import ToolSpec
from turnmemory.llm._turn import (
    DEFAULT_MAX_ARGUMENT_BYTES,
    DEFAULT_MAX_CALLS,
    DEFAULT_MAX_TOOL_TURNS,
    UNKNOWN,
    Execute,
)
from turnmemory.llm.events import TERMINAL_KINDS, Event, EventKind, Reason, Usage, record
from turnmemory.providers._tools import ToolResult

__all__ = [
    "CLEARED",
    "CONTEXT_WINDOWS",
    "DEFAULT_MAX_ARGUMENT_BYTES",
    "DEFAULT_MAX_CALLS",
    "DEFAULT_MAX_TOOL_TURNS",
    "PROVIDERS",
    "TERMINAL_KINDS",
    "UNKNOWN",
    "Client",
    "ContextLimits",
    "Event",
    "EventKind",
    "Execute",
    "Pending",
    "Reason",
    "RetryPolicy",
    "TokenCounter",
    "Tokenizer",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "context_window",
    "o200k_cache_file",
    "o200k_unavailable",
    "open_client",
    "open_counter",
    "record",
    "record_items",
]
