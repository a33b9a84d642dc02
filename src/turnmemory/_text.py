"""Text bounds and encodings shared by every layer: retained fields, one-line messages, compact JSON.

Every string that enters a TurnMemory passes through :func:`bound_text`, whether it comes from a
finished tool call or from a persisted record, so a hostile session file cannot smuggle a secret or a
bulky value into a provider request. The redactor itself is :mod:`turnmemory.redaction`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from turnmemory.redaction import CONTINUATION, REDACTED, generation, redact

__all__ = [
    "MAX_FIELD_BYTES",
    "bound_text",
    "compact_json",
    "cut_utf8",
    "is_unicode",
    "one_line",
    "redact_prefix",
    "terminal_safe",
]

MAX_FIELD_BYTES = 256
"""The largest UTF-8 size of any retained string field."""

_ELLIPSIS = "..."
_RAW_CHARS = 1 << 20  # longer inputs are cut (on a word boundary) before anything else
_SCAN_CHARS = 65536  # after whitespace is collapsed: only the first 256 bytes can survive anyway
_TOKEN_CHARS = 1024  # the longest token a cut inside a word may have split
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_WORD = re.compile(r"\S*")
# What a terminal acts on instead of printing: C0 (but tab and newline), DEL, C1 (U+0080-U+009F, where
# U+009B is a one-character CSI), the bidirectional overrides and isolates that reorder what is shown,
# and lone surrogates (which no terminal can be sent).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def is_unicode(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 (it holds no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def terminal_safe(text: str) -> str:
    """``text`` made safe to print: every character a terminal would act on is shown as a visible escape.

    Escape sequences (ESC, and the C1 CSI U+009B), carriage returns, backspaces, bells and the bidi
    controls become ``\\x1b``-style text, so a hostile model, tool or repository cannot retitle the
    window, write the clipboard, hide or reorder text, or clear the screen. Tabs, newlines and every
    printable character (any script, emoji) are kept as they are.
    """
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def cut_utf8(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding is at most ``limit`` bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def bound_text(text: str, limit: int = MAX_FIELD_BYTES) -> str:
    """Make ``text`` fit a retained field: secrets redacted, whitespace collapsed, at most ``limit`` bytes.

    Control characters are dropped, line continuations joined and whitespace collapsed first (so
    that none of them can split a secret; line breaks are kept until the text is redacted, so the
    redactor reads its lines as it does everywhere else), then long text is cut on a word boundary,
    redacted, and cut to ``limit`` bytes on a character boundary, ending in ``...``. The result may be
    empty.
    """
    if len(text) <= _CACHED_CHARS:
        return _bound_short(text, limit, generation())
    return _bound(text, limit)


_CACHED_CHARS = 1024  # targets repeat (the same paths and commands), so short ones are memoized


@lru_cache(maxsize=8192)
def _bound_short(text: str, limit: int, rules: int) -> str:
    return _bound(text, limit)


def _bound(text: str, limit: int) -> str:
    text, raw_split = _window(text, _RAW_CHARS)
    text = _collapse(_CONTROL.sub("", text))
    text, split = _window(text, _SCAN_CHARS)
    text = _redact_window(text, split or raw_split).replace("\n", " ")
    if len(text.encode("utf-8")) <= limit:
        return text
    return cut_utf8(text, limit - len(_ELLIPSIS)) + _ELLIPSIS


def _collapse(text: str) -> str:
    """``text`` with continuations joined and each run of whitespace made one space, or one line
    break where the run holds one."""
    lines = CONTINUATION.sub(r"\1", text).split("\n")
    return "\n".join(filter(None, (" ".join(line.split()) for line in lines)))


def redact_prefix(text: str, chars: int) -> str:
    """The redacted start of ``text``: about ``chars`` characters, cut where no secret can be split.

    For previews that keep the text's lines; bound the result's size afterwards.
    """
    window, split = _window(text, chars)
    return _redact_window(window, split)


def _window(text: str, chars: int) -> tuple[str, bool]:
    """At most ``chars`` characters of ``text``, cut at whitespace; ``True`` when a word had to be split."""
    if len(text) <= chars or text[chars].isspace():
        return text[:chars], False
    head = text[:chars]
    last_word = _WORD.match(head[::-1])
    length = last_word.end() if last_word else 0
    if length < len(head):
        return head[: len(head) - length - 1], False
    return head, True


def _redact_window(window: str, split: bool) -> str:
    """Redact ``window``; if its last word was split, drop what may be the fragment of a secret."""
    redacted = redact(window)
    if not split:
        return redacted
    tail = window[-_TOKEN_CHARS:]
    if redacted.endswith(tail):
        return redacted[: len(redacted) - len(tail)]
    last = redacted.rfind(REDACTED)
    return redacted[: last + len(REDACTED)] if last >= 0 else ""


def one_line(text: str, limit: int = 500) -> str:
    """``text`` with whitespace collapsed to single spaces, cut to ``limit`` characters (ending ``...``)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def compact_json(value: Any) -> str:
    """``value`` as compact JSON text: no spaces, non-ASCII kept, anything JSON cannot hold as its ``str``.

    The one encoding of arguments, results and requests wherever their text is sent, stored or measured.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
