"""terminal_safe: nothing a terminal acts on survives, everything printable does."""

from __future__ import annotations

import json
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from turnmemory._text import terminal_json, terminal_safe

ATTACKS = [
    "\x1b]0;pwned\x07",  # window title (OSC 0)
    "\x1b]52;c;ZWNobyBoaQ==\x07",  # clipboard write (OSC 52)
    "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",  # a hyperlink whose target is hidden
    "\x1b[8mhidden\x1b[0m",  # concealed text
    "\x1b[2J\x1b[H",  # clear screen, cursor home
    "\x1b[1A\x1b[2Kreplaced",  # cursor up, erase the line above
    "\x1bPq#0;2;0;0;0\x1b\\",  # DCS (sixel)
    "\x1b_payload\x1b\\",  # APC
    "\x9b2J",  # C1 CSI: the same in one character
    "\x9d0;title\x9c",  # C1 OSC ... ST
    "\x90payload\x9c",  # C1 DCS
    "abc\rXYZ",  # carriage return overwrites the line
    "abc\x08\x08\x08XYZ",  # backspaces
    "\u202egnp.exe",  # right-to-left override
    "\u2066isolate\u2069",
    "\x00\x7f",
    "\ud83d",  # a lone surrogate: no terminal can be sent it
]


def _acts(char: str, *, multiline: bool = True) -> bool:
    code = ord(char)
    if multiline and char in "\t\n":
        return False
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or unicodedata.category(char) in ("Cs",)
        or char in ("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    )


def test_each_attack_is_shown_not_acted_on() -> None:
    for attack in ATTACKS:
        for multiline in (True, False):
            shown = terminal_safe(attack, multiline=multiline)
            assert not any(_acts(char) for char in shown), repr(shown)
            assert "\\x" in shown or "\\u" in shown or "\\r" in shown
            shown.encode("utf-8")  # printable on any UTF-8 terminal


def test_escapes_are_readable() -> None:
    assert terminal_safe("\x1b[8mhidden") == "\\x1b[8mhidden"
    assert terminal_safe("a\rb\x9bc\u202ed") == "a\\rb\\x9bc\\u202ed"
    assert terminal_safe("one\ntwo\tthree", multiline=False) == "one\\ntwo\\tthree"


def test_ordinary_text_is_unchanged() -> None:
    for text in [
        "plain",
        "tabs\tand\nnewlines",
        "é ü ß 日本語 Ελληνικά עברית العربية",
        "emoji 😀 👩‍💻 🏳️‍🌈",
        "\\x1b typed",
        "[bold]not markup[/]",
    ]:
        assert terminal_safe(text) == text
        assert terminal_safe(text, multiline=False) == text.replace("\t", "\\t").replace("\n", "\\n")


@given(st.text(), st.booleans())
def test_nothing_a_terminal_acts_on_survives(text: str, multiline: bool) -> None:
    shown = terminal_safe(text, multiline=multiline)
    assert not any(_acts(char, multiline=multiline) for char in shown)
    assert terminal_safe(shown, multiline=multiline) == shown
    kept = [char for char in text if not _acts(char, multiline=multiline)]
    assert all(char in shown for char in kept)


@given(st.lists(st.text(), max_size=6))
def test_text_made_safe_chunk_by_chunk_is_the_text_made_safe(chunks: list[str]) -> None:
    assert "".join(map(terminal_safe, chunks)) == terminal_safe("".join(chunks))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_JSON, st.sampled_from([None, 2]))
def test_terminal_json_is_the_same_value_and_safe(value: object, indent: int | None) -> None:
    dumped = terminal_json(value, indent=indent)
    assert json.loads(dumped) == value
    assert not any(_acts(char) for char in dumped)
    if indent is None:
        assert "\n" not in dumped
