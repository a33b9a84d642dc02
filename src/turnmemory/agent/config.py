"""The agent's configuration: one table of settings, each read from its flag, then its environment
variables, then its config-file keys, then its default.

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
    boundary = "every_turn"              # or "when_it_pays": when a finished turn gives way to its
                                         # TurnMemory (--boundary; see turnmemory.boundary)
    tool_history = "memory"              # or "full": earlier turns' raw trace, this process only

    [providers.openai_chat]              # per-provider settings
    model = "gpt-4.1"
    base_url = "http://localhost:11434/v1"
    api_key = "..."                      # the environment variable wins when set
    single_calls = true                  # force one call per assistant message (default: by model family)
    id_style = "compact"                 # force 9-character call ids ("historical": the spec's ids)

    [providers.anthropic.prices]         # USD per million tokens: each turn's and the session's cost
    input = 3.0
    output = 15.0
    cached_input = 0.3                   # cache reads (default: the input price)
    cache_write = 3.75                   # cache writes (default: the input price)

    [providers.bedrock]
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    region = "us-east-1"

    [permissions]
    allow = ["bash:git *", "edit"]

    [mcp.servers.time]                   # see turnmemory.agent.mcp
    command = "uvx"
    args = ["mcp-server-time"]

    [sandbox]                            # see turnmemory.agent.bash._sandbox
    mode = "workspace-write"             # or "read-only", "off"
    readable = ["~/.pyenv"]              # more paths bash may read inside the sandbox

    [store]                              # where sessions live (default: SQLite in the data directory)
    url = "postgresql://agent@db.internal/turnmemory"   # or "sqlite:///path/sessions.sqlite3"

:data:`SETTINGS` is the table: each row names a setting (a field of :class:`AgentConfig`), its type
and bounds, its flag, environment variables and config-file keys in order of precedence. It is walked
once (:func:`resolve`), recording each value with where it came from, which is what ``turnmemory
config`` shows. API keys are checked when a client is opened (:func:`credentials`), not when the
settings are read, so a configuration can be shown whatever it lacks. Every problem is a
:class:`ConfigError` with a one-line message that names the setting and where it was given.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeGuard, TypeVar

from turnmemory.agent.bash import SANDBOX_MODES, SandboxMode
from turnmemory.agent.compaction import COMPACTION_MODES, CompactionMode
from turnmemory.agent.permissions import Rule, parse_rules
from turnmemory.boundary import DEFAULT_POLICY, BoundaryPolicy
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
    "SETTINGS",
    "STORE_ENV",
    "TOOL_HISTORIES",
    "AgentConfig",
    "ConfigError",
    "Inputs",
    "Kind",
    "PerProvider",
    "Setting",
    "ToolHistory",
    "Value",
    "config_location",
    "configure",
    "credentials",
    "default_config_path",
    "key_hint",
    "load_config",
    "missing_credentials",
    "read_inputs",
    "resolve",
    "store_url",
]

CONFIG_ENV = "TURNMEMORY_CONFIG"
ToolHistory = Literal["memory", "full"]
"""What earlier turns carry: their TurnMemory records, or the raw trace of this process's turns."""
TOOL_HISTORIES: tuple[ToolHistory, ...] = ("memory", "full")
STORE_ENV = "TURNMEMORY_STORE"
"""Environment variable naming the sessions store (a URL; see :func:`turnmemory.agent.store.open_store`)."""
PROVIDER_NAMES = ("anthropic", "openai_chat", "openai_responses", "gemini", "bedrock")
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
_KEYLESS = "not-needed"
"""The key sent to an OpenAI-compatible server configured without one (the SDK wants a key)."""
_PRICE_KINDS = ("input", "output", "cached_input", "cache_write")

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration problem, in one line naming the setting."""


# -- the kinds of value --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kind:
    """A setting's type and bounds, and how ``turnmemory config`` shows a value of it.

    ``read`` turns what a flag, an environment variable (text) or a config-file key holds into the
    value, or raises ``ValueError``: with a message when it has more to say than "must be
    ``expected``". ``show`` is the value as text, ``plain`` as JSON.
    """

    expected: str
    read: Callable[[Any], Any]
    show: Callable[[Any], str] = str
    plain: Callable[[Any], Any] = lambda value: value


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError
    return value.strip()


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _seconds(value: object) -> float:
    if not _number(value) or not value > 0:
        raise ValueError
    return float(value)


def _tokens(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError
    return value


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError
    return value


def _switch(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError
    return value


def _strings(value: object) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise ValueError
    return list(value)


def _rules(value: object) -> tuple[Rule, ...]:
    return parse_rules(_strings(value))


def _paths(value: object) -> tuple[str, ...]:
    paths = _strings(value)
    if not all(os.path.isabs(os.path.expanduser(path)) for path in paths):
        raise ValueError
    return tuple(paths)


def _prices(value: object) -> Mapping[str, float]:
    if not isinstance(value, Mapping) or set(value) - set(_PRICE_KINDS):
        raise ValueError
    for kind, price in value.items():
        if not _number(price) or price < 0:
            raise ValueError(f"prices.{kind} must be USD per million tokens, got {price!r}")
    return MappingProxyType({kind: float(price) for kind, price in value.items()})


def _table(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError
    return value


def _servers(value: Mapping[str, Any]) -> list[str]:
    servers = value.get("servers", {})
    return sorted(servers) if isinstance(servers, Mapping) else []


def _printable_url(url: str) -> str:
    from turnmemory.agent.store import printable_url

    return printable_url(url)


def choice(*options: str) -> Kind:
    """One of ``options``, exactly."""

    def read(value: object) -> str:
        if value not in options:
            raise ValueError
        return str(value)

    return Kind(f"one of {', '.join(options)}", read)


TEXT = Kind("a non-empty string", _text)
SECRET = Kind("a non-empty string", _text, show=lambda _: "set (hidden)", plain=lambda _: "hidden")
SECONDS = Kind("a positive number of seconds", _seconds, show=lambda value: f"{value:g} s")
TOKENS = Kind("a whole number of tokens", _tokens, show=lambda value: f"{value:,} tokens")
COUNT = Kind("a whole number of at least 1", _count, show=lambda value: f"{value:,}")
SWITCH = Kind("true or false", _switch, show=lambda value: "true" if value else "false")
RULES = Kind(
    "a list of rules",
    _rules,
    show=lambda rules: ", ".join(map(str, rules)),
    plain=lambda rules: [str(rule) for rule in rules],
)
PATHS = Kind("a list of absolute paths (or ~/...)", _paths, show=", ".join, plain=list)
PRICES = Kind(
    f"a table of {', '.join(_PRICE_KINDS)} in USD per million tokens",
    _prices,
    show=lambda prices: ", ".join(f"{kind} {price:g}" for kind, price in prices.items()) + " USD/Mtok",
    plain=dict,
)
SECRET_URL = Kind("a URL", _text, show=lambda url: _printable_url(url), plain=lambda url: _printable_url(url))
"""A URL that may hold a password: shown without it (see :func:`turnmemory.agent.store.printable_url`)."""
SERVERS = Kind("a table", _table, show=lambda table: ", ".join(_servers(table)) or "none", plain=_servers)
"""The ``[mcp]`` table: read whole here (see :mod:`turnmemory.agent.mcp`), shown by its server names."""


# -- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PerProvider(Generic[T]):
    """A setting's default, or its environment variables, as they differ from provider to provider."""

    values: Mapping[str, T]

    def get(self, provider: str | None) -> T | None:
        """The value for ``provider`` (``None`` where it has none)."""
        return self.values.get(provider) if provider is not None else None


