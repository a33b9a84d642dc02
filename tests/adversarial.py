"""Adversarial inputs for the redactor: what makes a regular expression rescan its input.

A rule can only be slow where it finds many starts whose scans overlap, so each rule is fed
repetitions of its own literals (alone, and followed by the separators its names and values meet),
repetitions of separators and of the character classes tokens are made of, and random text; the
whole redactor is fed the shapes that were slow before.
Shared by the complexity tests and ``benchmarks/redaction.py``.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable

from turnmemory.redaction import SecretRule

__all__ = [
    "ISSUE_SHAPES",
    "SEPARATORS",
    "UNITS",
    "Shape",
    "literals",
    "random_base64",
    "repeat",
    "rule_shapes",
    "shared_shapes",
]

Shape = Callable[[int], str]
"""An input of any size: ``shape(size)`` is a string of ``size`` characters."""

SEPARATORS = ("=", ": ", " ", "-", ".", "\\", "'", "\n")
"""What follows a literal: assignment, key/value and flag separators, path and escape characters."""
UNITS = ("=", ":", "/", "\\", '"', "@", "%41", "\\u0041", "a", "A1", "0f", "+/", "_-", "\u200b", "\u0430")
"""Separators and character classes repeated alone (behind the rule's literals)."""
MAX_LITERALS = 2


def repeat(unit: str, prefix: str = "") -> Shape:
    """``prefix`` then ``unit`` again and again, cut to the size."""

    def shape(size: int) -> str:
        body = unit * (size // max(1, len(unit)) + 1)
        return (prefix + body)[:size]

    return shape


def random_base64(prefix: str = "key ") -> Shape:
    """``prefix`` then random base64 (the same for every size that fits it)."""
    alphabet = string.ascii_letters + string.digits + "+/"

    def shape(size: int) -> str:
        rng = random.Random(size)
        return (prefix + "".join(rng.choice(alphabet) for _ in range(size)))[:size]

    return shape


ISSUE_SHAPES: dict[str, Shape] = {
    "key= repeated": repeat("key="),
    "--token= repeated": repeat("--token="),
    "password= repeated": repeat("password="),
    "backslashes, no terminator": repeat("\\"),
    "curl repeated": repeat("curl "),
    "login repeated": repeat("login "),
    "eyJ repeated": repeat("eyJ"),
    "URLs on one minified line": repeat("https://a.example/v1/x?token=ab&u=https://b.example/"),
    "random base64, a hint word first": random_base64("key "),
}
"""The inputs on which the redactor was quadratic or worse, by name."""


def literals(rule: SecretRule) -> list[str]:
    """The literals a rule looks for (at most :data:`MAX_LITERALS`): its hints, as written in its
    pattern where they occur there."""
    found: list[str] = []
    source = rule.pattern.pattern.replace("\\", "")
    for hint in rule.hints[:MAX_LITERALS]:
        written = re.search(re.escape(hint), source, re.IGNORECASE)
        forms = (written.group(),) if written else (hint,)
        found.extend(form for form in forms if form not in found)
    return found


def rule_shapes(rule: SecretRule) -> dict[str, Shape]:
    """The adversarial inputs made of one rule's literals, by name (:data:`UNITS` and random text
    are the same for every rule: :func:`shared_shapes`)."""
    words = literals(rule)
    units = [
        *words,
        *(word + separator for word in words for separator in SEPARATORS),
        *(f"-{w} " for w in words),
    ]
    return {f"{unit!r} repeated": repeat(unit, " ".join(words) + " ") for unit in dict.fromkeys(units)}


def shared_shapes() -> dict[str, Shape]:
    """The adversarial inputs every rule meets: separators and character classes repeated, random base64."""
    return {**{f"{unit!r} repeated": repeat(unit) for unit in UNITS}, "random base64": random_base64()}
