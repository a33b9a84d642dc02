"""The data model: ``ToolActivity``, ``TurnMemory`` and ``Message``, with JSON (de)serialization.

Loading is forgiving about activities and strict about messages: an activity that is wrongly typed,
nameless, negative, out of range, out of order or inside a UTF-8 character is dropped and the rest of
the message kept; a malformed message raises a ``ValueError`` that names the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard, cast

from turnmemory._text import bound_text, is_unicode

__all__ = ["ROLES", "Message", "Role", "ToolActivity", "TurnMemory", "valid_activities"]

Role = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant")

_STRING_FIELDS = ("target", "server", "file_changed", "failed_command")
_INT64 = range(-(2**63), 2**63)
"""What an exit code or offset may be: a 64-bit signed integer (larger ones cannot be a real one, and
an integer over 4,300 digits would make every JSON serialization of the request raise)."""


@dataclass(frozen=True, slots=True)
class ToolActivity:
    """One completed tool invocation of an assistant turn, as TurnMemory keeps it.

    ``text_offset`` is the UTF-8 byte length of the assistant prose emitted before the tool ran.
    ``status`` is ``"success"`` when the invocation completed without a tool error; anything else
    replays as an error. The optional fields are bounded, sanitized strings (``exit_code`` an int).
    Empty strings are stored as ``None``, and so is an ``exit_code`` that is not a 64-bit signed integer.
    """

    text_offset: int
    tool: str
    status: str = "success"
    target: str | None = None
    server: str | None = None
    file_changed: str | None = None
    failed_command: str | None = None
    exit_code: int | None = None

    def __post_init__(self) -> None:
        for name in _STRING_FIELDS:
            if getattr(self, name) == "":
                object.__setattr__(self, name, None)
        if self.exit_code is not None and not (_is_int(self.exit_code) and self.exit_code in _INT64):
            object.__setattr__(self, "exit_code", None)

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON object: fields in spec order, absent ones omitted."""
        required = {"text_offset": self.text_offset, "tool": self.tool, "status": self.status}
        return {**required, **self.present(*_STRING_FIELDS, "exit_code")}

    def present(self, *names: str) -> dict[str, Any]:
        """The named fields that are present (not ``None``), in the order named."""
        return {name: value for name in names if (value := getattr(self, name)) is not None}

    @classmethod
    def from_dict(cls, data: object) -> ToolActivity:
        """Read one persisted activity; a ``ValueError`` names what is wrong with it.

        String fields are bounded and redacted again on the way in, so a hand-edited or hostile
        record cannot carry a secret or a bulky value into a request. Unknown keys are ignored.
        """
        if not isinstance(data, Mapping):
            raise ValueError("tool_activity: expected an object")
        offset = data.get("text_offset")
        if not _is_int(offset) or offset < 0 or offset not in _INT64:
            raise ValueError("tool_activity.text_offset: expected a non-negative 64-bit integer")
        tool = data.get("tool")
        if not isinstance(tool, str) or not is_unicode(tool) or not bound_text(tool):
            raise ValueError("tool_activity.tool: expected a non-empty string")
        status = data.get("status", "success")
        if not isinstance(status, str) or not is_unicode(status):
            raise ValueError("tool_activity.status: expected a string")
        values: dict[str, str | None] = {}
        for name in _STRING_FIELDS:
            value = data.get(name)
            if value is not None and (not isinstance(value, str) or not is_unicode(value)):
                raise ValueError(f"tool_activity.{name}: expected a string")
            values[name] = bound_text(value) if value else None
        exit_code = data.get("exit_code")
        if exit_code is not None and not _is_int(exit_code):
            raise ValueError("tool_activity.exit_code: expected an integer")
        return cls(
            text_offset=offset,
            tool=bound_text(tool, 128),
            status=status if status == "success" else "error",
            exit_code=exit_code,
            **values,
        )


