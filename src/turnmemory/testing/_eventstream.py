"""AWS event-stream framing (``application/vnd.amazon.eventstream``), as Bedrock streams it.

A message is ``total_len(u32) headers_len(u32) prelude_crc32(u32) | headers | payload |
message_crc32(u32)``, big-endian; each header here is a string header: ``name_len(u8) name
type(u8)=7 value_len(u16) value``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import Any

from turnmemory._text import compact_json

__all__ = ["CONTENT_TYPE", "encode_message", "event_message", "exception_message"]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", _STRING, len(raw_value)) + raw_value
    )


def encode_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One framed message with string headers and both CRC32 checksums."""
    raw_headers = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + raw_headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _json(payload: Mapping[str, Any]) -> bytes:
    return compact_json(payload).encode()


def event_message(event_type: str, payload: Mapping[str, Any]) -> bytes:
    """An ``event`` message carrying a JSON payload."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, _json(payload))


def exception_message(exception_type: str, payload: Mapping[str, Any]) -> bytes:
    """An ``exception`` message (a modeled service error inside the stream)."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, _json(payload))
