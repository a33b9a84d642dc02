"""Hostile MCP servers against ``turnmemory run`` (and ``chat``) in a pseudo-terminal at 80 columns, with a
scripted model on the fake provider server: an MCP server is trusted no more than the model.

Each run checks what the attack is after: the size of every provider request, the agent's peak memory,
what is left on disk, the processes left after ``kill -9``, and the raw bytes the terminal receives.
The servers are in ``mcp_servers/``: ``hostile_server.py`` is written with the SDK, ``raw_server.py``
by hand for what the SDK would not let a server send.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from turnmemory.agent.mcp._catalogue import SERVER_PROMPT_BYTES
from turnmemory.agent.mcp._results import PREVIEW_BYTES
from turnmemory.agent.tools import READ_FILE
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, uses a pty")

SERVERS = Path(__file__).parent / "mcp_servers"
HOSTILE = str(SERVERS / "hostile_server.py")
RAW = str(SERVERS / "raw_server.py")
HANG = str(SERVERS / "hang_server.py")
C1_NAME = "csi\u009b31mred"
RAW_C1 = "\u009b".encode()
SECRET = "ghp_" + "Z7" * 18
AGENT_KEY = "sk-ant-api03-" + "agentkey" * 6
RAW_ANSWER = "raw-answer-51c2"
MIB = 1 << 20


@dataclass(frozen=True)
class Ran:
    """One finished agent process: its exit code, every byte its terminal got, its peak memory."""

    code: int
    screen: bytes
    peak_mib: float
    """The largest resident set of the agent or of any process it waited for (its MCP servers)."""

    @property
    def text(self) -> str:
        return self.screen.decode("utf-8", errors="replace")


def server_table(name: str, *argv: str, **settings: float) -> str:
    """A ``[mcp.servers.NAME]`` table running ``python argv...``."""
    lines = [
        f"[mcp.servers.{name}]",
        f"command = {json.dumps(sys.executable)}",
        f"args = {json.dumps(list(argv))}",
    ]
    lines += [f"{key} = {value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def agent_env(data_dir: Path, tmp_path: Path) -> dict[str, str]:
    """The agent's environment: an isolated data and config directory, and a provider key the MCP
    servers must never see."""
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("TURNMEMORY_", "ANTHROPIC_"))
    }
    env.update(
        TURNMEMORY_DATA_DIR=str(data_dir),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        ANTHROPIC_API_KEY=AGENT_KEY,
        TERM="xterm-256color",
        NO_COLOR="1",
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    return env


@pytest.fixture
def run_agent(
    server: FakeProviderServer, workspace: Path, tmp_path: Path, agent_env: dict[str, str]
) -> Callable[..., Ran]:
    """``run_agent(servers, *flags)``: ``turnmemory run go`` with those ``[mcp.servers]`` tables, in a pty."""

    def run(servers: str, *flags: str) -> Ran:
        config = tmp_path / "config.toml"
        config.write_text(f"[mcp]\nstartup_timeout = 60\n\n{servers}", encoding="utf-8")
        command = [sys.executable, "-m", "turnmemory.cli", "run", "go", "--config", str(config)]
        command += ["--base-url", server.base_url("anthropic"), *flags]
        return in_pty(command, workspace, agent_env)

    return run


_PEAK = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""
"""Runs the agent and reports its peak resident set (and its children's). A process's peak counts the
memory of the process it was spawned from, so the agent is spawned from this small one, not from the
test process."""


def in_pty(command: list[str], cwd: Path, env: Mapping[str, str], timeout: float = 100) -> Ran:
    """Run ``command`` with a pseudo-terminal of 80 columns as its stdin, stdout and stderr."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    with tempfile.NamedTemporaryFile(prefix="peak-") as report:
        measured = [sys.executable, "-I", "-S", "-c", _PEAK, report.name, *command]
        process = subprocess.Popen(
            measured, cwd=cwd, env=dict(env), stdin=slave, stdout=slave, stderr=slave, start_new_session=True
        )
        os.close(slave)
        screen = _read_screen(master, process, timeout)
        code = process.wait()
        return Ran(code, screen, int(Path(report.name).read_text()) / 1024)


def _read_screen(master: int, process: subprocess.Popen[bytes], timeout: float) -> bytes:
    """Every byte the terminal gets until its last writer is gone."""
    screen = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal's last writer is gone
                    break
                if not chunk:
                    break
                screen += chunk
        else:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"the agent did not finish within {timeout:g}s:\n{screen.decode(errors='replace')}")
    finally:
        os.close(master)
    return bytes(screen)