@dataclass(frozen=True, slots=True)
class Setting:
    """One row of :data:`SETTINGS`: a field of :class:`AgentConfig` and where its value is read from.

    Precedence is the order of the places: ``flag`` (the command line's option), then ``env`` (each
    variable in order), then ``file`` (dotted config-file keys in order; ``{provider}`` stands for the
    chosen provider), then ``default`` (``None``: :class:`AgentConfig`'s own). With ``adds`` every
    place adds to the value instead (the file's rules, then the flag's). ``providers`` are those the
    setting applies to; ``required`` settings must have a value; ``what`` names the setting in
    messages and ``unset`` says in ``turnmemory config`` what having no value means; ``label`` is the
    name ``turnmemory config`` shows (default: ``name``).
    """

    name: str
    kind: Kind
    flag: str | None = None
    env: tuple[str, ...] | PerProvider[tuple[str, ...]] = ()
    file: tuple[str, ...] = ()
    default: Any = None
    providers: tuple[str, ...] = PROVIDER_NAMES
    required: bool = False
    adds: bool = False
    what: str = ""
    unset: str = "none"
    label: str = ""

    @property
    def per_provider(self) -> bool:
        """Chosen with the provider (``provider`` itself and the settings under ``[providers.NAME]``).

        A switch to another provider reads them again for it, without the flag and the provider-neutral
        environment variables given for the first one; the config file's top-level key of such a
        setting belongs to the file's own ``provider``.
        """
        return self.name == "provider" or any(key.startswith("providers.") for key in self.file)

    def variables(self, provider: str | None) -> tuple[str, ...]:
        """The environment variables of this setting for ``provider``."""
        return (self.env.get(provider) or ()) if isinstance(self.env, PerProvider) else self.env

    def keys(self, provider: str | None) -> tuple[str, ...]:
        """The config-file keys of this setting for ``provider``, dotted."""
        if provider is None:
            return tuple(key for key in self.file if "{provider}" not in key)
        return tuple(key.format(provider=provider) for key in self.file)

    def hint(self, provider: str | None) -> str:
        """Where to give this setting: ``pass --model, set TURNMEMORY_MODEL or [providers.x] model``."""
        places = [*self.variables(provider), *(_label(key) for key in self.keys(provider)[:1])]
        said = ([f"pass {self.flag}"] if self.flag else []) + (
            ["set " + " or ".join(places)] if places else []
        )
        return ", ".join(said)

    def missing(self, provider: str) -> str:
        """The one-line message for this setting missing for ``provider``."""
        return f"missing {self.what or self.name} for {provider}: {self.hint(provider)}"


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "provider",
        choice(*PROVIDER_NAMES),
        flag="--provider",
        env=("TURNMEMORY_PROVIDER",),
        file=("provider",),
        default="anthropic",
    ),
    Setting(
        "model",
        TEXT,
        flag="--model",
        env=("TURNMEMORY_MODEL",),
        file=("providers.{provider}.model", "model"),
        default=PerProvider(DEFAULT_MODELS),
        required=True,
    ),
    Setting(
        "base_url",
        TEXT,
        flag="--base-url",
        env=("TURNMEMORY_BASE_URL",),
        file=("providers.{provider}.base_url", "base_url"),
        unset="the provider's own",
    ),
    Setting(
        "api_key",
        SECRET,
        label="api key",
        env=PerProvider(KEY_VARIABLES),
        file=("providers.{provider}.api_key",),
        providers=("anthropic", "openai_chat", "openai_responses", "gemini"),
        what="API key",
        unset="none (an OpenAI-compatible server needs none)",
    ),
    Setting(
        "region",
        TEXT,
        env=PerProvider({"bedrock": ("AWS_REGION", "AWS_DEFAULT_REGION")}),
        file=("providers.{provider}.region",),
        providers=("bedrock",),
        what="AWS region",
    ),
    Setting(
        "single_calls",
        SWITCH,
        file=("providers.{provider}.single_calls",),
        providers=("openai_chat",),
        unset="by model family",
    ),
    Setting(
        "id_style",
        choice("historical", "compact"),
        file=("providers.{provider}.id_style",),
        providers=("openai_chat",),
        unset="by model family",
    ),
    Setting("prices", PRICES, file=("providers.{provider}.prices",), unset="none (no cost line)"),
    Setting(
        "allow",
        RULES,
        flag="--allow",
        file=("permissions.allow",),
        adds=True,
        unset="none (reads in the workspace only)",
    ),
    Setting(
        "sandbox",
        choice(*SANDBOX_MODES),
        flag="--sandbox",
        env=("TURNMEMORY_SANDBOX",),
        file=("sandbox.mode",),
    ),
    Setting("sandbox_readable", PATHS, file=("sandbox.readable",)),
    Setting("mcp", SERVERS, file=("mcp",), label="mcp servers"),
    Setting("store", SECRET_URL, env=(STORE_ENV,), file=("store.url",), label="session database"),
    Setting("timeout", SECONDS, flag="--timeout", file=("timeout",), unset="the client's default"),
    Setting("connect_timeout", SECONDS, file=("connect_timeout",), unset="the client's default"),
    Setting("deadline", SECONDS, flag="--deadline", file=("deadline",)),
    Setting("context_window", TOKENS, file=("context_window",), unset="the model's"),
    Setting("context_reserve", TOKENS, file=("context_reserve",), unset="the client's default"),
    Setting("clear_at_least", TOKENS, file=("clear_at_least",), unset="a fifth of the window"),
    Setting("max_tool_rounds", COUNT, flag="--max-tool-rounds", file=("max_tool_rounds",)),
    Setting("max_calls_per_response", COUNT, file=("max_calls_per_response",)),
    Setting("max_argument_bytes", COUNT, file=("max_argument_bytes",)),
    Setting("compaction", choice(*COMPACTION_MODES), file=("compaction",)),
    Setting("boundary", choice("every_turn", "when_it_pays"), flag="--boundary", file=("boundary",)),
    Setting("tool_history", choice(*TOOL_HISTORIES), flag="--tool-history", file=("tool_history",)),
)
"""Every setting, in the order they are resolved (``provider`` first: the others may depend on it).

A new setting is a row here and a field of :class:`AgentConfig` (and, with a flag, an option of the
commands that take it); its flag, environment variable and config-file key then work, and ``turnmemory
config`` shows it.
"""

