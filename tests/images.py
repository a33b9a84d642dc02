"""Tiny images made in the test, one per format the agent attaches (never files from elsewhere)."""

from __future__ import annotations

import struct
import zlib

__all__ = ["gif", "jpeg", "png", "webp"]


def png(width: int = 4, height: int = 3) -> bytes:
    """A valid PNG of ``width`` x ``height`` black pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"\0\0\0" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def gif(width: int = 4, height: int = 3) -> bytes:
    """A GIF89a of ``width`` x ``height`` in one colour (a two-entry palette, one LZW-coded image)."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + screen + image + b"\x3b"


def jpeg(width: int = 4, height: int = 3) -> bytes:
    """The header of a baseline JPEG of ``width`` x ``height`` (JFIF, then the frame): what the agent
    reads of a JPEG (the type and the size), not a decodable picture."""
    jfif = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"
    frame = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + jfif + frame + b"\xff\xd9"


def webp(width: int = 4, height: int = 3, kind: bytes = b"VP8L") -> bytes:
    """The header of a WebP of ``width`` x ``height`` in chunk ``kind`` (``VP8L``, ``VP8X`` or ``VP8 ``)."""
    if kind == b"VP8L":
        body = b"\x2f" + ((width - 1) | (height - 1) << 14).to_bytes(4, "little")
    elif kind == b"VP8X":
        body = b"\0" * 4 + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    else:
        body = b"\0\0\0\x9d\x01\x2a" + struct.pack("<HH", width, height)
    chunk = kind + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk
