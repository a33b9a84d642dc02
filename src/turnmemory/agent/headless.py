"""``turnmemory run``: one turn without a terminal UI, for scripts and benchmarks.

Text mode streams the prose to stdout and one line per tool to stderr, then the session id on
stderr; a tool line always starts on a line of its own (prose cut mid-line is ended first). JSON mode
prints one object on stdout at the end::

    {"session_id": "...", "status": "done", "text": "...", "usage": {...},
     "turn_memory": {"tool_activity": [...]}, "error": null,
     "segments": [{"type": "text", "text": "..."}, {"type": "tool", "tool": "read_file", ...}, ...],
     "requests": [{"input_tokens": ..., "cached_tokens": ..., "cache_write_tokens": ...,
                   "uncached_tokens": ..., "output_tokens": ..., "miss": "turn_boundary" | ... | null,
                   "kind": "turn" | "compaction"}],
     "session": {"usage": {...}, "cost": 0.0123 | null}, "cost": 0.0042 | null}

``usage`` counts the turn's tokens: all input (``input_tokens``), the part read from the prompt cache
(``cached_tokens``), written to it (``cache_write_tokens``) and neither (``uncached_tokens``), and
the output. ``requests`` gives them per request, each with the cause of its cache miss (see
``turnmemory.agent._usage``) and what it was for (``compaction``: the summary of earlier turns made
before this turn, counted in ``usage`` too); ``session`` totals the whole session; ``cost`` is USD at the configured
prices (``null`` when none are set).

``text`` is the turn's flattened prose exactly; ``segments`` is the same turn in order, prose and the
tools between it (each tool as its TurnMemory record). Nothing the model or a tool wrote reaches the
terminal raw: text mode shows escape sequences and other controls as visible ``\\x1b``-style text, and
JSON writes them as ``\\u`` escapes (the same JSON value). ``status`` is ``done``, ``max_tokens`` (the
reply was cut at the model's output limit), ``incomplete`` or ``error``.

Nothing waits for input: reads in the workspace and commands the sandbox contains run; what would
ask in the REPL is denied, with a reason the model sees, unless an ``--allow`` rule grants it. The
exit status is 0 when the turn is done, 1 when it is incomplete, interrupted, failed or cut at the
output limit (with the reason in one line on stderr, and for a refused key where it came from), 2 for
bad usage or configuration.

``@path`` in the prompt attaches that file as in the REPL (see :mod:`turnmemory.agent._attach`), one
line on stderr per mention; a file outside the workspace only under an ``--allow`` read rule.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from turnmemory._text import terminal_json, terminal_safe
from turnmemory.agent._attach import attach_mentions, image_rules
from turnmemory.agent._display import one_line, tool_label, tool_outcome
from turnmemory.agent._runtime import open_agent
from turnmemory.agent._usage import cost, usage_dict
from turnmemory.agent.config import AgentConfig, key_hint
from turnmemory.agent.loop import TurnOutcome
from turnmemory.llm import Event
from turnmemory.memory import Message

__all__ = ["HeadlessView", "OutputFormat", "run_headless"]

OutputFormat = Literal["text", "json"]


class HeadlessView:
    """Streams prose to ``out`` (text mode) and one line per tool, retry and notice to ``err``."""

    def __init__(self, workspace: str, *, stream_prose: bool, out: TextIO, err: TextIO) -> None:
        self.workspace = workspace
        self.stream_prose = stream_prose
        self.out = out
        self.err = err
        self.wrote_prose = False
        self.mid_line = False  # the prose on stdout does not end with a line break
        self._calls: dict[str, Mapping[str, Any]] = {}

    def event(self, event: Event, elapsed: float | None) -> None:
        """Show one event."""
        if event.kind == "text" and self.stream_prose:
            self.out.write(terminal_safe(event.text))
            self.out.flush()
            self.wrote_prose = self.wrote_prose or bool(event.text)
            if event.text:
                self.mid_line = not event.text.endswith("\n")
        elif event.kind == "tool_start":
            self._calls[event.call_id] = event.arguments or {}
        elif event.kind == "tool_end":
            self._end_line()
            label = tool_label(event.name, self._calls.pop(event.call_id, {}), self.workspace)
            took = f" ({elapsed:.1f}s)" if elapsed is not None else ""
            self._say(f"{label} -> {tool_outcome(event.output, event.error)}{took}")
        elif event.kind == "retry":
            self._say(f"retrying (attempt {event.attempt}): {one_line(event.error or '')}")
        elif event.kind == "reduced":
            self.notice(event.text)

    def diff(self, call_id: str, diff: str) -> None:
        """Diffs are not shown headless (the session transcript keeps them)."""

    def notice(self, text: str) -> None:
        """A note on stderr, on a line of its own."""
        self._end_line()
        self._say(f"turnmemory: {text}")

    def _say(self, line: str) -> None:
        """One line on ``err``, safe for a terminal."""
        self.err.write(terminal_safe(line, multiline=False) + "\n")
        self.err.flush()

    def _end_line(self) -> None:
        """End a prose line cut short, so that what goes to stderr next starts a line on a terminal."""
        if self.mid_line:
            self.out.write("\n")
            self.out.flush()
            self.mid_line = False


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What ``turnmemory run`` was asked to do."""

    prompt: str
    workspace: str
    session: str | None = None
    latest: bool = False
    output: OutputFormat = "text"
    session_model: bool = False
    """Continue with the provider and model the session last used (no --provider or --model given)."""


