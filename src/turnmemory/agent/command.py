"""The agent's subcommands: ``run`` (headless), ``chat`` (the REPL), ``sessions``, ``show`` and ``rewind``.

Whatever they print that a model, a tool, a repository or a stored session may have written is made
safe for a terminal first (:func:`turnmemory._text.terminal_safe`, and ``terminal_json`` for JSON).
"""

from __future__ import annotations

import functools
import inspect
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from turnmemory._text import terminal_json, terminal_safe
from turnmemory.agent._display import session_lines, timestamp
from turnmemory.agent.config import AgentConfig, ConfigError, load_config, store_url
from turnmemory.agent.headless import OutputFormat, RunRequest, run_headless
from turnmemory.agent.store import SessionStore, SessionStoreError, open_store

__all__ = ["register"]

_Provider = Annotated[
    str | None,
    typer.Option(
        "--provider",
        help="anthropic, openai_chat, openai_responses, gemini or bedrock (default: config, then anthropic).",
    ),
]
_Model = Annotated[
    str | None, typer.Option("--model", help="Model name (default: config, then the provider's default).")
]
_BaseUrl = Annotated[
    str | None, typer.Option("--base-url", help="Provider endpoint (an OpenAI-compatible server...).")
]
_Config = Annotated[
    Path | None,
    typer.Option("--config", help="Config file (default: $TURNMEMORY_CONFIG or the user config)."),
]
_Workspace = Annotated[
    Path | None, typer.Option("--workspace", help="Workspace directory (default: the current one).")
]
_Allow = Annotated[
    list[str] | None,
    typer.Option(
        "--allow",
        help="Permission rule, repeatable: bash, 'bash:git *', write, edit, read, web, mcp, all, dangerous.",
    ),
]
_Sandbox = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        help="Where bash runs: workspace-write (default where bubblewrap works), read-only or off.",
    ),
]

_Timeout = Annotated[
    float | None,
    typer.Option("--timeout", help="Seconds to wait for the provider's next bytes (default 300)."),
]
_Deadline = Annotated[
    float | None,
    typer.Option("--deadline", help="Seconds a turn may take, tools included (default: none)."),
]

_Boundary = Annotated[
    str | None,
    typer.Option(
        "--boundary",
        help="When a finished turn gives way to its TurnMemory: every_turn (default) or when_it_pays.",
    ),
]
_ToolHistory = Annotated[
    str | None,
    typer.Option(
        "--tool-history",
        help="memory (default) or full: earlier turns' raw trace, kept in this process only.",
    ),
]
_MaxToolRounds = Annotated[
    int | None,
    typer.Option(
        "--max-tool-rounds",
        min=1,
        help="Tool rounds one turn may run before it ends incomplete (default: config, then 10000).",
    ),
]


_OPTIONS: Mapping[str, Any] = {
    "provider": _Provider,
    "model": _Model,
    "base_url": _BaseUrl,
    "allow": _Allow,
    "sandbox": _Sandbox,
    "timeout": _Timeout,
    "deadline": _Deadline,
    "boundary": _Boundary,
    "tool_history": _ToolHistory,
    "max_tool_rounds": _MaxToolRounds,
    "config": _Config,
    "workspace": _Workspace,
}
"""The options commands share, by name: the settings' flags (see :data:`turnmemory.agent.config.SETTINGS`),
``--config`` and ``--workspace``."""


@dataclass(frozen=True, slots=True)
class _Given:
    """The shared options a command was given (``None``: not given)."""

    flags: Mapping[str, Any]
    """The settings' flags, by setting name."""
    config: Path | None = None
    workspace: Path | None = None

    @property
    def session_model(self) -> bool:
        """Neither ``--provider`` nor ``--model`` was given: a continued session keeps its own model."""
        return self.flags.get("provider") is None and self.flags.get("model") is None

    def settings(self) -> AgentConfig:
        """The configuration these options, the environment and the config file give."""
        return load_config(config_path=self.config, **self.flags)


def _taking(*names: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the shared options ``names`` (of :data:`_OPTIONS`), after its own, as one
    :class:`_Given` in its parameter ``given``; Typer reads the options from the signature."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "given"]
        shared = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_OPTIONS[name])
            for name in names
        ]

        @functools.wraps(command)
        def run_command(**values: Any) -> None:
            flags = {name: values.pop(name) for name in names}
            config, workspace = flags.pop("config", None), flags.pop("workspace", None)
            command(**values, given=_Given(flags, config, workspace))

        run_command.__signature__ = inspect.Signature([*own, *shared])  # type: ignore[attr-defined]
        return run_command

    return decorate


def _fail(message: str) -> typer.Exit:
    _warn(message)
    return typer.Exit(2)


def _warn(message: str) -> None:
    print(f"turnmemory: {terminal_safe(message, multiline=False)}", file=sys.stderr)


def _open_store() -> SessionStore:
    """The default store, with what opening it found on stderr; a store that cannot open fails in one line."""
    try:
        store = open_store(store_url())
    except (ConfigError, SessionStoreError) as error:
        raise _fail(str(error)) from None
    for notice in store.notices:
        _warn(notice)
    return store


