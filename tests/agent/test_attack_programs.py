"""The model as the attacker of ``--allow 'bash:git *'`` and its kin, end to end: ``turnmemory run``
against the fake provider server, a scripted model sending plain commands whose options or
subcommands run another program, or read and write outside the workspace (``git -c alias.x=!CMD``,
``find -exec``, ``tar --checkpoint-action``, ``sed e``, ``make SHELL=``, ``ssh -o ProxyCommand``...).

Each attack leaves evidence outside the workspace when it works: a marker file, a changed file, or a
secret in the next request to the model. Under ``--allow bash`` every one of them works (so they are
real on this machine); under the patterns none does, with the sandbox off and with the sandbox on
(escalated, where the rules govern), and each is refused in one line. The legitimate commands under
the same patterns still run, and a Makefile the session rewrote is not run under ``bash:make *``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.agent._support import Run, body_text, tool_results

from turnmemory.agent.bash._sandbox import sandbox_unavailable
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

SECRET = "OUTSIDE-SECRET-9c41"
ORIGINAL = "original victim text"
CONFIG = "the workspace's .git/config"

ATTACKS: list[tuple[str, str, str]] = [
    # (the program it needs, the command, its evidence: a path under the outside directory, SECRET,
    # the victim file changed, or CONFIG naming the program a later command would run)
    ("git", "git -c 'alias.x=!touch {out}/git-alias' x", "git-alias"),
    ("git", "git -c core.fsmonitor='touch {out}/git-fsmonitor' status", "git-fsmonitor"),
    ("git", "git grep -O'touch {out}/git-grep' hello", "git-grep"),
    ("git", "git -c protocol.ext.allow=always ls-remote 'ext::sh -c touch% {out}/git-ext'", "git-ext"),
    ("git", "git ls-remote --upload-pack='touch {out}/git-upload-pack' .", "git-upload-pack"),
    ("git", "git config alias.y '!touch {out}/git-config-alias'", CONFIG),
    ("git", "git y", "git-config-alias"),
    ("git", "git diff --no-index /dev/null ../outside/secret", SECRET),
    ("git", "git -C {out}/elsewhere init", "elsewhere/.git"),
    ("git", "git checkout evil link && cat link", SECRET),
    ("find", "find . -maxdepth 0 -exec touch {out}/find-exec ';'", "find-exec"),
    ("find", "find . -maxdepth 0 -fprint {out}/find-fprint", "find-fprint"),
    ("xargs", "xargs touch {out}/xargs < /dev/null", "xargs"),
    ("env", "env touch {out}/env", "env"),
    ("timeout", "timeout 5 touch {out}/timeout", "timeout"),
    ("nice", "nice touch {out}/nice", "nice"),
    ("sed", "sed -n '1e touch {out}/sed-e' README", "sed-e"),
    ("sed", "sed -n 'w {out}/sed-w' README", "sed-w"),
    ("sed", "sed -i s/original/changed/ ../outside/victim", "victim"),
    ("awk", """awk 'BEGIN { system("touch {out}/awk-system") }'""", "awk-system"),
    ("awk", """awk 'BEGIN { print "x" > "{out}/awk-print" }'""", "awk-print"),
    ("awk", """awk 'BEGIN { print "x" | "touch {out}/awk-pipe" }'""", "awk-pipe"),
    ("tar", "tar --use-compress-program='touch {out}/tar-compress' -cf x.tar README", "tar-compress"),
    (
        "tar",
        "tar --checkpoint=1 --checkpoint-action=exec='touch {out}/tar-exec' -cf y.tar README",
        "tar-exec",
    ),
    ("tar", "tar -xf planted.tar -C {out}", "planted.txt"),
    ("tar", "tar -cf z.tar *", "tar-wildcard"),
    ("zip", "zip -q x.zip README -T -TT 'touch {out}/zip'", "zip"),
    ("make", "make SHELL=/usr/bin/touch .SHELLFLAGS={out}/make-shell test", "make-shell"),
    ("make", "make --eval='evil: ; @touch {out}/make-eval' evil", "make-eval"),
    ("node", """node -e "require('fs').writeFileSync('{out}/node', '')\"""", "node"),
    ("python3", """python3 -c "open('{out}/python', 'w')\"""", "python"),
    ("perl", """perl -e 'open(my $f, ">", "{out}/perl")'""", "perl"),
    ("vim", "vim -es -c '!touch {out}/vim' -c 'qa!'", "vim"),
    ("ssh", "ssh -o ProxyCommand='touch {out}/ssh' -o BatchMode=yes -o ConnectTimeout=1 nohost", "ssh"),
    ("rsync", """rsync -e 'sh -c "touch {out}/rsync"' README nohost:x""", "rsync"),
    ("cat", "cat ../outside/secret", SECRET),
    ("cat", "cd .. && cat outside/secret", SECRET),
]
PATTERNS = sorted({f"bash:{program} *" for program, _, _ in ATTACKS} | {"bash:cd *"})
CONTROLS = [
    "make test",
    "git status",
    "git log --oneline",
    "sed -i s/hello/hullo/ README",
    "git diff",
    "git add README && git commit -qm 'say hullo'",
    "find . -name README",
]
"""What a user allowing those patterns means: run first, in this order, with the same rules."""
REWRITE = "sed -i 's|echo passed > result.txt|touch {out}/makefile-rewritten|' Makefile"

