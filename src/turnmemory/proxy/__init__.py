"""``turnmemory proxy``: TurnMemory for agents we cannot change, as a local HTTP gateway.

An agent pointed at the proxy (``ANTHROPIC_BASE_URL=http://127.0.0.1:8787``,
``OPENAI_BASE_URL=http://127.0.0.1:8787/v1``) sends its requests through it; the completed turns of
each ``POST /v1/messages`` (and ``/v1/messages/count_tokens``), ``/v1/chat/completions`` and
``/v1/responses`` body are replaced by their TurnMemory replay on the way upstream, and everything else
is relayed as it came. Needs the ``proxy`` extra (``pip install 'turnmemory[proxy]'``)::

    from turnmemory.proxy import ProxyApp
    app = ProxyApp(anthropic_upstream="https://api.anthropic.com")   # any ASGI server runs it
"""

from turnmemory.proxy._app import ANTHROPIC_API, OPENAI_API, ROUTES, Limits, ProxyApp
from turnmemory.proxy._serve import DEFAULT_HOST, DEFAULT_PORT, serve

__all__ = [
    "ANTHROPIC_API",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "OPENAI_API",
    "ROUTES",
    "Limits",
    "ProxyApp",
    "serve",
]