_BY_NAME = {setting.name: setting for setting in SETTINGS}
_FLAGS = frozenset(setting.name for setting in SETTINGS if setting.flag)


def _known_keys() -> dict[str, Any]:
    """The config file's key tree: a table for each prefix of a setting's key, ``None`` at each key."""
    tree: dict[str, Any] = {}
    for setting in SETTINGS:
        for provider in setting.providers:
            for key in setting.keys(provider):
                *parents, leaf = key.split(".")
                node = tree
                for part in parents:
                    node = node.setdefault(part, {})
                node[leaf] = None
    return tree


_KEYS = _known_keys()


# -- where values come from -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Inputs:
    """What settings are read from: the command line's values (by setting name; ``None``: not
    given), the environment, and the parsed config file at ``path`` (``None``: no file)."""

    flags: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    table: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None


@dataclass(frozen=True, slots=True)
class Value:
    """A resolved setting: its value and where it came from (``--model``, ``TURNMEMORY_MODEL``,
    ``config file (config.toml): [providers.anthropic] model``, ``default``...)."""

    value: Any
    source: str


def default_config_path() -> Path:
    """``platformdirs.user_config_dir("turnmemory")/config.toml``."""
    import platformdirs

    return Path(platformdirs.user_config_dir("turnmemory")) / "config.toml"