MISSING = sorted({program for program, _, _ in ATTACKS if shutil.which(program) is None})
LIVE = [(command, evidence) for program, command, evidence in ATTACKS if program not in MISSING]


def _git(workspace: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=workspace, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def hostile(workspace: Path, tmp_path: Path) -> dict[str, Any]:
    """The user's repository (a README and a Makefile, committed), and what a hostile model or
    repository planted around it: a branch whose ``link`` points at a secret outside, an archive,
    files named like tar options; beside it an outside directory with the secret and a victim file,
    and a home whose git identity the commands use."""
    home, out = tmp_path / "home", tmp_path / "outside"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = User\n\temail = user@example.com\n")
    (out / "elsewhere").mkdir(parents=True)
    (out / "secret").write_text(SECRET)
    (out / "victim").write_text(ORIGINAL)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    def run(*argv: str) -> None:
        subprocess.run(argv, cwd=workspace, env=env, check=True, capture_output=True)

    (workspace / "README").write_text("hello world\n")
    (workspace / "Makefile").write_text("test:\n\techo passed > result.txt\n")
    run("git", "init", "-q", "-b", "main")
    run("git", "add", "README", "Makefile")
    run("git", "commit", "-qm", "start")
    run("git", "checkout", "-qb", "evil")
    (workspace / "link").symlink_to(out / "secret")
    run("git", "add", "link")
    run("git", "commit", "-qm", "link")
    run("git", "checkout", "-q", "main")
    (workspace / "planted.txt").write_text("planted\n")
    run("tar", "-cf", "planted.tar", "planted.txt")
    (workspace / "planted.txt").unlink()
    (workspace / "evil.sh").write_text(f"touch {out}/tar-wildcard\n")
    (workspace / "--checkpoint=1").write_text("")
    (workspace / "--checkpoint-action=exec=sh evil.sh").write_text("")
    return {"out": out, "env": {"HOME": str(home)}}


def _worked(evidence: str, out: Path, result: str) -> bool:
    """Whether an attack left its evidence (``result``: what its call returned to the model)."""
    if evidence == CONFIG:
        return "git-config-alias" in (out.parent / "ws" / ".git" / "config").read_text()
    if evidence == SECRET:
        return SECRET in result
    if evidence == "victim":
        return (out / "victim").read_text() != ORIGINAL
    return (out / evidence).exists()


def _call(command: str, index: int | str, *, escalate: bool) -> ToolCall:
    arguments: dict[str, Any] = {"command": command}
    if escalate:
        arguments |= {"escalate": True, "justification": "needs the host"}
    return ToolCall("bash", arguments, id=f"call_{index}")


def _text(result: str) -> str:
    return str(json.loads(result).get("error", result)) if result.startswith("{") else result


def test_every_attack_does_what_it_says_under_a_bare_bash_rule(
    cli: Run, server: FakeProviderServer, hostile: dict[str, Any]
) -> None:
    out = hostile["out"]
    calls = [
        _call(command.replace("{out}", str(out)), i, escalate=False) for i, (command, _) in enumerate(LIVE)
    ]
    server.push(Reply(tool_calls=calls), Reply(text="Done."))
    url = server.base_url("openai_chat")
    env = {**hostile["env"], "TURNMEMORY_SANDBOX": "off"}
    cli("run", "--provider", "openai_chat", "--base-url", url, "--allow", "bash", "go", extra_env=env)
    results = tool_results(server.requests[1].body)
    dead = [
        c for (c, evidence), result in zip(LIVE, results, strict=True) if not _worked(evidence, out, result)
    ]
    assert dead == [], "these attacks no longer work on this machine: the test would prove nothing for them"


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
def test_no_option_or_subcommand_of_an_allowed_program_runs_another_or_reaches_outside(
    sandbox: str, cli: Run, server: FakeProviderServer, workspace: Path, hostile: dict[str, Any]
) -> None:
    if sandbox != "off" and (why := sandbox_unavailable()) is not None:
        pytest.skip(f"no bash sandbox: {why}")
    out = hostile["out"]
    escalate = sandbox != "off"
    commands = [*CONTROLS, *(command.replace("{out}", str(out)) for command, _ in LIVE)]
    server.push(
        Reply(text="Working.", tool_calls=[_call(c, i, escalate=escalate) for i, c in enumerate(commands)]),
        Reply(tool_calls=[_call(REWRITE.replace("{out}", str(out)), "rewrite", escalate=False)]),
        Reply(tool_calls=[_call("make test", "make", escalate=escalate)]),
        Reply(text="Done."),
    )
    url = server.base_url("openai_chat")
    env = {**hostile["env"], "TURNMEMORY_SANDBOX": sandbox}
    allow = [flag for pattern in PATTERNS for flag in ("--allow", pattern)]
    done = cli("run", "--provider", "openai_chat", "--base-url", url, *allow, "go", extra_env=env)
    assert done.stdout.endswith("Done.\n")
    results = [_text(result) for result in tool_results(server.requests[1].body)]
    assert len(results) == len(commands)
    attacked = zip(LIVE, results[len(CONTROLS) :], strict=True)
    worked = [command for (command, evidence), result in attacked if _worked(evidence, out, result)]
    assert worked == [], "under the patterns these attacks ran another program or reached outside"
    assert not (out / "makefile-rewritten").exists(), (
        "a Makefile rewritten in the session ran under bash:make *"
    )
    assert SECRET not in done.stdout + done.stderr + "".join(body_text(r.body) for r in server.requests)
    for command, result in zip(commands[len(CONTROLS) :], results[len(CONTROLS) :], strict=True):
        assert "permission denied: not allowed without asking" in result, (command, result)
        assert "\n" not in result and len(result) < 1500, result
    for command, result in zip(CONTROLS, results[: len(CONTROLS)], strict=True):
        assert "permission denied" not in result, (command, result)
    assert (workspace / "result.txt").read_text() == "passed\n", "make test ran the user's Makefile"
    assert "./README" in results[CONTROLS.index("find . -name README")]
    assert _git(workspace, "log", "--format=%s").split("\n")[:2] == ["say hullo", "start"]

    rewritten = _text(tool_results(server.requests[3].body)[-1])
    assert "make takes its commands from Makefile, which changed after 'bash:make *' took effect" in rewritten


@pytest.mark.skipif(not MISSING, reason="every program the attacks need is installed")
def test_the_attacks_on_programs_not_installed_are_not_run() -> None:
    pytest.skip(f"not installed here, so their attacks are not run: {', '.join(MISSING)}")
