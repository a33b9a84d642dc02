"""The redactor is linear in its input, rule by rule and as a whole.

CPU time is measured in one run on adversarial inputs (``tests/adversarial.py``: repetitions of each
rule's literals, separators and character classes behind those literals, the shapes that were
quadratic, random base64) at growing sizes; from one size to ten times it, the time may grow at most
:data:`BOUND` times (linear is 10, quadratic 100). Never an absolute time.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.adversarial import (
    ISSUE_SHAPES,
    SEPARATORS,
    UNITS,
    Shape,
    literals,
    repeat,
    rule_shapes,
    shared_shapes,
)

from turnmemory import TurnRecorder, redaction
from turnmemory.redaction import REDACTED, SecretRule, redact

SMALL, LARGE, HUGE = 10_000, 100_000, 1_000_000
SIZES = (SMALL, LARGE)
BOUND = 30
"""How much more CPU time ten times the input may take (generous for a shared machine's noise)."""
BUILTIN = redaction.rules()


def cpu(work: Callable[[], object], repeat: int) -> float:
    """The least CPU time of ``repeat`` runs of ``work``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def superlinear(measure: Callable[[int], Callable[[], object]], sizes: tuple[int, ...]) -> list[float]:
    """The growth factors from each size to the next, where one exceeds :data:`BOUND` (measured twice,
    so that one moment of load on the machine does not count); empty when the growth is linear."""
    for _ in range(2):
        works = [measure(size) for size in sizes]
        times = [
            cpu(work, 3 if size <= SMALL else 2 if size <= LARGE else 1)
            for size, work in zip(sizes, works, strict=True)
        ]
        factors = [later / max(earlier, 1e-9) for earlier, later in itertools.pairwise(times)]
        if max(factors) <= BOUND:
            return []
    return factors


def rule_on(rule: SecretRule, shape: Shape) -> Callable[[int], Callable[[], object]]:
    """The work of one rule alone on ``shape`` at a size (the view built beforehand)."""

    def measure(size: int) -> Callable[[], object]:
        view = redaction._view(shape(size))
        return lambda: list(redaction._matches(rule, view))

    return measure


@pytest.mark.parametrize("index", range(len(BUILTIN)), ids=[f"rule{i}" for i in range(len(BUILTIN))])
def test_every_rule_is_linear_on_repetitions_of_its_literals(index: int) -> None:
    rule = BUILTIN[index]
    shapes = rule_shapes(rule)
    slow = {
        name: factors
        for name, shape in shapes.items()
        if (factors := superlinear(rule_on(rule, shape), SIZES))
    }
    assert slow == {}, rule.pattern.pattern


@pytest.mark.parametrize("name", shared_shapes())
def test_every_rule_is_linear_on_separators_classes_and_random_text(name: str) -> None:
    shape = shared_shapes()[name]
    views = {size: redaction._view(shape(size)) for size in SIZES}
    slow = {
        rule.pattern.pattern: factors
        for rule in BUILTIN
        if (
            factors := superlinear(
                lambda size, rule=rule: lambda: list(redaction._matches(rule, views[size])), SIZES
            )
        )
    }
    assert slow == {}


@pytest.mark.parametrize("name", ISSUE_SHAPES)
def test_the_redactor_is_linear_on_the_shapes_that_were_quadratic(name: str) -> None:
    shape = ISSUE_SHAPES[name]
    assert superlinear(lambda size: lambda: redact(shape(size)), (SMALL, LARGE, HUGE)) == []


@pytest.mark.parametrize(
    "unit", ["%41", "\\u0041", "\\x41", "\u200b", "\u0430", "\uff21", "\\\\\n", "\\\\\\n", "\\"]
)
def test_the_view_is_linear_on_text_it_rewrites_everywhere(unit: str) -> None:
    shape = repeat(unit)
    assert superlinear(lambda size: lambda: redaction._view(shape(size)), (SMALL, LARGE, HUGE)) == []


HOSTILE_CALLS: dict[str, tuple[str, str, Callable[[str], dict[str, object]]]] = {
    "read_file path of key=": ("read_file", "key=", lambda text: {"path": text}),
    "bash command of password=": ("bash", "password=", lambda text: {"command": text}),
    "web_fetch URL of eyJ": ("web_fetch", "eyJ", lambda text: {"url": "https://example.com/" + text}),
    "grep pattern and path of --token=": ("grep", "--token=", lambda text: {"pattern": text, "path": text}),
    "edit_file changing a file of login": ("edit_file", "login ", lambda text: {"path": text}),
}
"""A tool call whose argument is a repetition: (tool, the repeated unit, its arguments)."""


@pytest.mark.parametrize("name", HOSTILE_CALLS)
def test_finishing_a_turn_is_linear_in_a_hostile_argument(name: str) -> None:
    tool, unit, arguments_of = HOSTILE_CALLS[name]

    def measure(size: int) -> Callable[[], object]:
        arguments = arguments_of(repeat(unit)(size))

        def finish() -> object:
            recorder = TurnRecorder(workspace="/repo")
            recorder.tool_start("call_1", tool, arguments)
            recorder.tool_end("call_1", output={"exit_code": 1, "file_changed": arguments.get("path")})
            return recorder.finish()

        return finish

    assert superlinear(measure, (SMALL, LARGE, HUGE)) == []


def test_a_registered_literal_secret_stays_linear() -> None:
    value = "s3cr3t-Value/with+re.chars"
    redaction.register(re.escape(value))
    assert redact(f"x {value} y") == f"x {REDACTED} y"
    shape = repeat(value[:-1] + " ")
    assert superlinear(lambda size: lambda: redact(shape(size)), (SMALL, LARGE)) == []


ALL_LITERALS = sorted({literal for rule in BUILTIN for literal in literals(rule)})
pieces = st.one_of(
    st.sampled_from(ALL_LITERALS),
    st.sampled_from([*SEPARATORS, *UNITS]),
    st.text("aA0_-+/=:.@%\\\"' \n", min_size=1, max_size=4),
)
units = st.lists(pieces, min_size=1, max_size=3).map("".join)
"""Repeated units: a rule's literal, a separator or a character class, or a few of them together."""


@settings(max_examples=12, deadline=None)
@given(units, st.sampled_from(ALL_LITERALS))
def test_repetitions_of_any_unit_cost_linear_time(unit: str, literal: str) -> None:
    shape = repeat(unit, literal + " ")
    assert superlinear(lambda size: lambda: redact(shape(size)), (SMALL // 2, LARGE // 2)) == []


@settings(max_examples=200, deadline=None)
@given(units, st.integers(1, 400), st.sampled_from(ALL_LITERALS))
def test_redacting_repetitions_is_idempotent_and_adds_nothing_but_placeholders(
    unit: str, count: int, literal: str
) -> None:
    text = literal + " " + unit * count
    once = redact(text)
    assert redact(once) == once
    assert is_subsequence(once.replace(REDACTED, ""), text)


def is_subsequence(part: str, whole: str) -> bool:
    """Whether ``part`` is ``whole`` with some characters left out."""
    letters = iter(whole)
    return all(char in letters for char in part)
