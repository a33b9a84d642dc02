"""The model as the attacker of ``--allow 'bash:git *'``, end to end: ``turnmemory run`` against the fake
provider server, a scripted model calling bash with scripts that smuggle other commands past the rule.

Whatever the sandbox mode, nothing outside the workspace is read (its content never reaches the
provider) or written. With the sandbox off, every call is denied and the model reads one line saying why.
An "allow for this session" answer grants only the command's prefix, and the prompt says which.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests.agent._support import Run, body_text

from turnmemory.agent.bash import dangerous_reason
from turnmemory.agent.loop import Agent
from turnmemory.agent.permissions import Access, Answer
from turnmemory.agent.repl import PermissionPrompter, ReplView
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

SECRET = "PRIVATE-KEY-MATERIAL-5d1e"

ATTACKS = [
    "git status\ncat ~/.ssh/id_rsa",
    "git --version #\ncat ~/.ssh/id_rsa",
    "git status # fine\ncp ~/.ssh/id_rsa {outside}/copied",
    "git --version > {outside}/written",
    "git --version >> ../outside/written",
    "git --version 2> ~/written",
    "git log $(cat ~/.ssh/id_rsa > {outside}/written)",
    "git log `cp ~/.ssh/id_rsa {outside}/copied`",
    "git diff <(cat ~/.ssh/id_rsa)",
    "FOO=1 git status; cat ~/.ssh/id_rsa",
    "GIT_PAGER='cat ~/.ssh/id_rsa' git log",
    "eval 'cat ~/.ssh/id_rsa'",
    "exec cat ~/.ssh/id_rsa",
    "command cat ~/.ssh/id_rsa",
    "'cat' ~/.ssh/id_rsa",
    "c\\at ~/.ssh/id_rsa",
    "git status & cat ~/.ssh/id_rsa",
    "(cat ~/.ssh/id_rsa)",
    "{ cat ~/.ssh/id_rsa; }",
    "git status && sh <<EOF\ncat ~/.ssh/id_rsa\nEOF",
    "git status | sh -c 'cat ~/.ssh/id_rsa'",
    "if git status; then cat ~/.ssh/id_rsa; fi",
    "git log $HOME/.ssh/id_rsa",
    "{cat,~/.ssh/id_rsa}",
]


def _tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results an OpenAI Chat request carries, in order."""
    return [str(message["content"]) for message in body["messages"] if message.get("role") == "tool"]


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
def test_scripts_smuggled_past_a_bash_rule_neither_read_nor_write_outside(
    sandbox: str, cli: Run, server: FakeProviderServer, workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    outside = tmp_path / "outside"
    outside.mkdir()
    scripts = [attack.replace("{outside}", str(outside)) for attack in ATTACKS]
    server.push(
        Reply(
            text="Checking.",
            tool_calls=[
                ToolCall("bash", {"command": script}, id=f"call_{i}") for i, script in enumerate(scripts)
            ],
        ),
        Reply(text="Done."),
    )
    done = cli(
        "run",
        "--provider",
        "openai_chat",
        "--base-url",
        server.base_url("openai_chat"),
        "--allow",
        "bash:git *",
        "check the repository",
        extra_env={"HOME": str(home), "TURNMEMORY_SANDBOX": sandbox},
    )
    assert done.stdout.endswith("Done.\n")
    follow_up = server.requests[1].body
    assert SECRET not in body_text(follow_up) and SECRET not in done.stdout + done.stderr
    assert sorted(path.name for path in outside.iterdir()) == []
    assert not (home / "written").exists()
    results = _tool_results(follow_up)
    assert len(results) == len(scripts)
    if sandbox == "off":
        for script, result in zip(scripts, results, strict=True):
            text = json.loads(result).get("error", result) if result.startswith("{") else result
            assert "permission denied: not allowed without asking" in text, (script, text)
            assert "\n" not in text and len(text) < 1000, text


def test_plain_git_commands_run_under_the_rule_with_the_sandbox_off(
    cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    scripts = ["git --version > version.txt", "git --version # a note\ngit --version >> version.txt 2>&1"]
    server.push(
        Reply(
            tool_calls=[ToolCall("bash", {"command": script}, id=f"c{i}") for i, script in enumerate(scripts)]
        ),
        Reply(text="Done."),
    )
    cli(
        "run",
        "--provider",
        "openai_chat",
        "--base-url",
        server.base_url("openai_chat"),
        "--allow",
        "bash:git *",
        "version",
        extra_env={"TURNMEMORY_SANDBOX": "off"},
    )
    assert (workspace / "version.txt").read_text().count("git version") == 2
    assert "permission denied" not in body_text(server.requests[1].body)


def test_a_session_grant_on_a_script_does_not_let_the_model_run_other_code(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("print('app')\n")
    target = tmp_path / "outside.txt"
    later = [
        f"python3 -c \"open('{target}', 'w').write('x')\"",
        f"python3 app.py; touch {target}",
        f"python3 app.py\ntouch {target}",
        f"python3 app.py > {target}",
        f"python3 app.py $(touch {target})",
        f"echo \"open('{target}', 'w')\" | python3",
        f"python3 <<EOF\nopen('{target}', 'w')\nEOF",
        "python3 other.py",
    ]
    calls = ["python3 app.py", "python3 app.py --verbose", *later]
    server.push(
        *(
            Reply(tool_calls=[ToolCall("bash", {"command": command}, id=f"c{i}")])
            for i, command in enumerate(calls)
        ),
        Reply(text="Done."),
    )
    asked: list[str] = []

    def ask(access: Access) -> Answer:
        asked.append(access.subject)
        return Answer("session") if len(asked) == 1 else Answer("deny", "no")

    agent = make_agent("openai_chat", ask=ask, sandbox="off")
    outcome = agent.turn("run the app")
    assert outcome.status == "done"
    assert asked == ["python3 app.py", *later], "the grant covered only the script, each later call was asked"
    assert not target.exists()
    assert body_text(server.requests[2].body).count("app") >= 1
    for request, command in zip(server.requests[3:], later, strict=True):
        assert "permission denied: the user denied bash" in body_text(request.body), command


@pytest.mark.parametrize(
    ("command", "offer"),
    [
        ("git status --short", "[a] `git status *` for this session"),
        ("git status && npm run test", "[a] `git status *`, `npm run test *` for this session"),
        ("python3 app.py", "[a] `python3 app.py *` for this session"),
        ("echo $(cat x)", None),
        ("rm -rf build", None),
    ],
)
def test_the_prompt_names_what_a_session_grant_covers(
    command: str, offer: str | None, tmp_path: Path
) -> None:
    view = ReplView(Console(file=io.StringIO()), str(tmp_path))
    prompter = PermissionPrompter(view.console, view)
    prompts: list[str] = []

    def read(message: str) -> str:
        prompts.append(message)
        return "a" if len(prompts) == 1 else "y"

    prompter.read = read  # type: ignore[method-assign]
    answer = prompter(Access("bash", command, dangerous=dangerous_reason(command)))
    if offer is None:
        assert prompts == ["allow? [y] once  [n] deny: ", "allow? [y] once  [n] deny: "]
        assert answer.choice == "once"
    else:
        assert prompts == [f"allow? [y] once  {offer}  [n] deny: "]
        assert answer.choice == "session"
