"""What every tool is made of: a JSON schema, a ``prepare`` step and an ``Action`` to run.

``prepare`` checks the arguments (the LLM loop has validated them against the schema already), resolves paths and works out what the
call would do without doing it: the access it needs and, for writes and edits, the diff. The agent
shows the diff, asks for the access, and only then calls ``Action.run``. Failures a model can act on
are raised as :class:`ToolError`, whose message is what the model sees.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnmemory.agent.permissions import Access, resolve_path

__all__ = ["Action", "Tool", "ToolContext", "ToolError", "int_argument"]


class ToolError(Exception):
    """A tool call failed; the message (one line where possible) is returned to the model."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where tools run: the real workspace path and the directory for spilled full outputs."""

    workspace: str
    spill_dir: str

    def resolve(self, raw: str) -> tuple[str, bool]:
        """``(real path, inside the workspace)`` for a path argument."""
        return resolve_path(raw, self.workspace)

    def relative(self, path: str) -> str:
        """``path`` relative to the workspace when inside it, else unchanged."""
        prefix = self.workspace.rstrip(os.sep) + os.sep
        return path[len(prefix) :] if path.startswith(prefix) else path

    def spill_path(self, stem: str) -> str:
        """A fresh file path under the spill directory (created on demand)."""
        Path(self.spill_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        return os.path.join(self.spill_dir, f"{uuid.uuid4().hex[:12]}-{stem}")


@dataclass(frozen=True, slots=True)
class Action:
    """A prepared call: what it needs (``access``), what it would change (``diff``), and how to run it."""

    run: Callable[[], dict[str, Any]]
    access: Access | None = None
    diff: str | None = None


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: its name, description and JSON schema, and how to prepare a call."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    prepare: Callable[[Mapping[str, Any], ToolContext], Action]


def int_argument(
    arguments: Mapping[str, Any], name: str, default: int, minimum: int, maximum: int | None = None
) -> int:
    """An integer argument within bounds (the loop checks types; the bounds are checked here)."""
    value = arguments.get(name, default)
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ToolError(f"{name} must be {bounds}, got {value!r}")
    return number
