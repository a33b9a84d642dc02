"""The MCP manager against real servers over the SDK: the suite's echo server, mcp-server-time, HTTP,
servers that fail to start or hang, a server killed mid-session, shutdown without leaked processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from turnmemory import TurnRecorder
from turnmemory.agent.mcp import MCP_TOOL, McpError, McpManager, McpServerConfig, compact_signature

SERVERS = Path(__file__).parent / "mcp_servers"
ECHO = str(SERVERS / "echo_server.py")
HANG = str(SERVERS / "hang_server.py")
MARK = "echo-7f3a9c"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc for child processes"
)


def echo_config(name: str = "echo", **timeouts: float) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(ECHO,), **timeouts)


def children(marker: str) -> list[tuple[int, str]]:
    """``(pid, state)`` of this process's child processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == os.getpid() and marker in command:
            found.append((int(entry.name), state))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until(condition: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpManager]:
    configs = [
        echo_config(timeout=20, startup_timeout=40),
        McpServerConfig(
            name="time",
            command=sys.executable,
            args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
            startup_timeout=40,
        ),
    ]
    with McpManager(configs, spill_dir=tmp_path_factory.mktemp("spill")) as shared:
        yield shared


def test_the_catalogue_lists_every_servers_tools(manager: McpManager) -> None:
    lines = manager.catalogue_text().splitlines()
    assert "server echo (7 tools):" in lines
    assert "- echo(text: string) - Echo the text back, marked." in lines
    assert "- add(a: integer, b: integer, mode?: string) - Add two integers; structured result." in lines
    assert "server time (2 tools):" in lines
    assert "- get_current_time(timezone: string) - Get current time in a specific timezone" in lines
    assert manager.status() == {"echo": "running (7 tools)", "time": "running (2 tools)"}


def test_a_successful_call_returns_the_servers_text(manager: McpManager) -> None:
    assert manager.call("echo", "echo", {"text": "hello"}) == {
        "server": "echo",
        "tool": "echo",
        "content": f"{MARK}: hello",
    }


def test_structured_content_is_passed_through(manager: McpManager) -> None:
    assert manager.call("echo", "add", {"a": 2, "b": 3, "mode": "doubled"}) == {
        "server": "echo",
        "tool": "add",
        "content": "",
        "structured": {"sum": 10},
    }


@pytest.mark.parametrize(
    ("server", "tool"),
    [("mcp:echo", "echo"), ("", "echo/echo"), ("echo", "mcp:echo/echo"), (" echo", "echo ")],
)
def test_names_are_normalized_before_the_call(manager: McpManager, server: str, tool: str) -> None:
    output = manager.call(server, tool, {"text": "n"})
    assert (output["server"], output["tool"], output["content"]) == ("echo", "echo", f"{MARK}: n")


def test_arguments_may_arrive_as_a_json_string(manager: McpManager) -> None:
    assert manager.call("echo", "echo", json.dumps({"text": "s"}))["content"] == f"{MARK}: s"


def test_a_tool_error_is_an_mcp_error_with_the_servers_text(manager: McpManager) -> None:
    with pytest.raises(McpError) as caught:
        manager.call("echo", "fail", {"reason": "disk on fire"})
    assert str(caught.value).startswith("MCP tool echo.fail returned an error: ")
    assert "deliberate failure: disk on fire" in str(caught.value)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"a": "1", "b": 2}, "'1' is not of type 'integer' at 'a'"),
        ({"a": 1, "b": -2}, "-2 is less than the minimum of 0 at 'b'"),
        ({"a": 1}, "'b' is a required property"),
        ({"a": 1, "b": 1, "mode": "tripled"}, "'tripled' does not match '^(plain|doubled)$' at 'mode'"),
        ([1, 2], "'arguments' must be an object, not list"),
    ],
)
def test_schema_invalid_arguments_are_refused_before_the_call(
    manager: McpManager, arguments: object, message: str
) -> None:
    with pytest.raises(McpError) as caught:
        manager.call("echo", "add", arguments)
    assert message in str(caught.value)