def config_location(config_path: str | Path | None, env: Mapping[str, str]) -> tuple[Path, str]:
    """The config file to read, and why: ``--config``, ``$TURNMEMORY_CONFIG`` or the default location."""
    if config_path:
        return Path(config_path).expanduser(), "--config"
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser(), CONFIG_ENV
    return default_config_path(), "default location"


def read_inputs(
    *, config_path: str | Path | None = None, env: Mapping[str, str] | None = None, **flags: Any
) -> Inputs:
    """The flags, ``env`` (default: the process's) and the config file (``config_path``, else
    ``$TURNMEMORY_CONFIG``, else the default location, which may be absent), its keys checked."""
    unknown = sorted(set(flags) - _FLAGS)
    if unknown:
        raise TypeError(f"no setting has a flag named {unknown[0]!r}")
    env = os.environ if env is None else env
    path, source = config_location(config_path, env)
    if source != "default location" and not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if not path.is_file():
        return Inputs(flags, env)
    table = _read_table(path)
    _check_keys(table, _KEYS, (), path)
    return Inputs(flags, env, table, path)


def _read_table(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML ({error})") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start}); TOML files are UTF-8") from None


def _check_keys(
    table: Mapping[str, Any], known: Mapping[str, Any], prefix: tuple[str, ...], path: Path
) -> None:
    """Every key of ``table`` is one a setting reads, and every table on the way to one is a table."""
    for key, value in table.items():
        if key not in known:
            where = f" in [{'.'.join(prefix)}]" if prefix else ""
            raise ConfigError(f"{path}: unknown key {key!r}{where} (expected {', '.join(sorted(known))})")
        below = known[key]
        if below is None:
            continue
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: [{'.'.join((*prefix, key))}] must be a table")
        _check_keys(value, below, (*prefix, key), path)


