"""The agent's configuration: flags, then environment, then the TOML config file, then defaults.

::

    # ~/.config/turnmemory/config.toml  (or --config PATH, or $TURNMEMORY_CONFIG)
    provider = "anthropic"
    model = "claude-sonnet-4-6"          # the model of the provider above
    timeout = 300                        # seconds without a byte of a response (--timeout)
    connect_timeout = 10                 # seconds to connect
    deadline = 1800                      # seconds one turn may take, tools included (--deadline)
    context_window = 200000              # tokens; default: the model's, from turnmemory.llm.CONTEXT_WINDOWS
    context_reserve = 8192               # tokens a request leaves for the output
    clear_at_least = 40000               # fewest tokens the in-turn reducer clears at a time
    max_tool_rounds = 10000              # tool rounds one turn may run (--max-tool-rounds)
    max_calls_per_response = 100         # calls of one response that run; the model is told of the rest
    max_argument_bytes = 1000000         # largest arguments of one call that run (bytes of JSON)
    compaction = "summary"               # or "drop", or "off": what happens to the oldest turns

    [providers.openai_chat]              # per-provider settings
    model = "gpt-4.1"
    base_url = "http://localhost:11434/v1"
    api_key = "..."                      # the environment variable wins when set
    single_calls = true                  # force one call per assistant message (default: by model family)
    id_style = "compact"                 # force 9-character call ids ("historical": the spec's ids)

    [providers.anthropic.prices]         # USD per million tokens: the REPL shows each turn's cost
    input = 3.0
    output = 15.0
    cached_input = 0.3

    [providers.bedrock]
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    region = "us-east-1"

    [permissions]
    allow = ["bash:git *", "edit"]

    [mcp.servers.time]                   # see turnmemory.agent.mcp
    command = "uvx"
    args = ["mcp-server-time"]

    [sandbox]                            # see turnmemory.agent.sandbox
    mode = "workspace-write"             # or "read-only", "off"
    readable = ["~/.pyenv"]              # more paths bash may read inside the sandbox

    [store]                              # where sessions live (default: SQLite in the data directory)
    url = "postgresql://agent@db.internal/turnmemory"   # or "sqlite:///path/sessions.sqlite3"

Environment: ``TURNMEMORY_PROVIDER``, ``TURNMEMORY_MODEL``, ``TURNMEMORY_BASE_URL``, ``TURNMEMORY_SANDBOX``,
``TURNMEMORY_STORE`` (the sessions store's URL); keys from
``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``; Bedrock uses the
AWS credential chain and ``AWS_REGION`` / ``AWS_DEFAULT_REGION``. Every problem is a
:class:`ConfigError` with a one-line message that names the missing or bad setting.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from turnmemory.agent.compaction import COMPACTION_MODES, CompactionMode
from turnmemory.agent.permissions import Rule, parse_rules
from turnmemory.agent.sandbox import SANDBOX_MODES, SandboxMode
from turnmemory.llm import (
    DEFAULT_MAX_ARGUMENT_BYTES,
    DEFAULT_MAX_CALLS,
    DEFAULT_MAX_TOOL_TURNS,
    ContextLimits,
)
from turnmemory.replay import IdStyle

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_MODELS",
    "KEY_VARIABLES",
    "STORE_ENV",
    "AgentConfig",
    "ConfigError",
    "default_config_path",
    "load_config",
    "store_url",
]

CONFIG_ENV = "TURNMEMORY_CONFIG"
STORE_ENV = "TURNMEMORY_STORE"
"""Environment variable naming the sessions store (a URL; see :func:`turnmemory.agent.store.open_store`)."""
PROVIDER_NAMES = ("anthropic", "openai_chat", "openai_responses", "gemini", "bedrock")
DEFAULT_PROVIDER = "anthropic"
DEFAULT_MODELS: Mapping[str, str] = MappingProxyType(
    {
        "anthropic": "claude-sonnet-4-6",
        "openai_chat": "gpt-4.1",
        "openai_responses": "gpt-5",
        "gemini": "gemini-2.5-pro",
    }
)
"""The model used when none is configured (Bedrock has none: its model ids depend on the account)."""
KEY_VARIABLES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "anthropic": ("ANTHROPIC_API_KEY",),
        "openai_chat": ("OPENAI_API_KEY",),
        "openai_responses": ("OPENAI_API_KEY",),
        "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        "bedrock": (),
    }
)
"""The environment variables holding each provider's API key, in order of preference."""
_SECONDS_KEYS = ("timeout", "connect_timeout", "deadline")
"""Top-level keys in seconds: read and connect timeouts of provider requests, the deadline of a turn."""
_TOKEN_KEYS = ("context_window", "context_reserve", "clear_at_least")
"""Top-level keys in tokens: the model's context window, the output reserve, the reducer's chunk."""
_COUNT_KEYS = ("max_tool_rounds", "max_calls_per_response", "max_argument_bytes")
"""Top-level whole-number limits: tool rounds per turn, calls per response, bytes of one call's arguments."""
_TOP_KEYS = frozenset(
    {
        "provider",
        "model",
        "base_url",
        "providers",
        "permissions",
        "mcp",
        "sandbox",
        "store",
        "compaction",
        *_SECONDS_KEYS,
        *_TOKEN_KEYS,
        *_COUNT_KEYS,
    }
)
_PROVIDER_KEYS = frozenset({"model", "base_url", "api_key", "region", "prices"})
_PRICE_KEYS = frozenset({"input", "output", "cached_input"})
_CHAT_KEYS = frozenset({"single_calls", "id_style"})
"""Keys only ``[providers.openai_chat]`` takes: they force the history's form (see ``openai_chat.family``)."""
_ID_STYLES: tuple[IdStyle, ...] = ("historical", "compact")
_KEYLESS_PLACEHOLDER = "not-needed"
_RUN_VARIABLES = frozenset({"TURNMEMORY_PROVIDER", "TURNMEMORY_MODEL", "TURNMEMORY_BASE_URL"})