def run_headless(
    config: AgentConfig, request: RunRequest, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run one turn; the process exit status. ``ConfigError`` propagates for the caller to report.
    ``out`` and ``err`` are the streams at the time of the call by default."""
    out, err = out or sys.stdout, err or sys.stderr
    view = HeadlessView(request.workspace, stream_prose=request.output == "text", out=out, err=err)
    with open_agent(
        config,
        workspace=request.workspace,
        view=view,
        ask=None,
        session=request.session,
        latest=request.latest,
        session_model=request.session_model,
    ) as agent:
        attached = attach_mentions(request.prompt, agent, image_rules(agent.config, agent.client))
        for note in attached.notes:
            view.notice(note)
        outcome = agent.turn(request.prompt, attachments=attached.text, images=attached.images)
        session_id = agent.session_id
        hint = key_hint(agent.config, outcome.error or "")
        session_usage = agent.usage.session_total
        prices = agent.config.prices  # the session's own provider, where resuming switched to it
    if request.output == "json":
        result = _json_result(session_id, outcome)
        result["requests"] = [entry.to_dict() for entry in outcome.requests]
        result["cost"] = cost(outcome.usage, prices) if prices else None
        result["session"] = {
            "usage": usage_dict(session_usage),
            "cost": cost(session_usage, prices) if prices else None,
        }
        out.write(terminal_json(result) + "\n")
    else:
        if view.mid_line:
            out.write("\n")
        err.write(f"session {session_id}\n")
    if outcome.status == "done" and outcome.reason == "max_tokens":
        err.write(
            "turnmemory: the reply was cut at the model's output limit (max_tokens); "
            "continue the session to let it finish\n"
        )
        return 1
    if outcome.status != "done":
        err.write(
            f"turnmemory: turn {outcome.status}: {one_line(outcome.error or outcome.reason or 'no reason given', 300)}\n"
        )
        if hint is not None:
            err.write(f"turnmemory: {hint}\n")
        return 1
    return 0


def _json_result(session_id: str, outcome: TurnOutcome) -> dict[str, Any]:
    memory = outcome.message.turn_memory
    cut = outcome.status == "done" and outcome.reason == "max_tokens"
    return {
        "session_id": session_id,
        "status": "max_tokens" if cut else outcome.status,
        "text": outcome.message.content,
        "usage": usage_dict(outcome.usage),
        "turn_memory": memory.to_dict() if memory is not None else {"tool_activity": []},
        "error": outcome.error,
        "segments": segments(outcome.message),
    }


def segments(message: Message) -> list[dict[str, Any]]:
    """The turn in order: its prose cut where tools ran, each tool as its TurnMemory record."""
    prose = message.content.encode()
    out: list[dict[str, Any]] = []
    start = 0
    for activity in message.activities:
        if activity.text_offset > start:
            out.append({"type": "text", "text": prose[start : activity.text_offset].decode()})
            start = activity.text_offset
        record = activity.to_dict()
        del record["text_offset"]
        out.append({"type": "tool", **record})
    if start < len(prose):
        out.append({"type": "text", "text": prose[start:].decode()})
    return out