def _label(key: str) -> str:
    """A dotted config-file key as TOML shows it: ``[providers.anthropic] model``."""
    parent, _, leaf = key.rpartition(".")
    return f"[{parent}] {leaf}" if parent else leaf


def _lookup(table: Mapping[str, Any], key: str) -> Any:
    for part in key.split("."):
        if not isinstance(table, Mapping) or part not in table:
            return None
        table = table[part]
    return table


# -- the walk -------------------------------------------------------------------------------------


def _places(setting: Setting, inputs: Inputs, provider: str | None) -> Iterator[tuple[Any, str, str]]:
    """What each place holds for ``setting``, in order of precedence: ``(raw value, the place as an
    error names it, the place as a source)``; places that hold nothing are left out."""
    given = inputs.flags.get(setting.name)
    if setting.flag and given is not None and given != [] and given != ():
        yield given, setting.flag, setting.flag
    for variable in setting.variables(provider):
        if inputs.env.get(variable):
            yield inputs.env[variable], variable, variable
    if inputs.path is None:
        return
    file_provider = inputs.table.get("provider")
    for key in setting.keys(provider):
        if (
            setting.name != "provider"
            and setting.per_provider
            and file_provider not in (None, provider)
            and "." not in key
        ):
            continue  # the top-level model (or base_url) is the file's provider's
        raw = _lookup(inputs.table, key)
        if raw is not None:
            yield raw, f"{inputs.path}: {_label(key)}", f"config file ({inputs.path.name}): {_label(key)}"


def _read(setting: Setting, raw: Any, where: str) -> Any:
    try:
        return setting.kind.read(raw)
    except ValueError as error:
        if error.args:
            raise ConfigError(f"{where}: {error}") from None
        got = "" if setting.kind is SECRET else f", got {raw!r}"  # a secret is never echoed
        raise ConfigError(f"{where} must be {setting.kind.expected}{got}") from None


