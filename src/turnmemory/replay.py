"""The provider-neutral replay plan: an assistant message split at its activities' offsets.

:func:`historical_steps` turns one assistant ``Message`` into ``Step``\\ s. Each step is a stretch of
prose followed by the batch of historical calls that ran at that point; the last step holds the
prose after the last batch (it may be empty). The concatenated step texts always equal the prose.
Provider modules render steps into their wire format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from turnmemory.memory import Message, ToolActivity, valid_activities
from turnmemory.retention import DEFAULT_RULES, MCP_TOOL, ToolRule

__all__ = [
    "ArgumentPolicy",
    "HistoricalCall",
    "IdStyle",
    "Step",
    "compact_id",
    "historical_arguments",
    "historical_result",
    "historical_steps",
]

ArgumentPolicy = Literal["empty", "target"]
"""``"empty"`` (the spec: ``{}``) or ``"target"`` (the bounded target under the tool's parameter name)."""

IdStyle = Literal["historical", "compact"]
"""``"historical"`` (``historical_<message_index>_<n>``) or ``"compact"`` (9 alphanumerics, for Mistral)."""


@dataclass(frozen=True, slots=True)
class HistoricalCall:
    """One replayed call: a synthetic id, the replay name, placeholder arguments and a status result."""

    id: str
    name: str
    arguments: dict[str, Any]
    result: dict[str, Any]
    activity: ToolActivity

    @property
    def is_error(self) -> bool:
        """Whether the call replays as failed (its result's status is not ``success``)."""
        return bool(self.result["status"] != "success")


@dataclass(frozen=True, slots=True)
class Step:
    """Prose followed by the calls that ran right after it (none for the last step)."""

    text: str
    calls: tuple[HistoricalCall, ...] = ()


_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def compact_id(message_index: int, n: int) -> str:
    """A 9-character ``[A-Za-z0-9]`` id: ``h`` and 8 base-62 digits of ``(message_index, n)``.

    Distinct for every ``message_index`` below 2**23 and ``n`` below 2**24 (62**8 > 2**47); the same
    message and activity give the same id in every request, so prompt caches hold.
    """
    return nine_alphanumerics("h", (message_index << 24) | n)


def nine_alphanumerics(letter: str, value: int) -> str:
    """``letter`` and 8 base-62 digits of ``value`` (below 62**8): an id every wire accepts, Mistral's
    nine alphanumerics included."""
    digits = []
    for _ in range(8):
        value, rem = divmod(value, 62)
        digits.append(_ALPHABET[rem])
    return letter + "".join(reversed(digits))


def historical_result(activity: ToolActivity) -> dict[str, Any]:
    """The result payload: ``status`` then ``file_changed`` / ``failed_command`` + ``exit_code``.

    Any status other than ``success`` replays as ``{"status": "error"}`` alone.
    """
    if activity.status != "success":
        return {"status": "error"}
    return {"status": "success", **activity.present("file_changed", "failed_command", "exit_code")}


def historical_arguments(
    activity: ToolActivity, policy: ArgumentPolicy = "empty", rules: Mapping[str, ToolRule] = DEFAULT_RULES
) -> dict[str, Any]:
    """The replayed arguments: ``{}``, or under ``"target"`` the target by the tool's own parameter name."""
    if policy == "empty":
        return {}
    if activity.server is not None:
        return {"server": activity.server, "tool": activity.tool}
    rule = rules.get(activity.tool)
    if activity.target is None or rule is None or rule.parameter is None:
        return {}
    if rule.parameter == "pattern" and " :: " in activity.target:
        path, _, pattern = activity.target.partition(" :: ")
        return {"path": path, "pattern": pattern}
    return {rule.parameter: activity.target}


def historical_steps(
    message: Message,
    message_index: int = 0,
    *,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
    rules: Mapping[str, ToolRule] = DEFAULT_RULES,
) -> list[Step]:
    """Split ``message`` into steps at its activities' offsets.

    Non-assistant messages and messages without memory give one step holding the whole content.
    Invalid activities are ignored; ``n`` in the synthetic ids counts accepted ones only.
    """
    if message.role != "assistant" or message.turn_memory is None:
        return [Step(message.content)]
    prose = message.content.encode("utf-8")
    accepted = valid_activities(prose, message.turn_memory.tool_activity)
    if not accepted:
        return [Step(message.content)]
    steps: list[Step] = []
    batch: list[HistoricalCall] = []
    start = cursor = 0
    for n, activity in enumerate(accepted):
        if batch and activity.text_offset != cursor:
            steps.append(Step(prose[start:cursor].decode("utf-8"), tuple(batch)))
            batch, start = [], cursor
        cursor = activity.text_offset
        call_id = compact_id(message_index, n) if id_style == "compact" else f"historical_{message_index}_{n}"
        batch.append(
            HistoricalCall(
                id=call_id,
                name=MCP_TOOL if activity.server is not None else activity.tool,
                arguments=historical_arguments(activity, arguments, rules),
                result=historical_result(activity),
                activity=activity,
            )
        )
    steps.append(Step(prose[start:cursor].decode("utf-8"), tuple(batch)))
    steps.append(Step(prose[cursor:].decode("utf-8")))
    return steps