def mcp_call(server: str, tool: str, arguments: Mapping[str, Any] | None = None) -> ToolCall:
    return ToolCall("call_mcp_tool", {"server": server, "tool": tool, "arguments": dict(arguments or {})})


def results(body: Mapping[str, Any]) -> list[str]:
    """The text of every tool result in an Anthropic request body, in order."""
    found = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block["type"] == "tool_result":
                content = block["content"]
                found.append(
                    content if isinstance(content, str) else "".join(part["text"] for part in content)
                )
    return found


def system_prompt(body: Mapping[str, Any]) -> str:
    system = body["system"]
    return system if isinstance(system, str) else "".join(part["text"] for part in system)


def server_section(prompt: str, name: str) -> str:
    """The catalogue lines of server ``name`` in a system prompt."""
    lines = prompt.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(f"server {name} "))
    end = next(
        (index for index in range(start + 1, len(lines)) if lines[index].startswith("server ")), len(lines)
    )
    return "\n".join(lines[start:end])


def request_sizes(server: FakeProviderServer) -> list[int]:
    return [len(json.dumps(request.body, ensure_ascii=False).encode()) for request in server.requests]


def notices(ran: Ran, start: str) -> list[str]:
    """The agent's one-line notices (``turnmemory: ...``) that begin with ``start``."""
    return [line for line in ran.text.splitlines() if line.startswith(f"turnmemory: {start}")]


def files_under(root: Path) -> dict[str, int]:
    return {str(path.relative_to(root)): path.stat().st_size for path in root.rglob("*") if path.is_file()}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# -- the catalogue ---------------------------------------------------------------------------------


