"""Helpers shared by the agent tests: the recording view, fast clients, provider lists, body normalization,
the three-turn scenario (its files, script and private strings), and ``chat`` in a pseudo-terminal."""

from __future__ import annotations

import contextlib
import importlib
import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect

from turnmemory.agent.bash import dangerous_reason
from turnmemory.agent.config import AgentConfig, credentials
from turnmemory.agent.permissions import Access, Permissions, parse_rules
from turnmemory.llm import Client, Event, RetryPolicy, open_client
from turnmemory.memory import Message
from turnmemory.testing import MODELS as MODELS  # the table the agent tests import from here
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

PROVIDERS = ("anthropic", "openai_chat", "openai_responses", "gemini", "bedrock")
Run = Callable[..., subprocess.CompletedProcess[str]]
"""The ``cli`` fixture: ``cli(*args, expect=0, extra_env=None, timeout=60)`` runs ``turnmemory`` in the
workspace."""


class RecordingView:
    """A :class:`~turnmemory.agent.loop.View` that keeps what it was shown."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.diffs: list[str] = []
        self.notices: list[str] = []

    def event(self, event: Event, elapsed: float | None) -> None:
        self.events.append(event)

    def diff(self, call_id: str, diff: str) -> None:
        self.diffs.append(diff)

    def notice(self, text: str) -> None:
        self.notices.append(text)


def fast_client(config: AgentConfig, session_id: str | None) -> Client:
    """Clients that give up at once instead of retrying with real delays."""
    return open_client(
        config.provider,
        model=config.model,
        base_url=config.base_url,
        api_key=credentials(config),
        region=config.region,
        session_id=session_id,
        retry=RetryPolicy(attempts=1),
        boundary=config.client_boundary,
    )


# -- request bodies -------------------------------------------------------------------------------


def body_text(body: Any) -> str:
    """A request body as one string, for absence checks."""
    return json.dumps(body, ensure_ascii=False)


def tool_results(body: Any) -> list[str]:
    """The tool results an OpenAI Chat request carries, in order (an error as ``{"error": ...}`` text)."""
    return [str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]


def leaked_into(secret: str, server: FakeProviderServer, data_dir: Path, *texts: str) -> list[str]:
    """Where ``secret`` shows up: a request to the model, a file of the data directory (the session
    database and its journal included), or one of ``texts`` (the run's stdout, stderr...)."""
    places = [
        f"request {n}" for n, request in enumerate(server.requests) if secret in body_text(request.body)
    ]
    if data_dir.exists():
        places += [
            str(path)
            for path in data_dir.rglob("*")
            if path.is_file() and secret.encode() in path.read_bytes()
        ]
    return places + [f"text {n}" for n, text in enumerate(texts) if secret in text]


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda match: "_" + match.group(1).lower(), key)


def normalized(value: Any) -> Any:
    """A request fragment without cache markers, with snake_case keys (Gemini's SDK sends camelCase)."""
    if isinstance(value, dict):
        return {
            _snake(k): normalized(v) for k, v in value.items() if k not in ("cache_control", "cachePoint")
        }
    if isinstance(value, list):
        return [
            normalized(item) for item in value if not (isinstance(item, dict) and set(item) == {"cachePoint"})
        ]
    return value


def expected_request(provider: str, history: list[Message]) -> dict[str, Any]:
    """What the provider formatter makes of ``history``, normalized like a body."""
    module = importlib.import_module(f"turnmemory.providers.{provider}")
    return normalized(module.to_request(history))  # type: ignore[no-any-return]