def test_unknown_tools_and_servers_list_what_exists(manager: McpManager) -> None:
    with pytest.raises(McpError) as caught:
        manager.call("echo", "shout", {})
    assert str(caught.value) == (
        "MCP server 'echo' has no tool 'shout'; its tools: echo, fail, add, big, pid, sleep, header"
    )
    with pytest.raises(McpError) as caught:
        manager.call("github", "search", {})
    assert str(caught.value) == "unknown MCP server 'github'; configured servers: echo, time"


def test_a_large_result_is_spilled_to_a_file_under_the_spill_dir(manager: McpManager) -> None:
    output = manager.call("echo", "big", {"size": 100_000, "char": "é"})
    path = Path(output["spill_file"])
    assert path.parent == manager.spill_dir
    assert path.read_bytes().decode() == "é" * 100_000
    assert output["truncated"] is True
    assert output["size_bytes"] == 200_000
    assert set(output["content"]) == {"é"}
    assert (output["server"], output["tool"]) == ("echo", "big")


def test_describe_shows_full_schemas(manager: McpManager) -> None:
    described = manager.describe("mcp:echo", "add")
    (tool,) = described["tools"]
    assert described["server"] == "echo"
    assert tool["name"] == "add"
    assert tool["input_schema"]["properties"]["b"]["description"] == "a non-negative addend"
    assert compact_signature(tool["input_schema"]) == "(a: integer, b: integer, mode?: string)"
    assert [entry["name"] for entry in manager.describe("time")["tools"]] == [
        "get_current_time",
        "convert_time",
    ]
    assert manager.describe()["catalogue"] == manager.catalogue_text()


def test_the_third_party_time_server_answers(manager: McpManager) -> None:
    output = manager.call("time", "get_current_time", {"timezone": "UTC"})
    assert (output["server"], output["tool"]) == ("time", "get_current_time")
    assert output["structured"]["timezone"] == "UTC"
    stamp = datetime.fromisoformat(output["structured"]["datetime"])
    assert stamp.utcoffset() is not None
    assert stamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    with pytest.raises(McpError, match=r"returned an error: .*Nowhere/Atlantis"):
        manager.call("time", "get_current_time", {"timezone": "Nowhere/Atlantis"})


def test_turn_memory_keeps_only_server_tool_and_status(manager: McpManager) -> None:
    recorder = TurnRecorder(workspace="/repo")
    recorder.text("Echoing.")
    calls = [
        ("c1", {"server": "mcp:echo", "tool": "echo/echo", "arguments": {"text": "private-argument"}}),
        ("c2", {"server": "echo", "tool": "fail", "arguments": {"reason": "private-reason"}}),
    ]
    for call_id, arguments in calls:
        recorder.tool_start(call_id, MCP_TOOL, arguments)
        try:
            output = manager.call(arguments["server"], arguments["tool"], arguments["arguments"])
        except McpError as error:
            recorder.tool_end(call_id, error=str(error))
        else:
            recorder.tool_end(call_id, output=output)
    recorder.text(" Done.")
    message = recorder.finish()
    assert message.turn_memory is not None
    assert message.turn_memory.to_dict() == {
        "tool_activity": [
            {"text_offset": 8, "tool": "echo", "status": "success", "server": "echo"},
            {"text_offset": 8, "tool": "fail", "status": "error", "server": "echo"},
        ]
    }
    stored = json.dumps(message.to_dict())
    for private in ("private-argument", "private-reason", MARK, "deliberate failure"):
        assert private not in stored


