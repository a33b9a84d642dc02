"""``delegate_task``: hand a self-contained question to a read-only subagent and get its answer as text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from turnmemory.agent.tools._base import Action, Tool, ToolContext
from turnmemory.agent.tools._schema import arguments, string

__all__ = ["Subagent", "delegate_tool"]

Subagent = Callable[[str, str], str]
"""Runs one delegated task: ``(agent name, task) -> the subagent's final answer``."""


def delegate_tool(run_subagent: Subagent) -> Tool:
    """The ``delegate_task`` tool, running tasks with ``run_subagent``."""

    def prepare(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
        agent: str = arguments["agent"].strip()
        task: str = arguments["task"]
        return Action(run=lambda: {"agent": agent, "result": run_subagent(agent, task)})

    return Tool(
        name="delegate_task",
        description=(
            "Give a self-contained task to a subagent that can only read (read_file, grep, glob) and get its "
            "answer as text. Use it for searches or investigations whose details you do not need to keep. "
            "The subagent sees nothing of this conversation: put everything it needs in the task."
        ),
        input_schema=arguments(
            {
                "agent": string("A short name for the subagent's role.", non_empty=True),
                "task": string("The complete task and what to report.", non_empty=True),
            },
            "agent",
            "task",
        ),
        prepare=prepare,
    )
