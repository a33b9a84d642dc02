"""terminal_safe: nothing a terminal acts on survives, everything printable does."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from turnmemory._text import terminal_safe

ATTACKS = [
    "\x1b]0;pwned\x07",  # window title (OSC 0)
    "\x1b]52;c;ZWNobyBoaQ==\x07",  # clipboard write (OSC 52)
    "\x1b[8mhidden\x1b[0m",  # concealed text
    "\x1b[2J\x1b[H",  # clear screen, cursor home
    "\x9b2J",  # C1 CSI: the same in one character
    "\x9d0;title\x9c",  # C1 OSC ... ST
    "abc\rXYZ",  # carriage return overwrites the line
    "abc\x08\x08\x08XYZ",  # backspaces
    "\u202egnp.exe",  # right-to-left override
    "\u2066isolate\u2069",
    "\x00\x7f",
]


def _acts(char: str) -> bool:
    code = ord(char)
    if char in "\t\n":
        return False
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or unicodedata.category(char) in ("Cs",)
        or char in ("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    )


def test_each_attack_is_shown_not_acted_on() -> None:
    for attack in ATTACKS:
        shown = terminal_safe(attack)
        assert not any(_acts(char) for char in shown), repr(shown)
        assert "\\x" in shown or "\\u" in shown


def test_ordinary_text_is_unchanged() -> None:
    for text in [
        "plain",
        "tabs\tand\nnewlines",
        "é ü ß 日本語 Ελληνικά עברית",
        "emoji 😀 👩‍💻",
        "\\x1b typed",
    ]:
        assert terminal_safe(text) == text


@given(st.text())
def test_nothing_a_terminal_acts_on_survives(text: str) -> None:
    shown = terminal_safe(text)
    assert not any(_acts(char) for char in shown)
    assert terminal_safe(shown) == shown
    kept = [char for char in text if not _acts(char)]
    assert all(char in shown for char in kept)
