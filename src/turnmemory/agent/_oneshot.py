"""One turn run to its end with a throwaway client: a subagent's task, a compaction's summary.

The client is discarded afterwards, so the turn's pending state is never saved, journaled or carried on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from turnmemory.agent.prompt import SUBAGENT_PROMPT
from turnmemory.agent.tools import ToolError
from turnmemory.llm import Client, Event, Execute, ToolSpec, record
from turnmemory.memory import Message
from turnmemory.segments import TurnRecorder

__all__ = ["closing", "run_once", "subagent_answer"]


@contextmanager
def closing(events: Iterator[Event]) -> Iterator[Iterator[Event]]:
    """Close a turn's event generator however the loop over it ends (an interrupt saves pending state)."""
    try:
        yield events
    finally:
        close = getattr(events, "close", None)
        if callable(close):
            close()


def run_once(
    client: Client,
    history: Sequence[Message],
    prompt: str,
    workspace: str,
    *,
    tools: Sequence[ToolSpec] = (),
    execute: Execute | None = None,
) -> tuple[str, str | None]:
    """The final prose of one turn of ``client`` for ``prompt``, and why the turn did not finish
    (``None`` when it did)."""
    recorder = TurnRecorder(workspace)
    final: Event | None = None
    with closing(client.run_turn(history, prompt, tools=tools, execute=execute)) as events:
        for event in events:
            record(event, recorder)
            if event.terminal:
                final = event
    prose = recorder.prose.strip()
    if final is None:
        return prose, "no result"
    return prose, None if final.kind == "done" else (final.error or final.reason or final.kind)


def subagent_answer(
    client: Client,
    workspace: str,
    agent: str,
    task: str,
    *,
    tools: Sequence[ToolSpec],
    execute: Execute,
) -> str:
    """A delegated task's answer: the final prose of a turn with the subagent's prompt and
    ``tools`` (the read-only ones); a :class:`ToolError` when the turn does not finish."""
    history = [Message(role="system", content=f"{SUBAGENT_PROMPT}\nThe workspace is {workspace}.")]
    answer, failure = run_once(client, history, task, workspace, tools=tools, execute=execute)
    if failure is not None:
        partial = f"; its partial answer: {answer}" if answer else ""
        raise ToolError(f"subagent {agent} did not finish ({failure}){partial}")
    return answer or "(the subagent gave no answer)"
