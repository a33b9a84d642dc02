"""Provider-native replay: one pure, dependency-free module per wire format.

Each module has ``to_request(messages, *, pending=None, arguments="empty", id_style="historical")``
(``openai_chat`` also ``model=``, the served model, whose family's chat template may need another form)
returning plain JSON-ready dicts for the official SDK, ``replayed_tool_names(request)``,
``placeholder_tool(name)`` / ``placeholder_tools(request, offered)``; the
:mod:`turnmemory.providers.check` package holds each wire's rules and checks any request body against them.
"""

from turnmemory.providers import anthropic, bedrock, gemini, openai_chat, openai_responses

__all__ = ["PROVIDERS", "anthropic", "bedrock", "gemini", "openai_chat", "openai_responses"]

PROVIDERS = ("anthropic", "openai_chat", "openai_responses", "gemini", "bedrock")
"""The provider (wire format) names, as ``check_request`` and the LLM clients know them."""