class ConfigError(ValueError):
    """A configuration problem, in one line naming the setting."""


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """The resolved settings of one agent run."""

    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    region: str | None = None
    allow: tuple[Rule, ...] = ()
    mcp: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None
    sandbox: SandboxMode = "workspace-write"
    """Where bash runs: ``workspace-write``, ``read-only`` or ``off`` (see :mod:`turnmemory.agent.sandbox`)."""
    sandbox_readable: tuple[str, ...] = ()
    single_calls: bool | None = None
    """OpenAI Chat: force one call per assistant message (``True``) or batches (``False``); ``None``: by model."""
    id_style: IdStyle | None = None
    """OpenAI Chat: force ``"historical"`` or ``"compact"`` call ids; ``None``: by model."""
    timeout: float | None = None
    """Seconds to wait for the next bytes of a provider response (``None``: the client's default, 300)."""
    connect_timeout: float | None = None
    """Seconds to wait for a connection to the provider (``None``: the client's default, 10)."""
    deadline: float | None = None
    """Seconds one turn may take, tools included (``None``: no limit)."""
    context_window: int | None = None
    """The model's context window in tokens (``None``: from ``turnmemory.llm.CONTEXT_WINDOWS``)."""
    context_reserve: int | None = None
    """Tokens a request leaves for the output (``None``: the client's default)."""
    clear_at_least: int | None = None
    """Fewest tokens the in-turn reducer clears at a time (``None``: a fifth of the window)."""
    max_tool_rounds: int = DEFAULT_MAX_TOOL_TURNS
    """Tool rounds one turn may run before it ends ``tool_limit``."""
    max_calls_per_response: int = DEFAULT_MAX_CALLS
    """Calls of one response that run; the model is told of the others that they did not."""
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES
    """The largest arguments of one call that run (UTF-8 bytes of their compact JSON)."""
    compaction: CompactionMode = "summary"
    """What happens to the oldest turns when the history nears the window."""
    prices: Mapping[str, float] | None = None
    """USD per million tokens (``input``, ``output``, ``cached_input``) for the REPL's cost line."""
    store: str | None = field(default=None, repr=False)
    """The sessions store's URL (``None``: SQLite in the user data directory); it may hold a password."""

    table: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The parsed config file (for switching provider later)."""

    def switched(self, provider: str | None = None, model: str | None = None) -> AgentConfig:
        """These settings for another provider and/or model (the REPL's ``/model``).

        A new provider gets its own model, base URL and key from the environment and config file;
        the allow rules and the sandbox stay.
        """
        provider = provider or self.provider
        if provider == self.provider:
            return replace(self, model=model or self.model)
        env = {key: value for key, value in os.environ.items() if key not in _RUN_VARIABLES}
        fresh = resolve(self.table, provider=provider, model=model, env=env, path=self.path, extra_allow=())
        return replace(
            fresh,
            allow=self.allow,
            sandbox=self.sandbox,
            sandbox_readable=self.sandbox_readable,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            deadline=self.deadline,
            max_tool_rounds=self.max_tool_rounds,
            max_calls_per_response=self.max_calls_per_response,
            max_argument_bytes=self.max_argument_bytes,
            store=self.store,
        )


def default_config_path() -> Path:
    """``platformdirs.user_config_dir("turnmemory")/config.toml``."""
    import platformdirs

    return Path(platformdirs.user_config_dir("turnmemory")) / "config.toml"


def load_config(
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    allow: Sequence[str] = (),
    config_path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    sandbox: str | None = None,
    timeout: float | None = None,
    deadline: float | None = None,
    max_tool_rounds: int | None = None,
) -> AgentConfig:
    """Resolve the settings from flags (the arguments), ``env``, the config file and defaults."""
    env = os.environ if env is None else env
    explicit = config_path or env.get(CONFIG_ENV) or None
    path = Path(explicit).expanduser() if explicit else default_config_path()
    if explicit and not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    table = _read_table(path) if path.is_file() else {}
    config = resolve(
        table,
        provider=provider,
        model=model,
        base_url=base_url,
        env=env,
        path=path if path.is_file() else None,
        extra_allow=allow,
    )
    mode, readable = _sandbox(table, sandbox or env.get("TURNMEMORY_SANDBOX"), str(path))
    flags = {"timeout": timeout, "deadline": deadline}
    timeout, connect_timeout, deadline = _seconds(table, str(path), flags)
    rounds, calls, argument_bytes = _counts(table, str(path), {"max_tool_rounds": max_tool_rounds})
    return replace(
        config,
        max_tool_rounds=rounds,
        max_calls_per_response=calls,
        max_argument_bytes=argument_bytes,
        store=env.get(STORE_ENV) or _store(table, str(path)),
        sandbox=mode,
        sandbox_readable=readable,
        timeout=timeout,
        connect_timeout=connect_timeout,
        deadline=deadline,
    )


def store_url(config_path: str | Path | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The sessions store's URL: ``$TURNMEMORY_STORE``, else the config file's ``[store] url``, else
    ``None`` (SQLite in the user data directory). Reads nothing else of the file."""
    env = os.environ if env is None else env
    if env.get(STORE_ENV):
        return env[STORE_ENV]
    explicit = config_path or env.get(CONFIG_ENV) or None
    path = Path(explicit).expanduser() if explicit else default_config_path()
    return _store(_read_table(path), str(path)) if path.is_file() else None


def _store(table: Mapping[str, Any], where: str) -> str | None:
    section = table.get("store", {})
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where}: [store] must be a table")
    unknown = set(section) - {"url"}
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} in [store]")
    return _string(section, "url", f"{where} [store]")