def resolve(inputs: Inputs) -> dict[str, Value]:
    """Walk :data:`SETTINGS` once: each setting that has a value, with where it came from.

    A setting takes the first place that holds it (an ``adds`` setting every place, lowest first),
    else its default; settings of other providers than the chosen one are left out, as are those
    without a value (:class:`AgentConfig` has their defaults).
    """
    values: dict[str, Value] = {}
    for setting in SETTINGS:
        provider = values["provider"].value if "provider" in values else None
        if provider is not None and provider not in setting.providers:
            continue
        found = list(_places(setting, inputs, provider))
        if setting.adds and found:
            read = [(_read(setting, raw, where), source) for raw, where, source in reversed(found)]
            values[setting.name] = Value(
                tuple(item for value, _ in read for item in value), " + ".join(source for _, source in read)
            )
        elif found:
            raw, where, source = found[0]
            values[setting.name] = Value(_read(setting, raw, where), source)
        elif isinstance(setting.default, PerProvider) and setting.default.get(provider) is not None:
            values[setting.name] = Value(setting.default.get(provider), f"default for {provider}")
        elif setting.default is not None and not isinstance(setting.default, PerProvider):
            values[setting.name] = Value(setting.default, "default")
        elif setting.required:
            raise ConfigError(setting.missing(str(provider)))
    return values


# -- the resolved configuration -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """The resolved settings of one agent run (one field per row of :data:`SETTINGS`)."""

    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    """The provider's API key (``None``: none configured; see :func:`credentials`)."""
    region: str | None = None
    single_calls: bool | None = None
    """OpenAI Chat: force one call per assistant message (``True``) or batches (``False``); ``None``: by model."""
    id_style: IdStyle | None = None
    """OpenAI Chat: force ``"historical"`` or ``"compact"`` call ids; ``None``: by model."""
    prices: Mapping[str, float] | None = None
    """USD per million tokens (``input``, ``output``, ``cached_input``, ``cache_write``) for the cost
    of each turn and of the session (the REPL's usage line, ``run --format json``)."""
    allow: tuple[Rule, ...] = ()
    sandbox: SandboxMode = "workspace-write"
    """Where bash runs: ``workspace-write``, ``read-only`` or ``off`` (see :mod:`turnmemory.agent.bash._sandbox`)."""
    sandbox_readable: tuple[str, ...] = ()
    mcp: Mapping[str, Any] = field(default_factory=dict)
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
    boundary: BoundaryPolicy = DEFAULT_POLICY
    """When a finished turn is replaced by its TurnMemory (``every_turn``, the spec, or ``when_it_pays``)."""
    tool_history: ToolHistory = "memory"
    """``full``: earlier turns travel as their raw trace, kept in this process only, never stored."""
    store: str | None = field(default=None, repr=False)
    """The sessions store's URL (``None``: SQLite in the user data directory); it may hold a password."""

    path: Path | None = None
    """The config file read, if any."""
    inputs: Inputs = field(default_factory=Inputs, repr=False, compare=False)
    """What the settings were read from (a switch of provider reads its settings from them again)."""

    @property
    def client_boundary(self) -> BoundaryPolicy:
        """The client's boundary policy: ``never`` under ``tool_history = "full"``, else ``boundary``."""
        return "never" if self.tool_history == "full" else self.boundary

    def switched(self, provider: str | None = None, model: str | None = None) -> AgentConfig:
        """These settings for another provider and/or model (the REPL's ``/model``).

        A new provider's own settings (:attr:`Setting.per_provider`) are read again for it; the
        others stay as they are.
        """
        provider = provider or self.provider
        if provider == self.provider:
            return replace(self, model=model or self.model)
        neutral = {
            variable
            for setting in SETTINGS
            if setting.per_provider and not isinstance(setting.env, PerProvider)
            for variable in setting.env
        }
        inputs = replace(
            self.inputs,
            flags={"provider": provider, "model": model},
            env={name: text for name, text in self.inputs.env.items() if name not in neutral},
        )
        kept = {setting.name: getattr(self, setting.name) for setting in SETTINGS if not setting.per_provider}
        return replace(configure(inputs), **kept)


def configure(inputs: Inputs, values: Mapping[str, Value] | None = None) -> AgentConfig:
    """The configuration ``inputs`` give (``values``: their :func:`resolve`, when already walked)."""
    values = resolve(inputs) if values is None else values
    config = AgentConfig(
        **{name: value.value for name, value in values.items()}, path=inputs.path, inputs=inputs
    )
    try:
        ContextLimits.of(
            config.model,
            window=config.context_window,
            reserve=config.context_reserve,
            clear_at_least=config.clear_at_least,
        )
    except ValueError as error:
        raise ConfigError(f"{inputs.path or 'config'}: {error}") from None
    return config


