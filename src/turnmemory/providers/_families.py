"""What the chat templates of served model families need from a Chat Completions history.

Servers of open models (vLLM, SGLang, llama.cpp, Ollama, TGI) render ``messages`` through the model's own
chat template, and some templates reject or drop what the spec's default form sends: Llama 3.x raises on
an assistant message with several calls, gpt-oss renders only its first call, Phi-4-mini drops the calls
of a message that has prose, Mistral templates demand 9-character alphanumeric call ids and strict
user/assistant alternation. :func:`family` names what a model needs, from its name as users write it
(a Hugging Face id, an Ollama tag, a provider alias or a path to a GGUF file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from turnmemory.replay import IdStyle

__all__ = ["DEFAULT", "Family", "family"]


@dataclass(frozen=True, slots=True)
class Family:
    """The wire form one model family needs (the defaults are the spec's form)."""

    name: str
    single_calls: bool = False
    """One call per assistant message: a batch becomes consecutive single-call exchanges."""
    id_style: IdStyle = "historical"
    prose_apart: bool = False
    """The prose before a batch in an assistant message of its own (the template drops prose beside calls)."""
    alternating: bool = False
    """The template demands user/assistant alternation: every assistant message has string content, and a
    message that would end with tool results (or render nothing) ends with an empty assistant message."""


DEFAULT = Family("default")
"""Models whose templates take the spec's form (Qwen, DeepSeek, GLM, Kimi, Llama 4, Hermes, ...)."""

_LLAMA_3 = Family("llama-3", single_calls=True, prose_apart=True)
_GPT_OSS = Family("gpt-oss", single_calls=True, prose_apart=True)
_PHI_4_MINI = Family("phi-4-mini", single_calls=True, prose_apart=True)
_MISTRAL = Family("mistral", id_style="compact", alternating=True)
_GEMMA_3 = Family("gemma-3", alternating=True)

# First match wins: fine-tunes that carry a base model's name but bring their own template come first.
_PATTERNS: tuple[tuple[re.Pattern[str], Family], ...] = tuple(
    (re.compile(pattern), found)
    for pattern, found in (
        (r"hermes|deepseek|xlam|firefunction|functionary|toolace", DEFAULT),
        (r"mistral|mixtral|ministral|devstral|codestral|magistral|pixtral", _MISTRAL),
        (r"llama-?3(?![0-9])", _LLAMA_3),
        (r"gpt-?oss", _GPT_OSS),
        (r"phi-?4-?mini", _PHI_4_MINI),
        (r"gemma-?3(?![0-9n])", _GEMMA_3),
    )
)


@lru_cache(maxsize=256)
def family(model: str | None) -> Family:
    """The family of the served model ``model`` (:data:`DEFAULT` when unknown or ``None``).

    Matches the way users write names: ``meta-llama/Llama-3.1-8B-Instruct``, ``llama3.1:8b``,
    ``mistral-small-latest``, ``/models/Mistral-Nemo-Instruct-2407-Q4_K_M.gguf``.
    """
    if not model:
        return DEFAULT
    path = model.strip().replace("\\", "/").rstrip("/")
    # The last path segment names the model; the whole path only when it does not (``/models/<name>/x.gguf``).
    for name in (path.rsplit("/", 1)[-1], path):
        normalized = re.sub(r"[\s_.:/]+", "-", name.lower())
        for pattern, found in _PATTERNS:
            if pattern.search(normalized):
                return found
    return DEFAULT