@dataclass(frozen=True, slots=True)
class TurnMemory:
    """The compact record of one assistant turn: its completed tool activities, in execution order."""

    tool_activity: tuple[ToolActivity, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.tool_activity, tuple):
            object.__setattr__(self, "tool_activity", tuple(self.tool_activity))

    def to_dict(self) -> dict[str, Any]:
        """``{"tool_activity": [...]}``."""
        return {"tool_activity": [activity.to_dict() for activity in self.tool_activity]}

    @classmethod
    def from_dict(cls, data: object) -> TurnMemory:
        """Read a persisted memory, dropping every activity that does not validate.

        Raises ``ValueError`` only when ``data`` is not an object; a missing or wrongly typed
        ``tool_activity`` list reads as no activity.
        """
        if not isinstance(data, Mapping):
            raise ValueError("turn_memory: expected an object")
        items = data.get("tool_activity")
        if not isinstance(items, list):
            return cls()
        kept: list[ToolActivity] = []
        for item in items:
            try:
                kept.append(ToolActivity.from_dict(item))
            except ValueError:
                continue
        return cls(tuple(kept))


@dataclass(frozen=True, slots=True)
class Message:
    """A conversation message: system, user or assistant prose, plus an assistant turn's memory.

    A memory with no activity is stored as ``None``, so equal conversations compare equal.
    """

    role: Role
    content: str
    turn_memory: TurnMemory | None = field(default=None)

    def __post_init__(self) -> None:
        if self.turn_memory is not None and not self.turn_memory.tool_activity:
            object.__setattr__(self, "turn_memory", None)

    @property
    def activities(self) -> tuple[ToolActivity, ...]:
        """The memory's activities, or an empty tuple."""
        return self.turn_memory.tool_activity if self.turn_memory is not None else ()

    def to_dict(self) -> dict[str, Any]:
        """``{"role", "content"[, "turn_memory"]}``."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.turn_memory is not None:
            out["turn_memory"] = self.turn_memory.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: object) -> Message:
        """Read a persisted message.

        Strict about the message (``ValueError`` naming ``role``, ``content`` or ``turn_memory``),
        forgiving about its activities (invalid ones, including offsets that do not fit the
        content, are dropped).
        """
        if not isinstance(data, Mapping):
            raise ValueError("message: expected an object")
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"message.role: expected one of {', '.join(ROLES)}, got {_preview(role)}")
        content = data.get("content")
        if not isinstance(content, str):
            raise ValueError(f"message.content: expected a string, got {_preview(content)}")
        if not is_unicode(content):
            raise ValueError("message.content: not valid Unicode (lone surrogate)")
        raw_memory = data.get("turn_memory")
        memory = None
        if raw_memory is not None:
            if not isinstance(raw_memory, Mapping):
                raise ValueError(f"message.turn_memory: expected an object, got {_preview(raw_memory)}")
            loaded = TurnMemory.from_dict(raw_memory)
            memory = TurnMemory(valid_activities(content.encode("utf-8"), loaded.tool_activity))
        return cls(role=cast(Role, role), content=content, turn_memory=memory)


def valid_activities(prose: bytes, activities: Iterable[ToolActivity]) -> tuple[ToolActivity, ...]:
    """The activities that can be placed in ``prose`` (UTF-8 bytes), in order.

    Drops nameless activities, negative or out-of-range offsets, offsets smaller than the previous
    accepted one and offsets that fall inside a multi-byte character. Never raises on an activity.
    """
    size = len(prose)
    cursor = 0
    kept: list[ToolActivity] = []
    for activity in activities:
        offset = activity.text_offset
        if not isinstance(activity.tool, str) or not activity.tool or not _is_int(offset):
            continue
        if offset < cursor or offset > size:
            continue
        if 0 < offset < size and prose[offset] & 0xC0 == 0x80:
            continue
        kept.append(activity)
        cursor = offset
    return tuple(kept)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _preview(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return repr(value[:40])
    if isinstance(value, Sequence | Mapping):
        return type(value).__name__
    return repr(value)[:40]
