"""The secrets corpus through the agent end to end: ``turnmemory run`` runs a command per shape (and
calls a tool named like a token) against the fake server; no secret reaches the next turn's request,
the session database's bytes, ``turnmemory show`` or the run's own output."""

from __future__ import annotations

from pathlib import Path

from tests.agent._support import Run, body_text
from tests.secrets_corpus import CORPUS, Shape, visible

from turnmemory.testing import FakeProviderServer, Reply, ToolCall


def _command(shape: Shape) -> str:
    """A command that carries the shape but runs nothing of it (it fails first, with exit code 3)."""
    return "exit 3\n" + shape.text.replace("\x00", "")


def _found(shape: Shape, text: str) -> list[str]:
    seen = visible(text)
    return [secret for secret in shape.secrets if secret in text or visible(secret) in seen]


def test_no_secret_of_the_corpus_survives_a_session(
    cli: Run, server: FakeProviderServer, workspace: Path, data_dir: Path
) -> None:
    tool_named = [shape for shape in CORPUS if shape.name == "tool name get_sk-ant"]
    calls = [ToolCall("bash", {"command": _command(shape)}) for shape in CORPUS]
    calls += [ToolCall(shape.text, {"path": "x"}) for shape in tool_named]
    server.push(
        Reply(text="Running them.", tool_calls=calls[: len(calls) // 2]),
        Reply(text="And the rest.", tool_calls=calls[len(calls) // 2 :]),
        Reply(text="All failed."),
        Reply(text="Noted."),
    )
    common = ["--provider", "openai_chat", "--base-url", server.base_url("openai_chat")]
    # The commands exit before anything of the shape runs, so the sandbox adds only start-up time.
    first = cli(
        "run", *common, "--sandbox", "off", "--allow", "all", "--allow", "dangerous", "run the commands"
    )
    assert first.stderr.count("-> exit 3") == len(CORPUS), first.stderr
    turn_end = len(server.requests)
    second = cli("run", *common, "--continue", "what happened?")
    session = next(line.split()[1] for line in second.stderr.splitlines() if line.startswith("session "))
    shown = cli("show", session).stdout

    next_request = body_text(server.requests[turn_end].body)
    assert next_request.count('exit_code\\":3') == len(CORPUS), "every failed command is remembered"
    stored = b"".join(path.read_bytes() for path in sorted(data_dir.glob("sessions.sqlite3*")))
    assert stored, "the session database exists"
    places = {
        "next request": next_request,
        "database": stored.decode("utf-8", errors="replace"),
        "show": shown,
        "run output": first.stdout + first.stderr + second.stdout + second.stderr,
    }
    leaks = [
        f"{shape.name} in {where}: {secret[:24]}"
        for shape in CORPUS
        for where, text in places.items()
        for secret in _found(shape, text)
    ]
    assert leaks == []
    assert "[REDACTED]" in next_request and "[REDACTED]" in shown


def test_previews_of_real_tool_output_keep_no_secret(
    cli: Run, server: FakeProviderServer, workspace: Path, data_dir: Path
) -> None:
    shapes = {shape.name: shape for shape in CORPUS}
    pem = shapes["pem block"]
    body_lines = [line for line in pem.text.splitlines() if "-----" not in line]
    (workspace / "server.pem").write_text(pem.text + "\n")
    password = shapes["json password in a command"].secrets[0]
    (workspace / "creds.json").write_text(f'{{"user": "bob", "password": "{password}"}}\n')
    server.push(
        Reply(
            text="Looking.",
            tool_calls=[
                ToolCall("grep", {"pattern": "[A-Za-z0-9+/]{60}"}),
                ToolCall("bash", {"command": "cat creds.json; tail -n 3 server.pem"}),
                ToolCall("bash", {"command": f"printf '%s' '{body_lines[0]}' >&2; exit 2"}),
            ],
        ),
        Reply(text="Found them."),
    )
    done = cli(
        "run",
        "--provider",
        "openai_chat",
        "--base-url",
        server.base_url("openai_chat"),
        "--allow",
        "all",
        "look",
    )
    within_turn = body_text(server.requests[1].body)
    assert body_lines[1] in within_turn and password in within_turn, "the model saw the real outputs"
    stored = b"".join(path.read_bytes() for path in sorted(data_dir.glob("sessions.sqlite3*")))
    session = next(line.split()[1] for line in done.stderr.splitlines() if line.startswith("session "))
    shown = cli("show", session).stdout
    assert b"[REDACTED]" in stored, "the previews are stored, redacted"
    for secret in [*body_lines, password]:
        assert secret.encode() not in stored
        assert secret not in shown
