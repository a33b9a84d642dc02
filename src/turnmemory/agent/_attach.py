"""``@path`` in a prompt: the mentioned files, attached to that turn's request.

Text files are read up to :data:`MAX_FILE_BYTES` each (and all of them up to :data:`MAX_TOTAL_BYTES`).
Images (PNG, JPEG, GIF, WebP, known by their first bytes, not their names) are attached whole when the
model takes images (:func:`image_support`), each within ``max_image_bytes`` and the provider's own
limit, at most ``max_images`` of them; an image over a limit is not attached at all, and said so. A
file outside the workspace is read only when the read permission grants it (asked, or by a rule).
Each attached file is confirmed with its size; a mention that looks like a path (``@notes.txt``,
``@src/x``) but names no file says so; other mentions (``@someone``) are left as the words they are.

What is attached goes to the model with that turn's requests only. The session keeps the prompt as
typed, and for each image its placeholder (``[image shot.png, 120 KB]``), never its bytes.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from turnmemory.agent.config import AgentConfig
from turnmemory.agent.permissions import Access, Permissions, resolve_path
from turnmemory.agent.tools._base import ToolError, open_regular
from turnmemory.llm import Client, Image
from turnmemory.providers._images import media_type, size_label

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "Attachments",
    "ImageRules",
    "attach_mentions",
    "image_rules",
    "image_support",
    "mentions",
]

MAX_FILE_BYTES = 100_000
MAX_TOTAL_BYTES = 250_000
_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
_TRAILING = ",.;:!?)]}'\""
_SNIFF = 16  # bytes enough to tell every image type apart

# Models known to take no images, by the start of their name (lower case). A model not listed takes
# them on the providers whose models all do (Anthropic's Claude 3 and later, Gemini); on Bedrock only
# the image models listed below do (found anywhere in the model id: region prefixes, ARNs).
_TEXT_ONLY = (
    "gpt-3.5",
    "gpt-4-0",
    "gpt-4-32k",
    "o1-mini",
    "o3-mini",
    "gpt-oss",
    "claude-2",
    "claude-instant",
)
_BEDROCK_IMAGES = ("anthropic.claude-3", "anthropic.claude-sonnet-4", "anthropic.claude-opus-4",
                   "anthropic.claude-haiku-4", "amazon.nova-lite", "amazon.nova-pro", "amazon.nova-premier",
                   "meta.llama3-2-11b", "meta.llama3-2-90b", "meta.llama4", "mistral.pixtral")  # fmt: skip


class _Session(Protocol):
    workspace: str
    permissions: Permissions


@dataclass(frozen=True, slots=True)
class ImageRules:
    """What images a prompt may attach: none when ``refusal`` says why; else at most ``max_count``,
    each of at most ``max_bytes`` and without a ``problem`` for the provider; ``tokens`` of each."""

    refusal: str | None = "images are not attached here"
    max_bytes: int = 0
    max_count: int = 0
    problem: Callable[[Image], str | None] = lambda image: None
    tokens: Callable[[Image], int] = lambda image: 0


@dataclass(frozen=True, slots=True)
class Attachments:
    """What a prompt's ``@path`` mentions attach: the text files' ``text`` and the ``images`` for this
    turn's request, and one note per mention for the user."""

    text: str = ""
    images: tuple[Image, ...] = ()
    notes: list[str] = field(default_factory=list)
    image_tokens: int = 0


def image_support(config: AgentConfig) -> str | None:
    """Why the configured model takes no images, or ``None`` when it does.

    The ``images`` setting decides when given. Otherwise: an OpenAI-compatible server (a ``base_url``
    for ``openai_chat``) is taken to take none, as local servers mostly do not; the models known to be
    text-only take none; on Bedrock only the known image models take them.
    """
    where = f"providers.{config.provider}.images"
    if config.images is not None:
        return None if config.images else f"{config.model} is configured as text-only ({where} = false)"
    model = config.model.lower()
    if config.provider == "openai_chat" and config.base_url is not None:
        return f"an OpenAI-compatible server is taken to take no images (set {where} = true if it does)"
    if model.startswith(_TEXT_ONLY) or model == "gpt-4":
        return f"{config.model} takes no images"
    if config.provider == "bedrock" and not any(known in model for known in _BEDROCK_IMAGES):
        return f"{config.model} is not known to take images (set {where} = true if it does)"
    return None


def image_rules(config: AgentConfig, client: Client) -> ImageRules:
    """The image rules of an agent with ``config`` talking through ``client``."""
    refusal = image_support(config)
    return ImageRules(
        refusal=refusal,
        max_bytes=config.max_image_bytes,
        max_count=config.max_images,
        problem=client.image_problem,
        tokens=lambda image: client.image_tokens([image]),
    )


