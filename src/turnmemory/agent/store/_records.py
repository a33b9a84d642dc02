"""What a stored session is made of, and how stored rows are read back into one.

Every value read from a store is checked here, whatever the backend: a row that cannot be read is
one line in ``LoadedSession.problems`` and is skipped, its neighbours kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from turnmemory.agent.compaction import Compaction
from turnmemory.memory import Message

__all__ = [
    "MAX_DEPTH",
    "SEQ_LIMIT",
    "LoadedSession",
    "NewEvent",
    "SessionBusy",
    "SessionEvent",
    "SessionInfo",
    "SessionStoreError",
    "SessionSummary",
    "TurnStatus",
    "encode",
    "one_line",
    "read_session",
    "summary",
]

TurnStatus = Literal["done", "incomplete", "interrupted", "error"]

MAX_DEPTH = 32
"""The deepest nesting of a stored event's JSON that loading accepts (events are a few levels deep)."""
SEQ_LIMIT = 2**62
"""Events are numbered below this: a damaged row's larger seq does not make the next one overflow."""
LATEST_TIME = 253402300799.0
"""The latest time a stored time may be (9999-12-31): later ones, NaN and infinities are unknown (0)."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session's identity: id, workspace, start time, and the provider and model it started with."""

    id: str
    workspace: str
    created_at: float
    provider: str = ""
    model: str = ""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of ``turnmemory sessions``."""

    id: str
    workspace: str
    created_at: float
    updated_at: float
    turns: int
    last_prompt: str | None
    problems: tuple[str, ...] = ()
    """One line per column of the session's row that could not be read (its value is unknown)."""


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One stored event, decoded."""

    seq: int
    kind: str
    created_at: float
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class LoadedSession:
    """A session read back: its events, the retained conversation, and one line per skipped row."""

    info: SessionInfo
    events: tuple[SessionEvent, ...]
    messages: tuple[Message, ...]
    problems: tuple[str, ...]

    @property
    def model(self) -> tuple[str, str] | None:
        """The provider and model the session last used: its start's, or its latest ``/model``'s."""
        found = None
        for event in self.events:
            if event.kind in ("session_started", "model_switch"):
                provider, model = event.data.get("provider"), event.data.get("model")
                if isinstance(provider, str) and provider and isinstance(model, str) and model:
                    found = (provider, model)
        return found


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event on its way into a store: its JSON ``data``, and apart from it the JSON of the turn's
    display ``transcript`` (read only to show a session, never to resume one) and its ``status``."""

    kind: str
    created_at: float
    data: str
    transcript: str | None = None
    status: str | None = None


class SessionStoreError(Exception):
    """The sessions store cannot be used: one line saying why and how to recover."""


class SessionBusy(SessionStoreError):
    """Another process is writing to the session."""


