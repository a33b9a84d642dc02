"""A loopback fake of the five provider APIs, for tests that drive the official SDK clients.

``FakeProviderServer`` listens on 127.0.0.1 (standard library only) and answers every request on a
provider route with the next item of its script, in that provider's own wire format:

============================  ==============================================================
provider (``base_url``)       routes
============================  ==============================================================
``anthropic`` (url)           ``POST /v1/messages`` (SSE with named events, or JSON)
``openai_chat`` (url/v1)      ``POST /v1/chat/completions`` (SSE ``data:`` chunks, ``[DONE]``)
``openai_responses`` (url/v1) ``POST /v1/responses`` (SSE typed events, or JSON)
``gemini`` (url)              ``POST /{v1,v1beta}/models/{model}:generateContent`` and
                              ``:streamGenerateContent?alt=sse`` (also without a version)
``bedrock`` (url)             ``POST /model/{modelId}/converse`` and ``/converse-stream``
                              (binary AWS event-stream)
============================  ==============================================================

>>> with FakeProviderServer([Reply(text="hi")]) as server:   # doctest: +SKIP
...     client = anthropic.Anthropic(api_key="test", base_url=server.base_url("anthropic"))
...     client.messages.create(model="m", max_tokens=10, messages=[...]).content[0].text
'hi'

Run it from a shell with ``python -m turnmemory.testing --port 8765 --script script.json``; it
prints each provider's base URL and serves until interrupted.

The script file is a JSON list; each item answers one request::

    [
      {"reply": {"text": "Reading it.",
                 "reasoning": "optional reasoning text",
                 "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}, "id": "optional"}],
                 "usage": {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0,
                           "cache_write_tokens": 0},
                 "stop": "end_turn | tool_use | max_tokens | content_filter | <verbatim>",
                 "break_after": 3,
                 "edits": [{"op": "garble", "at": 4}, {"op": "drop", "match": "message_stop"}],
                 "pace": 0.5}},
      {"hang": {}},
      {"failure": {"status": 503, "message": "busy", "kind": "optional provider error type",
                   "mid_stream": false, "retry_after": 1.5, "partial_text": ""}}
    ]

Every field is optional except a tool call's ``name``; the fields mean what the ``Reply``,
``ToolCall``, ``Usage``, ``StreamEdit`` and ``Failure`` parameters of the same names mean; ``hang``
is a request read and never answered. ``docs/fake-provider.md`` describes every field.

``FakeProviderServer(cache=PromptCache())`` answers Anthropic requests with the reads and writes of a
prompt cache that follows Anthropic's rules (breakpoints, the 20-block look-back, a lifetime), so a
test can see what a caching strategy would be billed. ``MODELS`` names one model per provider for
the requests of tests and benchmarks.
"""

from turnmemory.testing._cache import PromptCache
from turnmemory.testing._models import MODELS
from turnmemory.testing._script import (
    EDIT_OPS,
    STOP_REASONS,
    Failure,
    Hang,
    Reply,
    ScriptItem,
    StreamEdit,
    ToolCall,
    Usage,
    load_script,
    parse_script,
)
from turnmemory.testing._server import PROVIDERS, FakeProviderServer, RecordedRequest

__all__ = [
    "EDIT_OPS",
    "MODELS",
    "PROVIDERS",
    "STOP_REASONS",
    "Failure",
    "FakeProviderServer",
    "Hang",
    "PromptCache",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "StreamEdit",
    "ToolCall",
    "Usage",
    "load_script",
    "parse_script",
]
