"""The model each provider's requests name in tests and benchmarks against the fake server."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["MODELS"]

MODELS: Mapping[str, str] = MappingProxyType(
    {
        "anthropic": "claude-sonnet-4-6",
        "openai_chat": "gpt-4.1",
        "openai_responses": "gpt-5",
        "gemini": "gemini-2.5-flash",
        "bedrock": "anthropic.claude-sonnet-4-5",
    }
)
"""A model per provider (``PROVIDERS``) that the fake server answers and the wires treat as they treat
real ones (Bedrock: a model id without a region prefix)."""