def resolve(
    table: Mapping[str, Any],
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str],
    path: Path | None,
    extra_allow: Sequence[str],
) -> AgentConfig:
    """Combine flags, environment and a parsed config table into an :class:`AgentConfig`."""
    where = str(path) if path is not None else "config"
    configured_provider = _string(table, "provider", where)
    chosen = provider or env.get("TURNMEMORY_PROVIDER") or configured_provider or DEFAULT_PROVIDER
    if chosen not in PROVIDER_NAMES:
        raise ConfigError(f"unknown provider {chosen!r}: expected one of {', '.join(PROVIDER_NAMES)}")
    same = configured_provider in (None, chosen)
    section = _provider_table(table, chosen, where)
    chosen_model = (
        model
        or env.get("TURNMEMORY_MODEL")
        or _string(section, "model", f"{where} [providers.{chosen}]")
        or (_string(table, "model", where) if same else None)
        or DEFAULT_MODELS.get(chosen)
    )
    if not chosen_model:
        raise ConfigError(
            f"no model for {chosen}: pass --model, set TURNMEMORY_MODEL or [providers.{chosen}] model"
        )
    url = (
        base_url
        or env.get("TURNMEMORY_BASE_URL")
        or _string(section, "base_url", f"{where} [providers.{chosen}]")
        or (_string(table, "base_url", where) if same else None)
    )
    api_key, region = _credentials(chosen, section, env, url, where)
    permissions = table.get("permissions", {})
    if not isinstance(permissions, Mapping) or not isinstance(permissions.get("allow", []), list):
        raise ConfigError(f"{where}: [permissions] allow must be a list of rules")
    unknown = set(permissions) - {"allow"}
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} in [permissions]")
    try:
        rules = parse_rules([*(str(rule) for rule in permissions.get("allow", [])), *extra_allow])
    except ValueError as error:
        raise ConfigError(str(error)) from None
    mcp = table.get("mcp", {})
    if not isinstance(mcp, Mapping):
        raise ConfigError(f"{where}: [mcp] must be a table")
    label = f"{where} [providers.{chosen}]"
    single_calls = section.get("single_calls")
    if single_calls is not None and not isinstance(single_calls, bool):
        raise ConfigError(f"{label}: single_calls must be true or false")
    chosen_ids = _string(section, "id_style", label)
    id_style = next((style for style in _ID_STYLES if style == chosen_ids), None)
    if chosen_ids is not None and id_style is None:
        raise ConfigError(f"{label}: id_style must be one of {', '.join(_ID_STYLES)}, got {chosen_ids!r}")
    return AgentConfig(
        provider=chosen,
        model=chosen_model,
        base_url=url,
        api_key=api_key,
        region=region,
        allow=rules,
        mcp=mcp,
        path=path,
        table=table,
        single_calls=single_calls,
        id_style=id_style,
        prices=_prices(section, label),
        **_context(table, where, chosen_model),
    )