def _workspace(path: Path | None) -> str:
    return os.path.realpath(path if path is not None else os.getcwd())


@_taking(*_OPTIONS)
def run(
    prompt: Annotated[
        str,
        typer.Argument(
            metavar="PROMPT", help="The prompt; '-' reads it from stdin; @path attaches a file or an image."
        ),
    ],
    session: Annotated[
        str | None, typer.Option("--session", help="Continue this session (id or prefix).")
    ] = None,
    continue_: Annotated[
        bool, typer.Option("--continue", help="Continue the workspace's latest session.")
    ] = False,
    output: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
    *,
    given: _Given,
) -> None:
    """Run one turn headless, for scripts.

    Prose goes to stdout, one line per tool to stderr, then the session id. Nothing waits for input:
    reads in the workspace and bash commands the sandbox contains run; anything that would ask in
    chat (writes, edits, commands outside the sandbox or with it off, dangerous commands, web, reads
    outside the workspace, MCP) is denied unless an --allow rule grants it. Exit status: 0 done, 1
    incomplete, failed or cut at the output limit, 2 bad usage or configuration.
    """
    if output not in ("text", "json"):
        raise _fail(f"--format: expected text or json, got {output!r}")
    if session is not None and continue_:
        raise _fail("--session and --continue exclude each other")
    text = sys.stdin.read() if prompt == "-" else prompt
    if not text.strip():
        raise _fail("the prompt is empty")
    form: OutputFormat = "json" if output == "json" else "text"
    try:
        settings = given.settings()
        request = RunRequest(
            prompt=text,
            workspace=_workspace(given.workspace),
            session=session,
            latest=continue_,
            output=form,
            session_model=given.session_model,
        )
        status = run_headless(settings, request)
    except (ConfigError, SessionStoreError) as error:
        raise _fail(str(error)) from None
    except KeyboardInterrupt:
        print("turnmemory: interrupted", file=sys.stderr)
        raise typer.Exit(130) from None
    raise typer.Exit(status)


@_taking(*_OPTIONS)
def chat(
    session_id: Annotated[
        str | None,
        typer.Argument(metavar="ID", help="With --resume: the session to resume (id or prefix)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Resume session ID, or without ID the workspace's latest.")
    ] = False,
    continue_: Annotated[
        bool, typer.Option("--continue", help="Continue the workspace's latest session.")
    ] = False,
    *,
    given: _Given,
) -> None:
    """Chat with the agent in the terminal.

    turnmemory chat --continue (or --resume) continues the workspace's latest session, --resume ID a
    given one. chat needs a terminal; for a prompt from a pipe or a file use turnmemory run -.
    """
    from turnmemory.agent.repl import run_chat

    if session_id is not None and continue_:
        raise _fail(
            f"--continue takes no ID; to resume session {session_id!r} use: turnmemory chat --resume ID"
        )
    if session_id is not None and not resume:
        raise _fail(f"to resume session {session_id!r} use: turnmemory chat --resume {session_id}")
    try:
        settings = given.settings()
        if not (sys.stdin.isatty() and sys.stdout.isatty()):  # after the errors in the arguments
            raise _fail("chat needs a terminal; to run a prompt from a pipe or a file use: turnmemory run -")
        status = run_chat(
            settings,
            workspace=_workspace(given.workspace),
            session=session_id,
            latest=(resume or continue_) and session_id is None,
            session_model=given.session_model,
        )
    except (ConfigError, SessionStoreError) as error:
        raise _fail(str(error)) from None
    raise typer.Exit(status)


def sessions(
    workspace: Annotated[
        Path | None,
        typer.Option("--workspace", help="Only this workspace's sessions (default: every workspace)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many sessions to list.")] = 20,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list sessions whose turns all failed, or that have none.")
    ] = False,
    output: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
) -> None:
    """List stored sessions, most recently active first.

    Sessions of every workspace are listed unless --workspace names one; sessions without a turn that
    got an answer (empty, or every turn failed) are left out unless --all is given.
    """
    with _open_store() as store:
        try:
            found = store.sessions(
                _workspace(workspace) if workspace is not None else None, limit=limit, with_turns=not show_all
            )
        except SessionStoreError as error:
            raise _fail(str(error)) from None
    for problem in (problem for s in found for problem in s.problems):
        print(f"turnmemory: {terminal_safe(problem)}", file=sys.stderr)
    if output == "json":
        rows = [
            {
                "id": s.id,
                "workspace": s.workspace,
                "started": s.created_at,
                "updated": s.updated_at,
                "turns": s.turns,
                "last_prompt": s.last_prompt,
            }
            for s in found
        ]
        print(terminal_json(rows))
        return
    if not found:
        print("no sessions" if show_all else "no sessions with a completed turn (--all lists every session)")
        return
    width = max(80, shutil.get_terminal_size((80, 24)).columns) if sys.stdout.isatty() else 80
    places = [terminal_safe(_home_relative(s.workspace), multiline=False) for s in found]
    place_width = min(28, max(len("WORKSPACE"), *(len(place) for place in places)))
    room = width - 10 - 18 - 5 - 2 - place_width - 2
    print(f"{'ID':<10}{'STARTED':<18}{'TURNS':>5}  {'WORKSPACE':<{place_width}}  LAST PROMPT")
    for s, place in zip(found, places, strict=True):
        prompt = terminal_safe(" ".join((s.last_prompt or "").split()), multiline=False)
        print(
            f"{s.id[:8]:<10}{timestamp(s.created_at):<18}{s.turns:>5}  "
            f"{_cut_middle(place, place_width):<{place_width}}  {_cut_end(prompt, room)}"
        )


