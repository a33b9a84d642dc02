"""A turn the agent's process did not live to finish, read back from the session and its journal.

When a process stops mid-turn (kill -9, out of memory, a closed lid), the session holds the turn's
prompt and no record of how it ended, and the turn journal (:mod:`turnmemory.agent.store._journal`)
holds its provider-native work up to the last tool start or end. Resuming the session reads both:
the turn is recorded as ``interrupted`` (its completed calls in its memory, a call that had started
as one whose outcome is unknown), and the journal's items become the client's pending state, so the
next request replays the completed calls natively and nothing runs twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from turnmemory.agent.store import LoadedSession, SessionStore
from turnmemory.agent.store._journal import Journal, JournalDamaged, JournalEntry
from turnmemory.llm import UNKNOWN, record_items
from turnmemory.providers import wire
from turnmemory.segments import ToolSegment, TurnRecorder

__all__ = ["NOTE", "STOPPED", "Interrupted", "journal", "read_interrupted"]

STOPPED = "the agent's process stopped before the turn ended"
"""Why a turn found without its ending was interrupted."""

NOTE = (
    "The previous turn was interrupted (the agent's process stopped): its completed tool calls and "
    "their results are above as they happened, and a call whose outcome is unknown may have partly "
    "run, so check its effects before repeating it."
)
"""The one line that tells the model, in the turn after a restored interruption."""


@dataclass(frozen=True, slots=True)
class Interrupted:
    """What resuming a session found of its last turn.

    ``unrecorded`` is true when the session has no record of how its last turn ended (the process
    stopped); ``recorder`` holds that turn's work as the journal kept it (empty without one);
    ``entry`` is the journal to replay, ``None`` when there is none or it cannot be used, and
    ``problem`` says in one line why a journal found is not replayed.
    """

    unrecorded: bool
    recorder: TurnRecorder
    entry: JournalEntry | None = None
    problem: str | None = None

    @property
    def unknown(self) -> int:
        """How many calls of the turn had started and not ended."""
        return sum(
            1
            for segment in self.recorder.segments
            if isinstance(segment, ToolSegment) and segment.error == UNKNOWN.error
        )

    @property
    def completed(self) -> int:
        """How many calls of the turn had ended."""
        calls = sum(1 for segment in self.recorder.segments if isinstance(segment, ToolSegment))
        return calls - self.unknown


def journal(store: SessionStore, session_id: str) -> Journal:
    """The session's turn journal, beside the store on this machine."""
    return Journal(store.local_dir / "journal", session_id)


def read_interrupted(loaded: LoadedSession, found: Journal, workspace: str) -> Interrupted:
    """The session's last turn as the store and the journal ``found`` leave it (see :class:`Interrupted`).

    A journal that cannot be read, belongs to another session or to another turn than the latest (its
    prompt followed by its end at most), or whose items its provider cannot read is reported in
    ``problem`` and never replayed."""
    events = loaded.events
    unrecorded = bool(events) and events[-1].kind == "user_message"
    try:
        entry = found.read()
    except JournalDamaged as error:
        return Interrupted(unrecorded, TurnRecorder(workspace), problem=str(error))
    if entry is None:
        return Interrupted(unrecorded, TurnRecorder(workspace))
    after = [event.kind for event in events if event.seq >= entry.turn]
    if after not in (["user_message"], ["user_message", "assistant_turn"]):
        problem = "it is not of the session's latest turn"
        return Interrupted(unrecorded, TurnRecorder(workspace), problem=problem)
    recorder = TurnRecorder(workspace)
    try:
        record_items(wire(entry.provider), entry.items[entry.latest :], recorder)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        problem = f"its items cannot be read as {entry.provider}'s"
        return Interrupted(unrecorded, TurnRecorder(workspace), problem=problem)
    return Interrupted(unrecorded, recorder, entry)