def _prices(section: Mapping[str, Any], label: str) -> Mapping[str, float] | None:
    """``[providers.NAME.prices]``: non-negative USD per million tokens, by kind of token."""
    prices = section.get("prices")
    if prices is None:
        return None
    if not isinstance(prices, Mapping) or set(prices) - _PRICE_KEYS:
        raise ConfigError(f"{label} prices: expected a table of {', '.join(sorted(_PRICE_KEYS))}")
    for kind, value in prices.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
            raise ConfigError(f"{label} prices.{kind}: expected USD per million tokens, got {value!r}")
    return MappingProxyType({kind: float(value) for kind, value in prices.items()})


def _context(table: Mapping[str, Any], where: str, model: str) -> dict[str, Any]:
    """The context settings of the config file for ``model``: token counts and the compaction mode."""
    chosen: dict[str, Any] = {}
    for key in _TOKEN_KEYS:
        value = table.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ConfigError(f"{where}: {key} must be a whole number of tokens, got {value!r}")
        chosen[key] = value
    try:
        ContextLimits.of(
            model,
            window=chosen["context_window"],
            reserve=chosen["context_reserve"],
            clear_at_least=chosen["clear_at_least"],
        )
    except ValueError as error:
        raise ConfigError(f"{where}: {error}") from None
    mode = table.get("compaction", "summary")
    if mode not in COMPACTION_MODES:
        raise ConfigError(f"{where}: compaction must be one of {', '.join(COMPACTION_MODES)}, got {mode!r}")
    chosen["compaction"] = mode
    return chosen


def _sandbox(table: Mapping[str, Any], chosen: str | None, where: str) -> tuple[SandboxMode, tuple[str, ...]]:
    section = table.get("sandbox", {})
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where}: [sandbox] must be a table")
    unknown = set(section) - {"mode", "readable"}
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} in [sandbox]")
    mode = chosen or _string(section, "mode", f"{where} [sandbox]") or "workspace-write"
    if mode not in SANDBOX_MODES:
        raise ConfigError(f"unknown sandbox mode {mode!r}: expected one of {', '.join(SANDBOX_MODES)}")
    readable = section.get("readable", [])
    if not isinstance(readable, list) or not all(
        isinstance(p, str) and os.path.isabs(os.path.expanduser(p)) for p in readable
    ):
        raise ConfigError(f"{where}: [sandbox] readable must be a list of absolute paths (or ~/...)")
    return mode, tuple(readable)