def _home_relative(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home != "/" and (path + "/").startswith(home + "/") else path


def _cut_middle(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    keep = width - 3
    return text[: keep // 2] + "..." + text[len(text) - (keep - keep // 2) :]


def _cut_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 3)] + "..."


def show(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session id or unique prefix.")],
    output: Annotated[str, typer.Option("--format", help="text or json (the stored events).")] = "text",
) -> None:
    """Print a session's transcript with each turn's TurnMemory."""
    with _open_store() as store:
        try:
            loaded = store.load(store.resolve(session_id))
        except (KeyError, SessionStoreError) as error:
            raise _fail(str(error.args[0])) from None
    if output == "json":
        events = [{"seq": e.seq, "kind": e.kind, "created_at": e.created_at, **e.data} for e in loaded.events]
        print(terminal_json({"id": loaded.info.id, "workspace": loaded.info.workspace, "events": events}))
        return
    for problem in loaded.problems:
        _warn(problem)
    print("\n".join(session_lines(loaded)))


def rewind(
    session: Annotated[
        str | None,
        typer.Option("--session", help="The session (id or prefix; default: the workspace's latest)."),
    ] = None,
    turns: Annotated[int, typer.Option("--turns", min=1, help="How many of the last turns to rewind.")] = 1,
    workspace: _Workspace = None,
) -> None:
    """Rewind a session's last turns: they leave the conversation and its memory, and the files
    write_file and edit_file changed in them get their content from before those turns back.

    A file changed since by someone else is reported and skipped. Changes made by bash commands are
    not tracked and not undone.
    """
    from turnmemory.agent._runtime import pick_session
    from turnmemory.agent.rewind import rewind as rewind_session

    place = _workspace(workspace)
    with _open_store() as store:
        try:
            session_id = pick_session(store, place, session, latest=session is None)
            assert session_id is not None
            store.claim(session_id)
            lines = rewind_session(store, session_id, turns, ask=None)
        except (ConfigError, KeyError, SessionStoreError) as error:
            raise _fail(str(error.args[0] if isinstance(error, KeyError) else error)) from None
    print("\n".join(terminal_safe(line) for line in lines))


@_taking("provider", "model", "base_url", "allow", "sandbox", "config")
def config(
    output: Annotated[str, typer.Option("--format", help="text or json.")] = "text", *, given: _Given
) -> None:
    """Print the resolved configuration and where each value came from.

    Values come from flags, then TURNMEMORY_PROVIDER, TURNMEMORY_MODEL, TURNMEMORY_BASE_URL,
    TURNMEMORY_SANDBOX and the provider's key variable, then the TOML config file ($TURNMEMORY_CONFIG,
    else the user config directory), then defaults. API keys are never printed. Exit status 1 when a
    key (or Bedrock's region or credentials) is missing: chat and run would stop for it.
    """
    from turnmemory.agent._config_report import describe_config, render_settings
    from turnmemory.agent.config import config_location, read_inputs

    path, source = config_location(given.config, os.environ)
    try:
        inputs = read_inputs(config_path=given.config, **given.flags)
        entries = describe_config(inputs, path, source)
    except ConfigError as error:
        raise _fail(f"{error} (config file: {path}, from {source})") from None
    if output == "json":
        print(terminal_json({entry.name: entry.to_json() for entry in entries}))
    else:
        width = max(80, shutil.get_terminal_size((80, 24)).columns) if sys.stdout.isatty() else 80
        print("\n".join(terminal_safe(line) for line in render_settings(entries, width)))
    if any(entry.problem for entry in entries):
        raise typer.Exit(1)


def try_() -> None:
    """Try the agent without a key: a scripted model on the bundled fake provider.

    A fresh workspace holds a small project; the model reads a file, edits it, runs a failing test
    and fixes it, asking your permission as a real one would. Nothing leaves this machine.
    """
    from turnmemory.agent.tryout import run_try

    try:
        status = run_try()
    except (ConfigError, SessionStoreError) as error:
        raise _fail(str(error)) from None
    raise typer.Exit(status)


def register(app: typer.Typer) -> None:
    """Add ``try``, ``chat``, ``run``, ``sessions``, ``show``, ``rewind`` and ``config`` to ``turnmemory``."""
    app.command("try")(try_)
    app.command("chat")(chat)
    app.command("run")(run)
    app.command("sessions")(sessions)
    app.command("show")(show)
    app.command("rewind")(rewind)
    app.command("config")(config)