def test_calls_from_several_threads_all_complete(manager: McpManager) -> None:
    results: dict[int, str] = {}

    def work(index: int) -> None:
        results[index] = manager.call("echo", "echo", {"text": str(index)})["content"]

    threads = [threading.Thread(target=work, args=(index,)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {index: f"{MARK}: {index}" for index in range(6)}


def test_a_killed_server_is_restarted_on_the_next_call(manager: McpManager) -> None:
    first = int(manager.call("echo", "pid")["content"])
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: manager.status()["echo"] == "disconnected")
    second = int(manager.call("echo", "pid")["content"])
    assert second != first
    assert manager.status()["echo"] == "running (7 tools)"
    ((gate, state),) = children(ECHO)  # each server runs under a gate: only the second's is left
    assert state != "Z", "the first server's gate was reaped, not left a zombie"
    wait_until(lambda: not alive(first))
    assert Path(f"/proc/{second}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(gate), "its parent"


def test_servers_that_fail_to_start_give_clear_errors_and_leave_nothing(tmp_path: Path) -> None:
    configs = [
        McpServerConfig(name="missing", command=str(tmp_path / "no-such-server")),
        McpServerConfig(
            name="exits",
            command=sys.executable,
            args=("-c", "import sys; sys.stderr.write('boom: MCP_TOKEN=hunter22 missing\\n'); sys.exit(3)"),
        ),
        echo_config(startup_timeout=40),
    ]
    with McpManager(configs, spill_dir=tmp_path) as failing:
        catalogue = failing.catalogue_text().splitlines()
        missing = f"MCP server 'missing' failed to start: command not found: {tmp_path / 'no-such-server'}"
        exits = (
            "MCP server 'exits' failed to start: the server exited during start-up (stderr: boom: MCP_TOKEN="
        )
        assert f"server missing: unavailable ({missing})" in catalogue
        assert any(line.startswith(f"server exits: unavailable ({exits}") for line in catalogue)
        assert "hunter22" not in "\n".join(catalogue)
        assert "server echo (7 tools):" in catalogue
        with pytest.raises(McpError) as caught:
            failing.call("missing", "anything", {})
        assert str(caught.value) == missing
        open_files = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            with pytest.raises(McpError, match="command not found"):
                failing.call("missing", "anything", {})
        assert len(os.listdir("/proc/self/fd")) == open_files, "a failed start leaks no pipe"
        with pytest.raises(McpError, match="the server exited during start-up"):
            failing.call("exits", "anything", {})
        assert failing.status()["exits"].startswith("failed: MCP server 'exits' failed to start")
        assert failing.call("echo", "echo", {"text": "still fine"})["content"] == f"{MARK}: still fine"
        assert children("boom") == []
        pid = int(failing.call("echo", "pid")["content"])
    assert not alive(pid)


def test_a_server_that_never_answers_times_out_and_is_stopped(tmp_path: Path) -> None:
    hanging = McpServerConfig(name="hang", command=sys.executable, args=(HANG,), startup_timeout=1)
    with McpManager([hanging], spill_dir=tmp_path) as manager:
        with pytest.raises(McpError) as caught:
            manager.call("hang", "anything", {})
        assert str(caught.value) == "MCP server 'hang' failed to start: did not answer within 1s"
        assert children(HANG) == []
        assert "server hang: unavailable (MCP server 'hang' failed to start: did not answer" in (
            manager.catalogue_text()
        )


def test_a_call_that_outlives_its_timeout_is_abandoned(tmp_path: Path) -> None:
    with McpManager([echo_config(timeout=1, startup_timeout=40)], spill_dir=tmp_path) as manager:
        with pytest.raises(McpError) as caught:
            manager.call("echo", "sleep", {"seconds": 30})
        assert str(caught.value) == "MCP tool echo.sleep timed out after 1s"
        assert manager.call("echo", "echo", {"text": "next"})["content"] == f"{MARK}: next"


def test_close_stops_every_server_and_is_idempotent(tmp_path: Path) -> None:
    manager = McpManager([echo_config("solo", startup_timeout=40)], spill_dir=tmp_path)
    pid = int(manager.call("solo", "pid")["content"])
    assert alive(pid)
    manager.close()
    manager.close()
    assert not alive(pid)
    assert pid not in {child for child, _ in children(ECHO)}
    with pytest.raises(McpError, match="the MCP servers are shut down"):
        manager.call("solo", "pid")


def test_a_manager_never_used_starts_nothing(tmp_path: Path) -> None:
    def loop_threads() -> int:
        return sum(thread.name == "turnmemory-mcp" for thread in threading.enumerate())

    before = loop_threads()
    with McpManager([echo_config()], spill_dir=tmp_path) as manager:
        assert manager.status() == {"echo": "not started"}
        assert loop_threads() == before
    assert McpManager([], spill_dir=tmp_path).catalogue_text() == ""


def test_without_the_sdk_a_call_is_a_clear_error(tmp_path: Path) -> None:
    script = f"""
import sys
sys.modules["mcp"] = None
from turnmemory.agent.mcp import McpError, McpManager, McpServerConfig
with McpManager([McpServerConfig(name="echo", command="unused")], spill_dir={str(tmp_path)!r}) as manager:
    try:
        manager.call("echo", "echo", {{}})
    except McpError as error:
        print(error)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert (
        done.stdout.strip() == "MCP servers need the mcp SDK (mcp is missing): pip install 'turnmemory[mcp]'"
    )


EXIT_SCRIPT = """
import os, signal, sys, threading
from turnmemory.agent.mcp import McpManager, McpServerConfig
manager = McpManager([McpServerConfig(name="echo", command=sys.executable, args=({echo!r},))], spill_dir={spill!r})
print(manager.call("echo", "pid")["content"], flush=True)
if sys.argv[1] == "interrupt":
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        manager.call("echo", "sleep", {{"seconds": 60}})
    except KeyboardInterrupt:
        print(manager.call("echo", "echo", {{"text": "after ctrl-c"}})["content"], flush=True)
        raise
"""


@pytest.mark.parametrize("how", ["exit", "interrupt"])
def test_servers_are_stopped_at_exit_and_on_ctrl_c(tmp_path: Path, how: str) -> None:
    script = EXIT_SCRIPT.format(echo=ECHO, spill=str(tmp_path))
    process = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), how], capture_output=True, text=True, timeout=60
    )
    pid = int(process.stdout.split()[0])
    if how == "interrupt":
        assert process.stdout.splitlines()[1] == f"{MARK}: after ctrl-c"
        assert process.returncode != 0
        assert "KeyboardInterrupt" in process.stderr
    else:
        assert process.returncode == 0, process.stderr
    wait_until(lambda: not alive(pid), timeout=10)


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, ECHO, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: _accepts(port), timeout=40)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def _accepts(port: int) -> bool:
    with socket.socket() as client:
        return client.connect_ex(("127.0.0.1", port)) == 0


def test_a_streamable_http_server_gets_the_configured_headers(
    http_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnmemory.agent.mcp import parse_mcp_config

    monkeypatch.setenv("TM_TEST_MCP_TOKEN", "token-from-env")
    configs = parse_mcp_config(
        {"servers": {"remote": {"url": http_server, "headers": {"X-Test-Token": "${TM_TEST_MCP_TOKEN}"}}}}
    )
    with McpManager(configs, spill_dir=tmp_path) as manager:
        assert manager.call("remote", "echo", {"text": "over http"})["content"] == f"{MARK}: over http"
        assert manager.call("remote", "header", {"name": "X-Test-Token"})["content"] == "token-from-env"


def test_an_http_server_that_is_not_there_fails_to_start(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = McpServerConfig(name="gone", url=f"http://127.0.0.1:{port}/mcp", startup_timeout=10)
    with McpManager([config], spill_dir=tmp_path) as manager, pytest.raises(McpError) as caught:
        manager.call("gone", "echo", {})
    assert str(caught.value).startswith("MCP server 'gone' failed to start: ")
    assert "\n" not in str(caught.value)
