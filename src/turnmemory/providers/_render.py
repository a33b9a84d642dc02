"""What every wire renders history from: the replay options, replay steps fit for a request, tool names.

Rendering is a pure function of a message and its options (see :mod:`turnmemory.providers._build` for
the assembly of a whole request from rendered messages).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import count, product
from typing import Any

from turnmemory._text import compact_json
from turnmemory.memory import Message
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle, Step, historical_steps

__all__ = [
    "MAX_TOOL_NAME",
    "PLACEHOLDER_DESCRIPTION",
    "Block",
    "Item",
    "Options",
    "cached_json",
    "is_blank",
    "list_at",
    "marked_last",
    "missing_names",
    "replay_steps",
    "takes_breakpoint",
    "tool_name",
]

Item = dict[str, Any]
"""One entry of a request's list: a message (Anthropic, Chat, Bedrock), a content (Gemini), an input item
(Responses)."""

Block = dict[str, Any]
"""One entry of an item's content: a content block (Anthropic, Bedrock) or a part (Gemini)."""

PLACEHOLDER_DESCRIPTION = "A tool used in earlier turns that is not available now. Do not call it."
"""The description of a placeholder definition declared for a replayed tool the caller does not offer."""

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64
"""The longest tool name every provider accepts."""


@dataclass(frozen=True, slots=True)
class Options:
    """The replay options of one request, as ``to_request`` takes them."""

    arguments: ArgumentPolicy = "empty"
    id_style: IdStyle = "historical"
    single_calls: bool = False
    """One call per assistant message (Chat Completions only; see ``providers._families``)."""
    prose_apart: bool = False
    """The prose before a batch in an assistant message of its own (Chat Completions only)."""
    alternating: bool = False
    """Keep user/assistant alternation for templates that demand it (Chat Completions only)."""


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or whitespace only."""
    return not text.strip()


def tool_name(name: str) -> str:
    """``name`` as every provider accepts it: ``[A-Za-z0-9_-]{1,64}`` (other characters become ``_``)."""
    return _tool_name(name[:MAX_TOOL_NAME])


@lru_cache(maxsize=1024)
def _tool_name(name: str) -> str:
    return _INVALID_NAME_CHARS.sub("_", name) or "_"


def cached_json(value: Mapping[str, Any]) -> str:
    """The compact JSON text of flat placeholder arguments or a result (they repeat, so it is cached)."""
    try:
        return _cached_json(tuple(value.items()))
    except TypeError:  # an unhashable value: not worth caching
        return compact_json(value)


@lru_cache(maxsize=4096)
def _cached_json(items: tuple[tuple[str, Any], ...]) -> str:
    return compact_json(dict(items))


def replay_steps(message: Message, message_index: int, options: Options, taken: set[str]) -> list[Step]:
    """The message's replay steps, ready to render.

    Every step text is either empty or holds non-whitespace: a whitespace-only stretch between two
    batches is prepended to the next non-blank text (or appended to the previous one at the end of the
    prose), so no whitespace is lost unless the whole prose is whitespace. Synthetic ids found in
    ``taken`` (ids of the pending state) are renamed deterministically, and renamed ids join ``taken``.
    """
    steps = historical_steps(message, message_index, arguments=options.arguments, id_style=options.id_style)
    texts = _attach_whitespace([step.text for step in steps])
    return [
        Step(
            text,
            tuple(_reserve(call, options.id_style, taken) for call in step.calls) if taken else step.calls,
        )
        for text, step in zip(texts, steps, strict=True)
    ]


def _attach_whitespace(texts: list[str]) -> list[str]:
    out: list[str] = []
    carry = ""
    for text in texts:
        if is_blank(text):
            carry += text
            out.append("")
        else:
            out.append(carry + text)
            carry = ""
    if carry:
        last = max((i for i, text in enumerate(out) if text), default=None)
        if last is not None:
            out[last] += carry
    return out


def _reserve(call: HistoricalCall, id_style: IdStyle, taken: set[str]) -> HistoricalCall:
    if call.id not in taken:
        return call
    candidates = _compact_variants(call.id) if id_style == "compact" else (f"{call.id}_{k}" for k in count(1))
    fresh = next(candidate for candidate in candidates if candidate not in taken)
    taken.add(fresh)
    return replace(call, id=fresh)


def _compact_variants(call_id: str) -> Iterator[str]:
    # Synthetic compact ids start with "h"; a variant never does, so it cannot meet another synthetic id.
    alphabet = string.digits + string.ascii_letters
    for width in range(1, len(call_id)):
        for prefix in product(alphabet, repeat=width):
            if prefix[0] != "h":
                yield "".join(prefix) + call_id[width:]


def list_at(mapping: Mapping[str, Any], key: str) -> list[Any]:
    """``mapping[key]`` when it is a list, else an empty list (request bodies may hold anything)."""
    value = mapping.get(key)
    return value if isinstance(value, list) else []


def missing_names(replayed: Iterable[str], offered: Iterable[str]) -> list[str]:
    """The replayed names not in ``offered``, in order, once each."""
    have = set(offered)
    out: list[str] = []
    for name in replayed:
        if name not in have:
            have.add(name)
            out.append(name)
    return out


_GPT_VERSION = re.compile(r"gpt-(\d+)(?:\.(\d+))?")


def takes_breakpoint(model: str) -> bool:
    """Whether ``model`` takes explicit ``prompt_cache_breakpoint`` markers: GPT-5.6 and later (the
    ``prompt_cache_options`` of the official SDK, openai-python 3.57: "Supported for ``gpt-5.6`` and
    later models")."""
    found = _GPT_VERSION.search(model.lower())
    return found is not None and (int(found[1]), int(found[2] or 0)) >= (5, 6)


def marked_last(item: Item, key: str, kind: str) -> Item | None:
    """A copy of ``item`` with an explicit ``prompt_cache_breakpoint`` (OpenAI, GPT-5.6 and later) on the
    last part of its content under ``key`` (a string content becomes one ``kind`` part), when that part
    is a text part; else ``None``."""
    content = item.get(key)
    parts = [{"type": kind, "text": content}] if isinstance(content, str) else content
    if (
        not isinstance(parts, list)
        or not parts
        or not isinstance(parts[-1], Mapping)
        or "text" not in parts[-1]
    ):
        return None
    return {**item, key: [*parts[:-1], {**parts[-1], "prompt_cache_breakpoint": {"mode": "explicit"}}]}