def encode(data: Mapping[str, Any] | Sequence[Any]) -> str:
    """An event's data (or transcript) as the JSON text a store keeps."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def read_session(session: Sequence[Any], rows: Sequence[Sequence[Any]], *, display: bool) -> LoadedSession:
    """A session from its row (id, workspace, created_at) and its event rows (seq, kind, created_at,
    data, transcript) in order; unreadable event rows are skipped, one line each in ``problems``.
    For ``display``, each event's message is replaced by the one validated for the conversation.

    ``transcript`` is ``None`` where it was not read (resuming) or is kept inside ``data`` (rows
    written before it had a column of its own)."""
    session_id = _text(session[0])
    problems: list[str] = []
    columns = _Columns(f"session {session_id[:8]}", problems)
    info = SessionInfo(
        id=session_id, workspace=columns.text("workspace", session[1]), created_at=columns.time(session[2])
    )
    events: list[SessionEvent] = []
    messages: list[Message] = []
    turns: dict[int, int] = {}  # the seq of each turn's prompt since the last compaction -> its message
    for seq, kind, created_at, raw, transcript in rows:
        where = f"session {session_id[:8]} event {_label(seq)} ({_label(kind)})"
        try:
            data = _event_data(seq, kind, raw)
            message = _conversation_message(kind, data)
            if kind == "compaction":
                messages[:] = Compaction.from_dict(data).apply(messages)
                turns.clear()
            elif kind == "rewind":
                first = data.get("from_seq")
                start = turns.get(first) if isinstance(first, int) and not isinstance(first, bool) else None
                if start is None:
                    raise ValueError("rewind.from_seq: not a turn since the last compaction")
                del messages[start:]
                turns = {turn: at for turn, at in turns.items() if at < start}
            elif kind == "user_message":
                turns[seq] = len(messages)
        except ValueError as error:
            problems.append(f"{where} skipped: {one_line(str(error))}")
            continue
        if transcript is not None:
            try:
                data["transcript"] = _transcript(transcript)
            except ValueError as error:
                problems.append(f"{where}: its transcript is not shown: {one_line(str(error))}")
                data["transcript"] = []
        if kind == "session_started":
            info = SessionInfo(
                id=info.id,
                workspace=info.workspace,
                created_at=info.created_at,
                provider=str(data.get("provider", "")),
                model=str(data.get("model", "")),
            )
        if display and kind in ("assistant_turn", "pending_drop"):  # what is shown is what loads
            data["message"] = (message or Message.from_dict(data.get("message"))).to_dict()
        created = _Columns(where, problems).time(created_at)
        events.append(SessionEvent(seq=seq, kind=kind, created_at=created, data=data))
        if message is not None:
            messages.append(message)
    return LoadedSession(info=info, events=tuple(events), messages=tuple(messages), problems=tuple(problems))


def summary(row: Sequence[Any]) -> SessionSummary:
    """A listed session from its row (id, workspace, created_at, updated_at, turns, last prompt's data)."""
    problems: list[str] = []
    session_id = _text(row[0])
    columns = _Columns(f"session {session_id[:8]}", problems)
    return SessionSummary(
        id=session_id,
        workspace=columns.text("workspace", row[1]),
        created_at=columns.time(row[2]),
        updated_at=columns.time(row[3], "updated_at"),
        turns=int(row[4]),
        last_prompt=_prompt(row[5]),
        problems=tuple(problems),
    )


class _Columns:
    """Reads a row's plain columns: a value that cannot be read is one line in ``problems``."""

    def __init__(self, where: str, problems: list[str]) -> None:
        self.where = where
        self.problems = problems

    def time(self, value: Any, name: str = "created_at") -> float:
        """Seconds since the epoch; 0 (unknown) for anything else: text, NaN, 1e300, a blob."""
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and 0 <= value <= LATEST_TIME  # NaN compares false
        ):
            return float(value)
        self.problems.append(f"{self.where}: {name} {_label(value)} is not a time; shown as unknown")
        return 0.0

    def text(self, name: str, value: Any) -> str:
        """Text; anything else is shown as text (bytes not UTF-8 with replacement characters)."""
        if isinstance(value, str):
            return value
        self.problems.append(f"{self.where}: {name} is not text; shown as {_label(_text(value))}")
        return _text(value)


def one_line(text: str) -> str:
    """``text`` on one line of at most 200 characters."""
    return " ".join(text.split())[:200]


def _event_data(seq: Any, kind: Any, raw: Any) -> dict[str, Any]:
    """A row's decoded data; ``ValueError`` when any of its fields is unreadable."""
    if not isinstance(seq, int):
        raise ValueError(f"seq {one_line(repr(seq))} is not an integer")
    if not isinstance(kind, str):
        raise ValueError("kind is not text")
    data = _json(raw, "data")
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _transcript(raw: Any) -> list[Any]:
    items = _json(raw, "transcript")
    if not isinstance(items, list):
        raise ValueError("transcript: expected a list")
    return items


def _json(raw: Any, name: str) -> Any:
    """A column's JSON, at most :data:`MAX_DEPTH` levels deep; ``ValueError`` when unreadable."""
    if not isinstance(raw, str):
        raise ValueError(f"{name} is not text")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"{name} is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise ValueError(f"{name} is not JSON ({error})") from None
    if _depth(value) > MAX_DEPTH:
        raise ValueError(f"{name} is nested deeper than {MAX_DEPTH} levels")
    return value


def _depth(value: Any) -> int:
    deepest, level = 0, [value]
    while level:
        deepest += 1
        if deepest > MAX_DEPTH:
            return deepest
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return deepest


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def _label(value: Any) -> str:
    return one_line(str(value) if isinstance(value, (int, str)) else repr(value))


def _conversation_message(kind: str, data: Mapping[str, Any]) -> Message | None:
    """The conversation message an event contributes, if any; ``ValueError`` when it is malformed."""
    if kind == "user_message":
        content = data.get("content")
        if not isinstance(content, str):
            raise ValueError("user_message.content: expected a string")
        return Message(role="user", content=content)
    if kind == "assistant_turn":
        if not isinstance(data.get("transcript", []), list):
            raise ValueError("assistant_turn.transcript: expected a list")
        message = Message.from_dict(data.get("message"))
        if message.role != "assistant":
            raise ValueError("assistant_turn.message.role: expected assistant")
        return message if message.content or message.turn_memory is not None else None
    if kind == "pending_drop":
        Message.from_dict(data.get("message"))
    return None


def _prompt(raw: str | None) -> str | None:
    if raw is None:
        return None
    try:
        content = json.loads(raw, parse_constant=_no_constant).get("content")
    except (ValueError, AttributeError, TypeError, RecursionError):
        return None
    return content if isinstance(content, str) else None
