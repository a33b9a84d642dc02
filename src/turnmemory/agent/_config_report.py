"""``turnmemory config``: every setting of :data:`~turnmemory.agent.config.SETTINGS` with its value and
where it came from, read from the same walk ``chat`` and ``run`` use.

A secret is never printed: an API key shows only where it was found. What a client could not be opened
without (a key, Bedrock's region or AWS credentials) is reported as missing, exactly when ``chat`` and
``run`` would stop for it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnmemory.agent.bash import sandbox_unavailable
from turnmemory.agent.config import (
    SETTINGS,
    Inputs,
    Setting,
    Value,
    configure,
    missing_credentials,
    resolve,
)
from turnmemory.agent.store import DATA_DIR_ENV, data_dir
from turnmemory.llm import ContextLimits

__all__ = ["Entry", "describe_config", "render_settings"]

_LIMITS = ("context_window", "context_reserve", "clear_at_least")
"""Settings whose default is the model's: shown as the numbers the client will use."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the report: a name, the value (as JSON gives it), the value as text shows it, where
    it came from, and what is missing (for a credential a client cannot be opened without)."""

    name: str
    value: Any
    shown: str
    source: str
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"value": ..., "source": ...}``, with ``"problem"`` when something is missing."""
        document = {"value": self.value, "source": self.source}
        return document | ({"problem": self.problem} if self.problem else {})


def describe_config(inputs: Inputs, location: Path, location_source: str) -> list[Entry]:
    """The report for ``inputs``: the config file (``location``, found through ``location_source``),
    each setting that applies to the chosen provider, what a client would miss, the session database."""
    values = resolve(inputs)
    config = configure(inputs, values)
    missing = missing_credentials(config)
    problem = dict([missing]) if missing else {}
    entries = [
        Entry(
            "config file",
            str(location),
            f"{location}{'' if inputs.path else ' (not found: defaults apply)'}",
            location_source,
        )
    ]
    limits = ContextLimits.of(
        config.model,
        window=config.context_window,
        reserve=config.context_reserve,
        clear_at_least=config.clear_at_least,
    )
    for setting in SETTINGS:
        if config.provider not in setting.providers:
            continue
        value = getattr(config, setting.name)
        if setting.name in _LIMITS and setting.name not in values:
            value = getattr(limits, setting.name.removeprefix("context_"))
            entries.append(Entry(setting.name, value, setting.kind.show(value), "default for the model"))
            continue
        if setting.name == "store" and value is None:
            path = str(data_dir() / "sessions.sqlite3")
            source = DATA_DIR_ENV if inputs.env.get(DATA_DIR_ENV) else "the user data directory"
            entries.append(Entry(setting.label, path, path, source))
            continue
        entries.append(_entry(setting, value, values.get(setting.name), problem.get(setting.name)))
    if config.provider == "bedrock":
        entries.append(
            Entry(
                "credentials",
                None,
                "MISSING: " + problem["credentials"].partition(": ")[2]
                if "credentials" in problem
                else "the AWS chain",
                "not set" if "credentials" in problem else "AWS_* variables, a profile or an instance role",
                problem.get("credentials"),
            )
        )
    return entries


def _entry(setting: Setting, value: Any, found: Value | None, problem: str | None) -> Entry:
    name = setting.label or setting.name
    source = found.source if found is not None else "default"
    if problem:
        return Entry(name, None, "MISSING: " + problem.partition(": ")[2], "not set", problem)
    empty = value is None or (isinstance(value, tuple | Mapping) and not value)
    shown = setting.unset if empty else setting.kind.show(value)
    if setting.name == "sandbox" and value != "off":
        unavailable = sandbox_unavailable()
        shown += f" (unavailable: {unavailable}; commands are asked about)" if unavailable else ""
    return Entry(name, None if value is None else setting.kind.plain(value), shown, source)


def render_settings(entries: list[Entry], width: int = 80) -> list[str]:
    """The entries as aligned lines no wider than ``width``: the value (wrapped when long), then its
    source beside it or on the next lines."""
    name_width = max(len(entry.name) for entry in entries)
    room = width - name_width - 2
    indent = " " * (name_width + 2)
    lines = []
    for entry in entries:
        parts = textwrap.wrap(entry.shown, room, break_on_hyphens=False) or [""]
        lines.append(f"{entry.name:<{name_width}}  {parts[0]}")
        lines += [indent + part for part in parts[1:]]
        source = f"({entry.source})"
        if len(lines[-1]) + 2 + len(source) <= width:
            lines[-1] += "  " + source
        else:
            lines += [indent + part for part in textwrap.wrap(source, room, break_on_hyphens=False)]
    return lines
