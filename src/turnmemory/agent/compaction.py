"""Session compaction: when the retained history nears the context window, its oldest turns make way.

TurnMemory keeps a session's history small (user text, assistant prose and compact memory), but a
long session still grows. Before each turn the agent estimates the first request (system prompt,
tools, history, pending state, the new prompt); past :data:`TRIGGER` of the client's budget, the
oldest whole turns are replaced by one user message that begins with :data:`MARKER`:

- ``summary`` (the default): the model writes a summary of those turns in a plain request without
  tools, through a client of the same provider and model;
- ``drop``: a marker that says how many turns were dropped;
- ``off``: nothing happens (a turn that no longer fits ends with ``context_overflow``).

Enough turns go to bring the history down to :data:`TARGET` of the budget, so compaction is rare
(each one changes the cached prefix); the latest turn stays unless the request would not fit even
without the others (a turn whose own prose outgrew the window). A :class:`Compaction` is stored
as a ``compaction`` session event, and loading applies it at the same point of the conversation, so
a resumed session sends exactly the requests the live one would have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from turnmemory.memory import Message

__all__ = [
    "COMPACTION_MODES",
    "MARKER",
    "SUMMARY_PROMPT",
    "TARGET",
    "TRIGGER",
    "Compaction",
    "CompactionMode",
    "cut_point",
    "far_from_window",
    "make_way",
    "marker",
    "summary_request",
    "summary_words",
]

CompactionMode = Literal["summary", "drop", "off"]
"""How the oldest turns make way (see the module docstring)."""

COMPACTION_MODES: tuple[CompactionMode, ...] = ("summary", "drop", "off")

TRIGGER = 0.75
"""Compaction starts when the first request of a turn needs more than this share of the budget."""

TARGET = 0.4
"""It removes the oldest turns until the request would need at most this share of the budget."""

MARKER = "[Earlier conversation compacted"
"""How the message that stands for compacted turns begins."""

SUMMARY_PROMPT = (
    "Summarize the conversation above for your own later use: the user's goals and requests, decisions "
    "made, files created or changed, commands that failed, what is done and what remains open. Write "
    "at most {words} words of plain prose. Do not call tools."
)
"""The prompt of a summary request; ``{words}`` is filled in from the budget."""

_SUMMARY_SYSTEM = "You write faithful, compact summaries of coding sessions."


@dataclass(frozen=True, slots=True)
class Compaction:
    """The first ``replaces`` messages of a conversation (``turns`` user turns) became one user
    message, ``content``; ``freed`` is the estimated tokens it saved."""

    replaces: int
    content: str
    mode: Literal["summary", "drop"]
    turns: int
    freed: int = 0

    def apply(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with the compacted ones replaced; ``ValueError`` when there are too few."""
        if self.replaces > len(messages):
            raise ValueError(
                f"compaction.replaces: {self.replaces} messages, but the conversation has {len(messages)}"
            )
        return [Message(role="user", content=self.content), *messages[self.replaces :]]

    def to_dict(self) -> dict[str, Any]:
        """The stored form."""
        return {
            "replaces": self.replaces,
            "mode": self.mode,
            "turns": self.turns,
            "freed": self.freed,
            "content": self.content,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Compaction:
        """Read the stored form; ``ValueError`` naming the field when it is malformed."""
        replaces, turns, freed = data.get("replaces"), data.get("turns"), data.get("freed", 0)
        for name, value, least in (("replaces", replaces, 1), ("turns", turns, 1), ("freed", freed, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"compaction.{name}: expected an integer of at least {least}")
        content, mode = data.get("content"), data.get("mode")
        if not isinstance(content, str) or not content.startswith(MARKER):
            raise ValueError(f"compaction.content: expected text starting with {MARKER!r}")
        if mode not in ("summary", "drop"):
            raise ValueError("compaction.mode: expected summary or drop")
        assert isinstance(replaces, int) and isinstance(turns, int) and isinstance(freed, int)
        return cls(replaces=replaces, content=content, mode=mode, turns=turns, freed=freed)


def cut_point(
    messages: Sequence[Message], sizes: Sequence[int], excess: int, *, keep: int = 1, limit: int | None = None
) -> int:
    """How many leading messages to compact: the fewest whole turns whose ``sizes`` (estimated
    tokens, one per message) add up to ``excess``, keeping the last ``keep`` user turns (``0``: the
    whole conversation may go) and never passing index ``limit``. 0 when there is nothing to compact.

    Turns start at user messages, so the retained conversation starts with one too. When even all
    eligible turns are not enough, all of them go.
    """
    bounds = [index for index, message in enumerate(messages) if message.role == "user" and index > 0]
    bounds.append(len(messages))
    eligible = bounds[: max(len(bounds) - keep, 0)]
    if limit is not None:
        eligible = [index for index in eligible if index <= limit]
    freed = 0
    cut = 0
    for start in eligible:
        freed += sum(sizes[cut:start])
        cut = start
        if freed >= excess:
            break
    return cut


def far_from_window(tokens: int, budget: int) -> bool:
    """Whether a turn's first request of ``tokens`` (an estimate, or a bound above it) leaves
    compaction out: at most :data:`TRIGGER` of the ``budget``."""
    return tokens <= TRIGGER * budget


def make_way(
    messages: Sequence[Message],
    sizes: Sequence[int],
    tokens: int,
    budget: int,
    *,
    force: bool = False,
    limit: int | None = None,
) -> int:
    """How many leading ``messages`` to compact when the first request needs ``tokens`` of the
    ``budget``: enough whole turns to bring it to :data:`TARGET` of the budget (``force``: every turn
    but the latest), the latest turn kept unless the request would not fit even without the others,
    never past index ``limit`` (see :func:`cut_point`)."""
    excess = sum(sizes) if force else tokens - int(TARGET * budget)
    cut = cut_point(messages, sizes, excess, keep=1, limit=limit)
    if tokens - sum(sizes[:cut]) > budget:  # the latest turn alone does not fit: it goes too
        cut = cut_point(messages, sizes, excess, keep=0, limit=limit)
    return cut


def summary_words(budget: int) -> int:
    """The most words a summary may take, from the ``budget`` (100 to 1,500)."""
    return max(100, min(1500, budget // 40))


def summary_request(messages: Sequence[Message], words: int) -> tuple[list[Message], str]:
    """The history and prompt of a summary request for ``messages`` (system prompts left out)."""
    history = [Message(role="system", content=_SUMMARY_SYSTEM)]
    history.extend(message for message in messages if message.role != "system")
    return history, SUMMARY_PROMPT.format(words=words)


def marker(mode: Literal["summary", "drop"], turns: int, summary: str = "") -> str:
    """The content of the message that stands for ``turns`` compacted turns."""
    plural = "s" if turns != 1 else ""
    if mode == "drop":
        return f"{MARKER}: {turns} earlier turn{plural} were dropped to fit the context window.]"
    return f"{MARKER}: {turns} earlier turn{plural}, summarized.]\n\n{summary.strip()}"
