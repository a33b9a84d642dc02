"""No bash command outlives the agent, nor its own end: ``kill -9`` of ``turnmemory run`` takes its command
and the command's background processes with it; a command that ends, times out or prints too much leaves
nothing running, sandboxed or not."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from turnmemory.agent.bash._sandbox import SandboxMode, open_sandbox, sandbox_unavailable
from turnmemory.agent.tools import ToolContext, ToolError, ToolRegistry, _reaper, builtin_tools, shell
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

Run = Callable[..., subprocess.CompletedProcess[str]]
REGISTRY = ToolRegistry(builtin_tools(subagent=lambda agent, task: ""))
UNAVAILABLE = sandbox_unavailable()
MODES = [
    pytest.param(
        "workspace-write",
        marks=pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no bash sandbox: {UNAVAILABLE}"),
    ),
    "off",
]
LATE = 1.0
"""How long the scripted background work sleeps before it writes its marker file."""


def _late_writers(tag: str) -> str:
    """Background work that writes ``late-*`` files after a second, each escaping its parent another
    way: a subshell, a grandchild through ``sh -c``, one that left the process group (``setsid``), a
    daemon that left its session and was orphaned (``setsid -f``), a double fork, and ``nohup``."""
    writers = [
        f"(sleep {LATE}; echo late > late-{tag}-subshell) &",
        f"sh -c 'sleep {LATE}; echo late > late-{tag}-grandchild' &",
        f"setsid sh -c 'sleep {LATE}; echo late > late-{tag}-setsid' &",
        f"setsid -f sh -c 'sleep {LATE}; echo late > late-{tag}-daemon';",
        f"( (sleep {LATE}; echo late > late-{tag}-double) & ) &",
        f"nohup sh -c 'sleep {LATE}; echo late > late-{tag}-nohup' >/dev/null 2>&1 &",
    ]
    return " ".join(writers)


def _assert_nothing_late(workspace: Path) -> None:
    time.sleep(LATE + 2)
    assert sorted(p.name for p in workspace.glob("late-*")) == []


@pytest.mark.parametrize("mode", MODES)
def test_kill_9_of_the_agent_kills_its_command(
    mode: SandboxMode, cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    command = f"{_late_writers('agent')} echo started > started; sleep 30"
    server.push(Reply(text="Working.", tool_calls=[ToolCall("bash", {"command": command})]))
    url = server.base_url("anthropic")
    agent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "turnmemory.cli",
            "run",
            "--base-url",
            url,
            "--sandbox",
            mode,
            "--allow",
            "bash",
            "work",
        ],
        cwd=workspace,
        env=cli.env,  # type: ignore[attr-defined]
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (workspace / "started").exists():
            assert agent.poll() is None, "the agent ended before its command started"
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
    finally:
        agent.kill()
        agent.wait()
    _assert_nothing_late(workspace)


def _context(mode: SandboxMode, workspace: Path, tmp_path: Path) -> ToolContext:
    sandbox, _ = open_sandbox(mode, str(workspace))
    return ToolContext(workspace=str(workspace), spill_dir=str(tmp_path / "spill"), sandbox=sandbox)


def _bash(ctx: ToolContext, command: str, timeout: int = 30) -> dict[str, object]:
    return REGISTRY.prepare("bash", {"command": command, "timeout": timeout}, ctx).run()


@pytest.mark.parametrize("mode", MODES)
def test_a_command_that_ends_or_times_out_leaves_nothing_running(
    mode: SandboxMode, workspace: Path, tmp_path: Path
) -> None:
    ctx = _context(mode, workspace, tmp_path)
    start = time.monotonic()
    assert _bash(ctx, f"{_late_writers('ended')} echo done")["stdout"] == "done\n"
    with pytest.raises(ToolError, match="timed out after 1 s and its process group was killed"):
        _bash(ctx, f"{_late_writers('timeout')} sleep 30", timeout=1)
    assert time.monotonic() - start < LATE + 1, "the command waited for its background work"
    _assert_nothing_late(workspace)


@pytest.mark.parametrize("mode", MODES)
def test_a_command_that_prints_without_end_is_stopped(
    mode: SandboxMode, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell, "MAX_OUTPUT_BYTES", 2_000_000)
    ctx = _context(mode, workspace, tmp_path)
    for command in ("yes", "yes >&2", "cat /dev/zero & cat /dev/zero >&2"):
        with pytest.raises(ToolError, match="printed more than 2000000 bytes") as error:
            _bash(ctx, command)
        files = str(error.value).split("partial output in ")[1].split(", ")
        # the size is checked between waits, so a fast writer overshoots the cap a little; unchecked,
        # it would write tens of gigabytes before the 30 s timeout
        assert sum(os.path.getsize(path) for path in files) < 1_000_000_000


@pytest.mark.parametrize("go", [b"", b"go\n"])
def test_a_command_runs_only_after_its_group_is_registered(workspace: Path, go: bytes) -> None:
    """The agent says go once the watchdog knows the command's group; an agent killed before that
    closes the pipe without a word, and the command never starts (it could not be reaped)."""
    gate, opened = os.pipe()
    process = subprocess.Popen(
        ["/bin/sh", "-c", _reaper._SHELL_GATE, "gate", "sh", "-c", "echo ran > ran; cat"],
        cwd=workspace,
        stdin=gate,
        stdout=subprocess.PIPE,
    )
    os.close(gate)
    os.write(opened, go)
    os.close(opened)
    out, _ = process.communicate(timeout=10)
    assert (workspace / "ran").exists() == bool(go)
    assert process.returncode == (0 if go else 125)
    assert out == b""  # the command reads /dev/null, not the gate
