"""``turnmemory config``: the resolved configuration, and where each value came from.

Values come from flags, then the environment, then the config file, then defaults (see
:mod:`turnmemory.agent.config`). A secret is never printed: an API key shows only where it was found.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnmemory.agent.config import CONFIG_ENV, DEFAULT_MODELS, KEY_VARIABLES, STORE_ENV, AgentConfig
from turnmemory.agent.sandbox import sandbox_unavailable
from turnmemory.agent.store import DATA_DIR_ENV, data_dir, printable_url
from turnmemory.llm import ContextLimits

__all__ = [
    "MISSING_KEY",
    "Setting",
    "config_source",
    "describe_config",
    "render_settings",
    "with_missing_keys",
]

MISSING_KEY = "\x00missing"
"""Stands in for an API key nobody set, so the rest of the configuration can still be shown."""


def with_missing_keys(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with :data:`MISSING_KEY` in every API-key variable that is unset."""
    filled = dict(env)
    for variables in KEY_VARIABLES.values():
        if variables and not any(filled.get(variable) for variable in variables):
            filled[variables[0]] = MISSING_KEY
    return filled


@dataclass(frozen=True, slots=True)
class Setting:
    """One resolved setting: its name, its value as shown, where it came from, and the value itself
    for ``--format json`` (``data``; the shown value where the two are the same)."""

    name: str
    value: str
    source: str
    data: Any = ...

    @property
    def plain(self) -> Any:
        """The value as a script reads it: a number, a list, ``None`` where nothing is set."""
        return self.value if self.data is ... else self.data


def _first(value: object, *candidates: tuple[str, object]) -> str:
    """The label of the first candidate that holds ``value`` (its source), else ``default``."""
    for label, candidate in candidates:
        if candidate is not None and candidate == value:
            return label
    return "default"


def describe_config(
    config: AgentConfig,
    *,
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    config_path: Path,
    config_source: str,
) -> list[Setting]:
    """Every setting of ``config`` with its source; ``flags`` are the command line's values by name."""
    env = os.environ if env is None else env
    table = config.table
    file = f"config file ({config_path.name})"
    providers = table.get("providers", {})
    section: Mapping[str, Any] = providers.get(config.provider, {}) if isinstance(providers, Mapping) else {}
    settings = [
        Setting(
            "config file",
            f"{config_path}{'' if config_path.is_file() else ' (not found: defaults apply)'}",
            config_source,
            str(config_path),
        ),
        Setting(
            "provider",
            config.provider,
            _first(
                config.provider,
                ("--provider", flags.get("provider")),
                ("TURNMEMORY_PROVIDER", env.get("TURNMEMORY_PROVIDER")),
                (f"{file}: provider", table.get("provider")),
            ),
        ),
        Setting(
            "model",
            config.model,
            _first(
                config.model,
                ("--model", flags.get("model")),
                ("TURNMEMORY_MODEL", env.get("TURNMEMORY_MODEL")),
                (f"{file}: [providers.{config.provider}] model", section.get("model")),
                (f"{file}: model", table.get("model")),
                ("default for the provider", DEFAULT_MODELS.get(config.provider)),
            ),
        ),
        Setting(
            "base_url",
            config.base_url or "the provider's own",
            _first(
                config.base_url,
                ("--base-url", flags.get("base_url")),
                ("TURNMEMORY_BASE_URL", env.get("TURNMEMORY_BASE_URL")),
                (f"{file}: [providers.{config.provider}] base_url", section.get("base_url")),
                (f"{file}: base_url", table.get("base_url")),
            ),
            config.base_url,
        ),
        _key(config, env, section, file),
    ]
    if config.provider == "bedrock":
        settings.append(
            Setting(
                "region",
                config.region or "",
                _first(
                    config.region,
                    ("AWS_REGION", env.get("AWS_REGION")),
                    ("AWS_DEFAULT_REGION", env.get("AWS_DEFAULT_REGION")),
                    (f"{file}: [providers.bedrock] region", section.get("region")),
                ),
                config.region,
            )
        )
    from_file = {str(rule) for rule in _list(table.get("permissions", {}), "allow")}
    settings.append(
        Setting(
            "allow",
            ", ".join(str(rule) for rule in config.allow) or "none (reads in the workspace only)",
            " + ".join(
                label
                for label, present in (
                    (f"{file}: [permissions] allow", any(str(r) in from_file for r in config.allow)),
                    ("--allow", bool(flags.get("allow"))),
                )
                if present
            )
            or "default",
            [str(rule) for rule in config.allow],
        )
    )
    sandbox_table = table.get("sandbox", {})
    unavailable = sandbox_unavailable() if config.sandbox != "off" else None
    settings.append(
        Setting(
            "sandbox",
            config.sandbox
            + (f" (unavailable: {unavailable}; commands are asked about)" if unavailable else ""),
            _first(
                config.sandbox,
                ("--sandbox", flags.get("sandbox")),
                ("TURNMEMORY_SANDBOX", env.get("TURNMEMORY_SANDBOX")),
                (
                    f"{file}: [sandbox] mode",
                    sandbox_table.get("mode") if isinstance(sandbox_table, Mapping) else None,
                ),
            ),
            config.sandbox,
        )
    )
    for name, value, unit in (
        ("timeout", config.timeout, "s"),
        ("connect_timeout", config.connect_timeout, "s"),
        ("deadline", config.deadline, "s"),
    ):
        shown = (
            f"{value:g} {unit}" if value is not None else "client default" if name != "deadline" else "none"
        )
        settings.append(
            Setting(
                name,
                shown,
                _first(value, (f"--{name}", flags.get(name)), (f"{file}: {name}", table.get(name))),
                value,
            )
        )
    limits = ContextLimits.of(
        config.model,
        window=config.context_window,
        reserve=config.context_reserve,
        clear_at_least=config.clear_at_least,
    )
    for name, value, configured in (
        ("context_window", limits.window, config.context_window),
        ("context_reserve", limits.reserve, config.context_reserve),
        ("clear_at_least", limits.clear_at_least, config.clear_at_least),
    ):
        source = f"{file}: {name}" if configured is not None else "default for the model"
        settings.append(Setting(name, f"{value:,} tokens", source, value))
    for name, value, unit in (
        ("max_tool_rounds", config.max_tool_rounds, "rounds per turn"),
        ("max_calls_per_response", config.max_calls_per_response, "calls"),
        ("max_argument_bytes", config.max_argument_bytes, "bytes per call"),
    ):
        flag = (f"--{name.replace('_', '-')}", flags.get(name))
        source = _first(value, flag, (f"{file}: {name}", table.get(name)))
        settings.append(Setting(name, f"{value:,} {unit}", source, value))
    settings.append(
        Setting(
            "compaction",
            config.compaction,
            _first(config.compaction, (f"{file}: compaction", table.get("compaction"))),
        )
    )
    servers = config.mcp.get("servers", {}) if isinstance(config.mcp, Mapping) else {}
    settings.append(
        Setting(
            "mcp servers",
            ", ".join(sorted(servers)) if isinstance(servers, Mapping) and servers else "none",
            f"{file}: [mcp.servers]" if servers else "default",
            sorted(servers) if isinstance(servers, Mapping) else [],
        )
    )
    store = data_dir()
    settings.append(
        Setting(
            "session database",
            printable_url(config.store),
            STORE_ENV if env.get(STORE_ENV) else f"{file}: [store] url",
        )
        if config.store
        else Setting(
            "session database",
            str(store / "sessions.sqlite3"),
            DATA_DIR_ENV if env.get(DATA_DIR_ENV) else "the user data directory",
        )
    )
    return settings