def load_config(
    *, config_path: str | Path | None = None, env: Mapping[str, str] | None = None, **flags: Any
) -> AgentConfig:
    """Resolve the settings from ``flags`` (the command line's values by setting name: ``provider``,
    ``model``, ``base_url``, ``allow``, ``sandbox``, ``timeout``, ``deadline``), ``env``, the config
    file and the defaults."""
    return configure(read_inputs(config_path=config_path, env=env, **flags))


def store_url(config_path: str | Path | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The sessions store's URL: ``$TURNMEMORY_STORE``, else the config file's ``[store] url``, else
    ``None`` (SQLite in the user data directory). Reads no other setting."""
    setting = _BY_NAME["store"]
    found = next(_places(setting, read_inputs(config_path=config_path, env=env), None), None)
    return None if found is None else str(_read(setting, found[0], found[1]))


# -- credentials: checked when a client is opened -------------------------------------------------


def missing_credentials(config: AgentConfig) -> tuple[str, str] | None:
    """What ``config``'s client cannot be opened without: the setting (``api_key``, ``region`` or
    ``credentials``, Bedrock's AWS chain) and a one-line message saying where to set it; ``None``
    when nothing is missing. An OpenAI-compatible server at a configured ``base_url`` needs no key."""
    if config.provider == "bedrock":
        if not config.region:
            return "region", _BY_NAME["region"].missing("bedrock")
        if not _aws_credentials_available(config.inputs.env):
            return "credentials", (
                "missing AWS credentials for bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
            )
        return None
    if config.api_key or (config.base_url and config.provider.startswith("openai")):
        return None
    return "api_key", _BY_NAME["api_key"].missing(config.provider)


def credentials(config: AgentConfig) -> str | None:
    """The API key to open ``config``'s client with (``None`` for Bedrock, which reads the AWS chain);
    a :class:`ConfigError` saying where to set what is missing (see :func:`missing_credentials`)."""
    missing = missing_credentials(config)
    if missing is not None:
        raise ConfigError(missing[1])
    if config.provider == "bedrock":
        return None
    return config.api_key or _KEYLESS


def _aws_credentials_available(env: Mapping[str, str]) -> bool:
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return True
    try:
        import boto3
    except ImportError:
        return False
    return boto3.Session().get_credentials() is not None


_REJECTED = re.compile(
    r"^HTTP 40[13]\b|authentication_error|invalid_api_key|incorrect api key|invalid x-api-key"
    r"|api key not valid|api_key_invalid|unauthenticated|UnrecognizedClient|InvalidSignature"
    r"|security token included in the request is invalid|ExpiredToken",
    re.IGNORECASE,
)
"""What the providers say when they refuse the credentials (a status, an error type, a message)."""


def key_hint(config: AgentConfig, error: str, env: Mapping[str, str] | None = None) -> str | None:
    """For a provider error that refuses the credentials (a 401, a 403, a bad key), one line saying
    where the key in use came from and where to set it; ``None`` for any other error. Never the key."""
    if not _REJECTED.search(error):
        return None
    env = os.environ if env is None else env
    provider = config.provider
    if provider == "bedrock":
        return "AWS refused the credentials: check $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, or $AWS_PROFILE"
    variables = KEY_VARIABLES[provider]
    file = f"[providers.{provider}] api_key in {config.path or default_config_path()}"
    used = next((name for name in variables if env.get(name) and env[name] == config.api_key), None)
    if used is not None:
        return f"the key in use comes from ${used}: check it (it takes precedence over {file})"
    if not config.api_key:
        return f"no key is set for {provider}: set ${variables[0]} or {file}"
    return f"the key in use comes from {file}: check it, or set ${variables[0]}"