def test_a_hostile_catalogue_is_bounded_said_once_and_cannot_shadow_a_builtin(
    run_agent: Callable[..., Ran], server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("the real notes\n", encoding="utf-8")
    server.push(
        Reply(text="A strange name.", tool_calls=[mcp_call("names", C1_NAME)]),
        Reply(text=" All of many.", tool_calls=[ToolCall("list_mcp_tools", {"server": "many"})]),
        Reply(text=" The last one.", tool_calls=[mcp_call("many", "tool_09999")]),
        Reply(text=" Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text=" Done."),
    )
    ran = run_agent(
        server_table("names", HOSTILE, "names") + server_table("many", HOSTILE, "many", "10000"),
        "--allow",
        "mcp",
    )
    assert ran.code == 0, ran.text

    sizes = request_sizes(server)
    assert len(sizes) == 5
    assert max(sizes) < 2 * SERVER_PROMPT_BYTES + 24 * 1024, sizes
    bodies = [request.body for request in server.requests]
    assert all("x" * 1024 not in json.dumps(body) for body in bodies)
    prompt = system_prompt(bodies[0])
    names, many = server_section(prompt, "names"), server_section(prompt, "many")
    assert names.splitlines()[0] == "server names (2 tools):"
    assert "- ok() - A well-named tool." in names and C1_NAME not in prompt
    assert "(2 more tools left out:" in names
    assert many.splitlines()[0] == "server many (10000 tools):"
    assert len(many.encode()) <= SERVER_PROMPT_BYTES + 200
    assert prompt.count("more tools, not listed here") == 1
    assert 'list_mcp_tools(server="many") lists them all' in many

    unknown, listing, last, read = (results(body)[-1] for body in bodies[1:])
    assert "has no tool" in unknown
    listed = json.loads(listing)
    assert listed["truncated"] is True and listed["size_bytes"] > 10_000 * 40
    assert len(listed["content"].encode()) <= PREVIEW_BYTES and "tool_00000" in listed["content"]
    assert json.loads(last)["content"] == "fine", "a tool the prompt leaves out can still be called"
    assert "the real notes" in read, "read_file is the built-in, not the server's"
    declared = [tool for tool in bodies[0]["tools"] if tool["name"] == "read_file"]
    assert [tool["description"] for tool in declared] == [READ_FILE.description]

    assert RAW_C1 not in ran.screen
    assert "names.csi\\x9b31mred" in ran.text
    assert len(notices(ran, "MCP server 'many' offers 10000 tools; the system prompt lists")) == 1
    assert notices(ran, "MCP server 'names': 2 tools left out") != []
    assert len(notices(ran, "MCP server 'names'")) == 1


# -- stderr ------------------------------------------------------------------------------------------


def test_server_stderr_is_a_bounded_tail_in_memory_and_a_failed_start_is_said_once(
    run_agent: Callable[..., Ran], server: FakeProviderServer, data_dir: Path
) -> None:
    server.push(
        Reply(text="Disk?", tool_calls=[mcp_call("flood", "disk", {"path": str(data_dir)})]),
        Reply(text=" Broken?", tool_calls=[mcp_call("broken", "t")]),
        Reply(text=" Done."),
    )
    ran = run_agent(
        server_table("flood", HOSTILE, "flood") + server_table("broken", RAW, "stderr", "192"),
        "--allow",
        "mcp",
    )
    assert ran.code == 0, ran.text
    assert ran.peak_mib < 300, "192 MiB of stderr, read twice, stays out of memory"
    disk = json.loads(results(server.requests[1].body)[-1])["content"]
    assert int(disk) < MIB, "the flood of stderr is not copied to disk"
    assert max(files_under(data_dir).values(), default=0) < MIB

    failed = notices(ran, "MCP server 'broken' failed to start: the server exited during start-up (stderr: ")
    assert len(failed) == 1, ran.text
    assert failed[0].endswith("fatal: \\x9b31mcannot start)")
    assert RAW_C1 not in ran.screen
    assert "broken.t -> error: MCP server 'broken' failed to start" in ran.text, "the retry is a tool line"
    assert "failed to start" in results(server.requests[2].body)[-1]


# -- processes ---------------------------------------------------------------------------------------


def test_kill_9_of_the_agent_takes_a_server_that_ignores_eof_and_sigterm_along(
    server: FakeProviderServer, workspace: Path, tmp_path: Path, agent_env: dict[str, str]
) -> None:
    pidfile = tmp_path / "pids"
    config = tmp_path / "config.toml"
    config.write_text(
        server_table("immortal", HOSTILE, "immortal", str(pidfile), startup_timeout=60), encoding="utf-8"
    )
    server.push(Reply(text="Parking.", tool_calls=[mcp_call("immortal", "park")]))
    command = [sys.executable, "-m", "turnmemory.cli", "run", "go", "--allow", "mcp", "--config", str(config)]
    command += ["--base-url", server.base_url("anthropic")]
    agent = subprocess.Popen(
        command, cwd=workspace, env=agent_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text().endswith("\n") and server.requests):
            assert agent.poll() is None and time.monotonic() < deadline, "the server never started"
            time.sleep(0.05)
        pids = [int(pid) for pid in pidfile.read_text().split()]
        assert all(alive(pid) for pid in pids)
        time.sleep(0.5)  # the call is in flight
        agent.send_signal(signal.SIGKILL)
        agent.wait(10)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in pids if alive(pid)] == [], "the server (or its child) outlived the agent"
    finally:
        agent.kill()
        for pid in [int(pid) for pid in pidfile.read_text().split()] if pidfile.exists() else []:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


# -- what the SDK cannot read -----------------------------------------------------------------------


def test_unreadable_and_stalling_servers_end_in_one_line_each_and_an_unallowed_call_is_denied(
    run_agent: Callable[..., Ran], server: FakeProviderServer
) -> None:
    allowed = ("junk", "deep", "badutf8", "trickle", "silent", "hang")
    calls = [mcp_call(name, "t") for name in (*allowed, "unallowed")]
    server.push(Reply(text="All of them.", tool_calls=calls), Reply(text=" Done."))
    servers = (
        server_table("junk", RAW, "junk")
        + server_table("unallowed", RAW, "junk")
        + server_table("deep", RAW, "deep", timeout=90)
        + server_table("badutf8", RAW, "badutf8")
        + server_table("trickle", RAW, "trickle", timeout=2)
        + server_table("silent", RAW, "silent", timeout=2)
        + server_table("hang", HANG, startup_timeout=2)
    )
    ran = run_agent(servers, *(flag for name in allowed for flag in ("--allow", f"mcp:{name}")))
    assert ran.code == 0, ran.text
    assert "Traceback" not in ran.text and "pydantic" not in ran.text
    lines = ran.text.splitlines()
    outcome = {
        name: next(line for line in lines if line.startswith(f"{name}.t -> "))
        for name in (*allowed, "unallowed")
    }
    assert outcome["junk"].startswith("junk.t -> ok")
    assert outcome["deep"].startswith(
        "deep.t -> error: MCP tool deep.t failed: its answer could not be read: Invalid JSON: recursion limit"
    ), "an answer the SDK cannot read fails its call at once, not after the timeout"
    assert outcome["badutf8"].startswith("badutf8.t -> ok")
    assert outcome["trickle"].startswith("trickle.t -> error: MCP tool trickle.t timed out after 2s")
    assert outcome["silent"].startswith("silent.t -> error: MCP tool silent.t timed out after 2s")
    assert outcome["hang"].startswith(
        "hang.t -> error: MCP server 'hang' failed to start: did not answer within 2s"
    )
    assert len(notices(ran, "MCP server 'junk' writes lines to stdout that are not MCP messages")) == 1
    assert len(notices(ran, "MCP server 'hang' failed to start")) == 1
    assert outcome["unallowed"].startswith("unallowed.t -> error: ") and "denied" in outcome["unallowed"]
    answers = results(server.requests[1].body)
    assert sum(RAW_ANSWER in answer for answer in answers) == 2, "the call no rule allows never ran"
    assert "denied" in answers[-1]


# -- the attacks already held --------------------------------------------------------------------------


def test_held_attacks_stay_held_large_results_back_channels_credentials_and_the_environment(
    run_agent: Callable[..., Ran], server: FakeProviderServer, data_dir: Path
) -> None:
    names = ["sample", "elicit", "roots", "secret", "leak", "environment"]
    calls = [mcp_call("controls", name) for name in names]
    calls += [mcp_call(name, "t") for name in ("huge", "items", "image")] + [mcp_call("controls", "crash")]
    server.push(Reply(text="Everything.", tool_calls=calls), Reply(text=" Done."))
    servers = (
        server_table("controls", HOSTILE, "controls")
        + server_table("huge", RAW, "huge", "8")
        + server_table("items", RAW, "items", "20000")
        + server_table("image", RAW, "image", "8")
    )
    ran = run_agent(servers, "--allow", "mcp")
    assert ran.code == 0, ran.text
    assert ran.peak_mib < 400, "large results are previewed with bounded memory"
    answers = dict(
        zip([*names, "huge", "items", "image", "crash"], results(server.requests[1].body), strict=True)
    )
    for refused in ("sample", "elicit", "roots"):
        assert "no back-channel" in answers[refused], "sampling, elicitation and roots are refused"
    assert SECRET in answers["secret"], "within the turn the model gets the result"
    assert SECRET not in answers["leak"] and "[REDACTED]" in answers["leak"]
    environment = json.loads(answers["environment"])["content"]
    assert AGENT_KEY not in environment and "ANTHROPIC_API_KEY" not in environment
    for big in ("huge", "items"):
        output = json.loads(answers[big])
        assert output["truncated"] is True and len(output["content"].encode()) <= PREVIEW_BYTES
    assert (
        json.loads(answers["image"])["content"] == f"[image: image/png, {8 * MIB // 3 * 3} bytes not shown]"
    )
    assert "closed the connection" in answers["crash"]

    assert SECRET not in ran.text and AGENT_KEY not in ran.text
    stored = b"".join(path.read_bytes() for path in data_dir.rglob("*") if path.is_file())
    for payload in (
        SECRET.encode(),
        b"item 1999",
        b"yyyy",
        b"no back-channel",
        RAW_ANSWER.encode(),
        b"HOME=",
    ):
        assert payload not in stored, f"{payload!r} is an MCP payload, never stored"
    assert max(files_under(data_dir).values(), default=0) < MIB, "spill files go with the turn"


# -- the REPL --------------------------------------------------------------------------------------------


def test_the_repl_says_at_start_up_once_that_a_server_failed(
    server: FakeProviderServer, workspace: Path, tmp_path: Path, agent_env: dict[str, str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(server_table("broken", RAW, "stderr", "1"), encoding="utf-8")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "turnmemory.cli", "chat", "--config", str(config), "--base-url", server.base_url("anthropic")],
        cwd=str(workspace),
        env=agent_env,
        timeout=60,
        dimensions=(40, 80),
    )
    screen = io.BytesIO()
    child.logfile_read = screen
    try:
        child.expect_exact("›".encode())
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert RAW_C1 not in screen.getvalue()
    text = screen.getvalue().decode("utf-8", errors="replace")
    assert text.count("MCP server 'broken' failed to start") == 1, text
    assert "fatal:\\x9b31mcannotstart)" in "".join(text.split())
