"""Images a user attaches to a turn: what they are (by their magic bytes), how large, what they cost.

An :class:`Image` is the user's input for one turn: each wire module renders it as its own image part
of that turn's user message (``with_images``), base64 in the JSON body. Nothing here keeps an image
beyond that request; :meth:`Image.placeholder` is what a history may say of it instead.

The media types are detected from the first bytes, never from the file name (PNG, JPEG, GIF and WebP,
the types every wire that takes images shares, less GIF for Gemini). Width and height are read from the
header so that each provider's own formula (:func:`claude_tokens`, :func:`openai_tokens`, :func:`gemini_tokens`) applies.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MEDIA_TYPES",
    "Image",
    "claude_tokens",
    "data_url_problems",
    "gemini_tokens",
    "image_problems",
    "media_type",
    "openai_tokens",
    "size_label",
    "with_parts",
]

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The media types an image may have, as detected by :func:`media_type`."""

_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # SOF0..SOF15 but DHT, JPG, DAC


def media_type(data: bytes) -> str | None:
    """The media type of ``data`` by its magic bytes (one of :data:`MEDIA_TYPES`), or ``None``."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _dimensions(data: bytes, kind: str) -> tuple[int, int] | None:
    """Width and height from the header of an image of media type ``kind``; ``None`` if unreadable."""
    try:
        if kind == "image/png" and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
        elif kind == "image/gif":
            width, height = struct.unpack("<HH", data[6:10])
        elif kind == "image/webp":
            chunk = data[12:16]
            if chunk == b"VP8 ":
                width, height = (v & 0x3FFF for v in struct.unpack("<HH", data[26:30]))
            elif chunk == b"VP8L":
                bits = int.from_bytes(data[21:25], "little")
                width, height = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            elif chunk == b"VP8X":
                width = int.from_bytes(data[24:27], "little") + 1
                height = int.from_bytes(data[27:30], "little") + 1
            else:
                return None
        elif kind == "image/jpeg":
            return _jpeg_dimensions(data)
        else:
            return None
    except struct.error:
        return None
    return (width, height) if width > 0 and height > 0 else None


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return (width, height) if width > 0 and height > 0 else None
        at += 2 + length
    return None


@dataclass(frozen=True, slots=True)
class Image:
    """An image for one turn's user message: its ``data``, detected ``media_type`` and the ``name`` the
    user gave it (shown, never sent). Make one with :meth:`of`."""

    name: str
    data: bytes
    media_type: str
    width: int | None = None
    height: int | None = None

    @classmethod
    def of(cls, name: str, data: bytes) -> Image | None:
        """The image ``data`` holds, or ``None`` when its magic bytes are not those of an image."""
        kind = media_type(data)
        if kind is None:
            return None
        width, height = _dimensions(data, kind) or (None, None)
        return cls(name, data, kind, width, height)

    @property
    def base64(self) -> str:
        """The data, base64-encoded (what every wire's JSON body carries)."""
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """The data as a ``data:`` URL (OpenAI's image parts)."""
        return f"data:{self.media_type};base64,{self.base64}"

    def placeholder(self) -> str:
        """What a history keeps of this image: its name and size, never its bytes."""
        return f"[image {self.name}, {size_label(len(self.data))}]"


def size_label(size: int) -> str:
    """``size`` bytes as people read it: ``512 bytes``, ``120 KB``, ``4.8 MB``."""
    if size < 1000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1000:.0f} KB"
    return f"{size / 1_000_000:.1f} MB"


_UNKNOWN_SIDE = 1568
"""The side assumed for an image whose header gives no size (Anthropic's largest unscaled edge)."""


def _sides(image: Image) -> tuple[float, float]:
    return float(image.width or _UNKNOWN_SIDE), float(image.height or _UNKNOWN_SIDE)


def claude_tokens(image: Image) -> int:
    """Claude's input tokens for ``image``: ``width * height / 750`` after scaling it down until its long
    edge is at most 1568 px and it costs at most about 1,600 tokens (1.2 megapixels)
    (https://docs.claude.com/en/docs/build-with-claude/vision#calculate-image-costs). An image whose
    header gives no size counts as a 1568 px square."""
    width, height = _sides(image)
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_200_000 / (width * height)))
    return max(1, math.ceil(width * scale * height * scale / 750))


def openai_tokens(image: Image) -> int:
    """OpenAI's input tokens for ``image`` at ``detail`` ``auto`` counted as ``high``: fit in 2048 x 2048,
    the shortest side to 768, then 170 per 512 px tile plus 85
    (https://platform.openai.com/docs/guides/images-vision#calculating-costs)."""
    width, height = _sides(image)
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    return 85 + 170 * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


def gemini_tokens(image: Image) -> int:
    """Gemini's input tokens for ``image``: 258 when both sides are at most 384 px, else 258 per
    768 x 768 tile (https://ai.google.dev/gemini-api/docs/tokens#multimodal-tokens)."""
    width, height = _sides(image)
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def with_parts(
    message: Mapping[str, Any],
    key: str,
    text: Callable[[str], dict[str, Any]],
    parts: Iterable[dict[str, Any]],
) -> dict[str, Any]:
    """A copy of the user ``message`` with ``parts`` before the last part under ``key``, its prompt's
    text (a string content first becomes its ``text`` part): after the results a message may open
    with, and before the text, as Anthropic advises for images
    (https://docs.claude.com/en/docs/build-with-claude/vision#evaluate-image-size); a cache marker on
    the text then covers them."""
    content = message.get(key)
    head = [text(content)] if isinstance(content, str) else list(content or ())
    return {**message, key: [*head[:-1], *parts, *head[-1:]]}


def image_problems(
    where: str, kind: object, data: object, types: tuple[str, ...], limit: int, *, urlsafe: bool = False
) -> list[str]:
    """The problems of an image part at ``where`` declaring media type ``kind`` with base64 ``data``: a
    type outside ``types``, data that is not base64, bytes that are not an image of the declared type,
    or more than ``limit`` bytes decoded. ``urlsafe`` also accepts the URL-safe alphabet without padding
    (protobuf's JSON form of bytes, which Gemini reads and its SDK writes)."""
    if kind not in types:
        return [f"{where}: media type {kind!r} is not one of {', '.join(types)}"]
    if not isinstance(data, str) or not data:
        return [f"{where}: image data must be a non-empty base64 string"]
    if urlsafe:
        data = data.replace("-", "+").replace("_", "/") + "=" * (-len(data) % 4)
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return [f"{where}: image data is not valid base64"]
    out: list[str] = []
    found = media_type(raw)
    if found != kind:
        out.append(f"{where}: the data is {found or 'not an image'}, not the declared {kind}")
    if len(raw) > limit:
        out.append(f"{where}: the image has {len(raw):,} bytes, more than the {limit:,} allowed")
    return out


def data_url_problems(where: str, url: object, types: tuple[str, ...], limit: int) -> list[str]:
    """The problems of an image given as ``url``: a ``data:<type>;base64,<data>`` URL is checked as
    :func:`image_problems` does; an ``http(s)`` URL is the provider's to fetch."""
    if not isinstance(url, str):
        return [f"{where}: the image URL must be a string"]
    if url.startswith(("https://", "http://")):
        return []
    head, comma, data = url.partition(",")
    if not url.startswith("data:") or not comma or not head.endswith(";base64"):
        return [f"{where}: the image URL must be https or data:<media type>;base64,<data>"]
    return image_problems(where, head[5:-7], data, types, limit)