def mentions(text: str) -> list[str]:
    """The paths ``text`` mentions with ``@``, in order, each once (trailing punctuation dropped)."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        path = match.group(1).rstrip(_TRAILING)
        if path and path not in found:
            found.append(path)
    return found


def attach_mentions(text: str, session: _Session, images: ImageRules | None = None) -> Attachments:
    """What the files ``text`` mentions attach, by ``images`` for images (by default none), and one
    note per file: attached (its size), cut, or not attached and why."""
    rules = images or ImageRules()
    blocks: list[str] = []
    attached: list[Image] = []
    notes: list[str] = []
    room = MAX_TOTAL_BYTES
    tokens = 0
    for raw in mentions(text):
        real, inside = resolve_path(raw, session.workspace)
        try:
            mode = os.stat(real).st_mode
        except OSError as error:
            if "/" in raw or "." in raw:  # else an @handle or a decorator, not a file name
                notes.append(f"@{raw} not attached: {error.strerror or error}")
            continue
        if stat.S_ISDIR(mode):
            notes.append(f"@{raw} is a directory: not attached")
            continue
        if not stat.S_ISREG(mode):
            notes.append(f"@{raw} is not a regular file: not attached")
            continue
        if not inside:
            decision = session.permissions.decide(Access("read", real, outside=True, attachment=True))
            if not decision.allowed:
                notes.append(
                    f"@{raw} not attached: {'denied' if decision.how == 'deny' else decision.reason}"
                )
                continue
        image, note = _read_image(raw, real, rules, len(attached))
        if note is None:
            if room <= 0:
                notes.append(f"@{raw} not attached: the attachments reached {MAX_TOTAL_BYTES:,} bytes")
                continue
            block, note = _read(raw, real, min(MAX_FILE_BYTES, room))
            if block:
                blocks.append(block)
                room -= len(block.encode())
        elif image is not None:
            attached.append(image)
            tokens += rules.tokens(image)
        notes.append(note)
    return Attachments("\n\n".join(blocks), tuple(attached), notes, tokens)


def _read_image(raw: str, real: str, rules: ImageRules, count: int) -> tuple[Image | None, str | None]:
    """The image at ``real`` and its note; no note when the file is not an image (its text is read)."""
    try:
        with open_regular(real, f"@{raw}") as handle:
            kind = media_type(handle.read(_SNIFF))
            if kind is None:
                return None, None
            name = kind.removeprefix("image/").upper()
            if rules.refusal is not None:
                return None, f"@{raw} is a {name} image, not attached: {rules.refusal}"
            if count >= rules.max_count:
                most = f"{rules.max_count} image{'s' if rules.max_count != 1 else ''}"
                return None, f"@{raw} not attached: a prompt attaches at most {most} (max_images)"
            size = os.fstat(handle.fileno()).st_size
            if size > rules.max_bytes:
                return None, (
                    f"@{raw} not attached: the image has {size_label(size)}, more than the "
                    f"{size_label(rules.max_bytes)} an image may have (max_image_bytes)"
                )
            handle.seek(0)
            data = handle.read(rules.max_bytes + 1)
    except ToolError as error:
        return None, f"@{raw} not attached: {error}"
    image = Image.of(os.path.basename(raw), data)
    if image is None or len(data) > rules.max_bytes:  # the file changed while it was read
        return None, f"@{raw} not attached: it changed while it was read"
    problem = rules.problem(image)
    if problem is not None:
        return None, f"@{raw} not attached: {problem}"
    shape = f" {image.width}x{image.height}" if image.width and image.height else ""
    return image, f"@{raw} attached ({name}{shape}, {size_label(len(data))}, ~{rules.tokens(image):,} tokens)"


def _read(raw: str, real: str, limit: int) -> tuple[str, str]:
    try:
        with open_regular(real, f"@{raw}") as handle:
            data = handle.read(limit + 1)
            size = os.fstat(handle.fileno()).st_size
    except ToolError as error:
        return "", f"@{raw} not attached: {error}"
    if b"\0" in data[:8192]:
        return "", f"@{raw} looks binary and is not a PNG, JPEG, GIF or WebP image: not attached"
    note = f"@{raw} attached ({len(data):,} bytes)"
    if len(data) > limit:
        data = data[:limit]
        note = f"@{raw}: attached its first {limit:,} of {size:,} bytes"
    text = data.decode("utf-8", "replace")
    return f'<file path="{raw}">\n{text}\n</file>', note
