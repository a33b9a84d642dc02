"""The shapes that once survived, through the agent on all five providers: a JWT (signed or not) and a
zero-width-joined token in a ``web_fetch`` URL path and a ``read_file`` path, secrets inside multi-line
bash commands, a hex-encoded and an ``\\x``-escaped token, a token split by a line continuation and
tokens holding a Cyrillic homoglyph. No secret reaches the next request, the session database's bytes
or ``turnmemory show``; the redactor reads one normalized view in every one of those places."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.agent._support import MODELS, PROVIDERS, Run, body_text
from tests.secrets_corpus import CORPUS, Shape, visible

from turnmemory.testing import FakeProviderServer, Reply, ToolCall

SHAPES = {
    shape.name: shape
    for shape in CORPUS
    if shape.kind == "multi-line"
    or shape.name
    in {
        "jwt in a url path",
        "unsigned jwt in a path",
        "zwj ghp in a url path",
        "hex-encoded token",
        "\\x-escaped token",
        "token split by a continuation",
        "cyrillic homoglyph in ghp",
        "cyrillic homoglyph in sk-ant",
    }
}
URL_SHAPES = ("jwt in a url path", "unsigned jwt in a path", "zwj ghp in a url path")
CLOSED = "http://127.0.0.1:9"
"""A loopback address nothing listens on: the fetch fails at once, without the network."""


def _calls() -> list[ToolCall]:
    calls: list[ToolCall] = []
    for name in URL_SHAPES:
        path = SHAPES[name].text.split("://", 1)[-1].split("/", 1)[-1]
        calls.append(ToolCall("web_fetch", {"url": f"{CLOSED}/{path}"}))
        calls.append(ToolCall("read_file", {"path": f"/srv/{path}"}))
    calls += [
        ToolCall("bash", {"command": "exit 3\n" + shape.text})
        for name, shape in SHAPES.items()
        if name not in URL_SHAPES
    ]
    return calls


def _found(shape: Shape, text: str) -> list[str]:
    seen = visible(text)
    return [secret for secret in shape.secrets if secret in text or visible(secret) in seen]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_shapes_that_once_survived_leave_nothing_on_any_provider(
    provider: str, cli: Run, server: FakeProviderServer, workspace: Path, data_dir: Path
) -> None:
    calls = _calls()
    server.push(Reply(text="Trying them.", tool_calls=calls), Reply(text="All failed."), Reply(text="Noted."))
    common = ["--provider", provider, "--model", MODELS[provider], "--base-url", server.base_url(provider)]
    env: dict[str, Any] = {"GEMINI_API_KEY": "test-key", "AWS_REGION": "us-east-1"}
    first = cli(
        "run", *common, "--sandbox", "off", "--allow", "all", "--allow", "dangerous", "go", extra_env=env
    )
    assert first.stderr.count("-> exit 3") == len(SHAPES) - len(URL_SHAPES), first.stderr
    turn_end = len(server.requests)
    second = cli("run", *common, "--continue", "what happened?", extra_env=env)
    session = next(line.split()[1] for line in second.stderr.splitlines() if line.startswith("session "))
    shown = cli("show", session).stdout

    next_request = body_text(server.requests[turn_end].body)
    stored = b"".join(path.read_bytes() for path in sorted(data_dir.glob("sessions.sqlite3*")))
    places = {
        "next request": next_request,
        "database": stored.decode("utf-8", errors="replace"),
        "show": shown,
        "run output": first.stdout + first.stderr,
    }
    leaks = [
        f"{name} in {where}: {secret[:24]}"
        for name, shape in SHAPES.items()
        for where, text in places.items()
        for secret in _found(shape, text)
    ]
    assert leaks == []
    assert "[REDACTED]" in next_request and "[REDACTED]" in shown, "the calls are remembered, redacted"