def conversation_of(body: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``body`` that the formatter produced (system, messages...), normalized."""
    plain = normalized(body)
    return {key: plain.get(key) for key in expected}


FILE_SECRET = "DISTINCTIVE-FILE-CONTENT-7f3a"
"""The content of the three-turn scenario's notes file; no later request may carry it."""
OUTPUT_SECRET = "RAW-COMMAND-OUTPUT-91c2"
"""What the scenario's failing command prints; no later request may carry it."""
COMMAND = "printf 'RAW-COMMAND-OUTPUT-%s' 91c2; exit 4"
"""The scenario's failing bash command (it prints OUTPUT_SECRET without containing it)."""


def scenario_files(workspace: Path) -> None:
    """The files the three-turn scenario reads and edits."""
    (workspace / "notes.txt").write_text(f"{FILE_SECRET}\n")
    (workspace / "app.py").write_text("value = 1\n")


def three_turn_script() -> list[Reply]:
    """Turn 1 reads the notes; turn 2 edits app.py and runs a failing command; turn 3 answers."""
    return [
        Reply(text="Reading notes.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="They say hello."),
        Reply(
            text="Editing.",
            tool_calls=[
                ToolCall("edit_file", {"path": "app.py", "oldString": "value = 1", "newString": "value = 22"})
            ],
        ),
        Reply(text="Checking.", tool_calls=[ToolCall("bash", {"command": COMMAND})]),
        Reply(text="It failed."),
        Reply(text="Summary."),
    ]


def run_openai_chat(
    cli: Run,
    server: FakeProviderServer,
    *args: str,
    expect: int | None = 0,
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``turnmemory run --provider openai_chat`` against the fake server, with more ``args``."""
    base = ("run", "--provider", "openai_chat", "--base-url", server.base_url("openai_chat"))
    return cli(*base, *args, expect=expect, extra_env=extra_env)


# -- the sessions store, behind its back ------------------------------------------------------------


def tamper(url: str, statement: str, params: tuple[Any, ...] = ()) -> int:
    """Run one SQL statement on a store's tables behind its back (as a disk, a crash or a hand edit
    would); ``{sessions}`` and ``{events}`` name its tables, ``?`` marks a parameter. Rows changed."""
    if url.startswith("sqlite://"):
        import sqlite3

        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite://"))) as db, db:
            return db.execute(statement.format(sessions="sessions", events="events"), params).rowcount
    import psycopg

    sql = statement.replace("%", "%%").replace("?", "%s")
    with psycopg.connect(url, autocommit=True) as db:
        tables = {"sessions": "turnmemory_sessions", "events": "turnmemory_events"}
        return db.execute(sql.format(**tables), params).rowcount


# -- bash rules -----------------------------------------------------------------------------------

HERE = os.path.realpath(Path(__file__).parent)
"""A real directory to decide bash scripts in: it holds no Makefile, package.json or option-named file."""


def decide(command: str, *rules: str, workspace: str = HERE, escalated: bool = False) -> tuple[bool, str]:
    """Whether the rules (``bash:git *`` when none) grant the bash script headless, and the reason."""
    access = Access(
        "bash", command, dangerous=dangerous_reason(command), escalation="x" if escalated else None
    )
    decision = Permissions(workspace, parse_rules(rules or ("bash:git *",))).decide(access)
    return decision.allowed, decision.reason


_SCREENS = itertools.count()


def chat_env(data_dir: Path, tmp_path: Path, *, colour: bool = False, **extra: str) -> dict[str, str]:
    """The environment of a ``turnmemory chat`` under test: this process's, without ``TURNMEMORY_*``,
    with an isolated data and config directory, test keys, an xterm that answers no cursor-position
    request, ``NO_COLOR`` unless ``colour``, and ``extra``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TURNMEMORY_")}
    env.pop("NO_COLOR", None)
    env.update(
        TURNMEMORY_DATA_DIR=str(data_dir),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        ANTHROPIC_API_KEY="test-key",
        OPENAI_API_KEY="test-key",
        TERM="xterm-256color",
        PROMPT_TOOLKIT_NO_CPR="1",
        **({} if colour else {"NO_COLOR": "1"}),
        **extra,
    )
    return env


def spawn_chat(
    server: FakeProviderServer,
    workspace: Path,
    data_dir: Path,
    tmp_path: Path,
    *args: str,
    provider: str | None = None,
    colour: bool = False,
    binary: bool = False,
    dimensions: tuple[int, int] = (40, 80),
    **env: str,
) -> pexpect.spawn:
    """``turnmemory chat`` against ``server`` in a pseudo-terminal (40 x 80 unless ``dimensions``), with
    the default provider (Anthropic) unless ``provider``, reading text (bytes when ``binary``); what it
    draws is also written to a ``screen-N.txt`` file in ``tmp_path``, named by
    ``child.logfile_read.name``."""
    chosen = ["--provider", provider] if provider else []
    url = server.base_url(provider or "anthropic")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "turnmemory.cli", "chat", *chosen, "--base-url", url, *args],
        cwd=str(workspace),
        env=chat_env(data_dir, tmp_path, colour=colour, **env),
        encoding=None if binary else "utf-8",
        timeout=30,
        dimensions=dimensions,
    )
    log = tmp_path / f"screen-{next(_SCREENS)}.txt"
    child.logfile_read = log.open("wb") if binary else log.open("w", encoding="utf-8")
    return child