def _key(config: AgentConfig, env: Mapping[str, str], section: Mapping[str, Any], file: str) -> Setting:
    if config.provider == "bedrock":
        return Setting("api key", "the AWS credential chain", "AWS_* variables, profile or instance role")
    for variable in KEY_VARIABLES[config.provider]:
        if env.get(variable) == MISSING_KEY:
            names = " or ".join(KEY_VARIABLES[config.provider])
            return Setting("api key", f"MISSING: set {names}", f"or [providers.{config.provider}] api_key")
        if env.get(variable):
            return Setting("api key", "set (hidden)", variable)
    if section.get("api_key"):
        return Setting("api key", "set (hidden)", f"{file}: [providers.{config.provider}] api_key")
    return Setting("api key", "none (a local OpenAI-compatible server)", "default")


def _list(table: object, key: str) -> list[Any]:
    value = table.get(key, []) if isinstance(table, Mapping) else []
    return value if isinstance(value, list) else []


def render_settings(settings: list[Setting], width: int = 80) -> list[str]:
    """The settings as aligned lines no wider than ``width``: the value (wrapped when long), then its
    source beside it or on the next line."""
    name_width = max(len(setting.name) for setting in settings)
    room = width - name_width - 2
    indent = " " * (name_width + 2)
    lines = []
    for setting in settings:
        parts = textwrap.wrap(setting.value, room, break_on_hyphens=False) or [""]
        lines.append(f"{setting.name:<{name_width}}  {parts[0]}")
        lines += [indent + part for part in parts[1:]]
        source = f"({setting.source})"
        if len(lines[-1]) + 2 + len(source) <= width:
            lines[-1] += "  " + source
        else:
            lines += [indent + part for part in textwrap.wrap(source, room, break_on_hyphens=False)]
    return lines


def config_source(explicit: Path | None, env: Mapping[str, str]) -> tuple[Path, str]:
    """The config file ``load_config`` reads, and why: ``--config``, ``$TURNMEMORY_CONFIG`` or the default."""
    from turnmemory.agent.config import default_config_path

    if explicit is not None:
        return explicit.expanduser(), "--config"
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser(), CONFIG_ENV
    return default_config_path(), "default location"