def _seconds(
    table: Mapping[str, Any], where: str, flags: Mapping[str, float | None]
) -> tuple[float | None, float | None, float | None]:
    """The read timeout, connect timeout and turn deadline: flags first, then the config file's keys."""
    chosen: dict[str, float | None] = {}
    for key in _SECONDS_KEYS:
        flag = flags.get(key)
        value = flag if flag is not None else table.get(key)
        source = f"--{key}" if flag is not None else f"{where}: {key}"
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf")
        ):
            raise ConfigError(f"{source} must be a positive number of seconds, got {value!r}")
        chosen[key] = None if value is None else float(value)
    return chosen["timeout"], chosen["connect_timeout"], chosen["deadline"]


def _counts(table: Mapping[str, Any], where: str, flags: Mapping[str, int | None]) -> tuple[int, int, int]:
    """Tool rounds per turn, calls per response and bytes of one call's arguments: flags first, then
    the config file's keys, then the client's defaults."""
    defaults = (DEFAULT_MAX_TOOL_TURNS, DEFAULT_MAX_CALLS, DEFAULT_MAX_ARGUMENT_BYTES)
    chosen: list[int] = []
    for key, default in zip(_COUNT_KEYS, defaults, strict=True):
        flag = flags.get(key)
        value = flag if flag is not None else table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            source = f"--{key.replace('_', '-')}" if flag is not None else f"{where}: {key}"
            raise ConfigError(f"{source} must be a whole number of at least 1, got {value!r}")
        chosen.append(value)
    return chosen[0], chosen[1], chosen[2]


def _credentials(
    provider: str, section: Mapping[str, Any], env: Mapping[str, str], base_url: str | None, where: str
) -> tuple[str | None, str | None]:
    label = f"{where} [providers.{provider}]"
    if provider == "bedrock":
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or _string(section, "region", label)
        if not region:
            raise ConfigError("missing AWS region for bedrock: set AWS_REGION or [providers.bedrock] region")
        if not _aws_credentials_available(env):
            raise ConfigError(
                "missing AWS credentials for bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
            )
        return None, region
    for variable in KEY_VARIABLES[provider]:
        if env.get(variable):
            return env[variable], None
    configured = _string(section, "api_key", label)
    if configured:
        return configured, None
    if base_url and provider.startswith("openai"):
        return _KEYLESS_PLACEHOLDER, None  # OpenAI-compatible local servers take no key, the SDK wants one
    names = " or ".join(KEY_VARIABLES[provider])
    raise ConfigError(f"missing API key for {provider}: set {names} or [providers.{provider}] api_key")


def _aws_credentials_available(env: Mapping[str, str]) -> bool:
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return True
    try:
        import boto3
    except ImportError:
        return False
    return boto3.Session().get_credentials() is not None


def _read_table(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            table = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML ({error})") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start}); TOML files are UTF-8") from None
    unknown = set(table) - _TOP_KEYS
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {sorted(unknown)[0]!r} (expected {', '.join(sorted(_TOP_KEYS))})"
        )
    return table


def _provider_table(table: Mapping[str, Any], provider: str, where: str) -> Mapping[str, Any]:
    providers = table.get("providers", {})
    if not isinstance(providers, Mapping):
        raise ConfigError(f"{where}: [providers] must be a table")
    for name, section in providers.items():
        if name not in PROVIDER_NAMES:
            raise ConfigError(f"{where}: unknown provider [providers.{name}]")
        if not isinstance(section, Mapping):
            raise ConfigError(f"{where}: [providers.{name}] must be a table")
        unknown = set(section) - _PROVIDER_KEYS - (_CHAT_KEYS if name == "openai_chat" else frozenset())
        if unknown:
            raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} in [providers.{name}]")
    section = providers.get(provider, {})
    return section if isinstance(section, Mapping) else {}


def _string(table: Mapping[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value.strip()
