"""Spill files: private (0600 in a 0700 directory), gone when the turn ends however it ends, and the
leftovers of a crashed agent removed by the next one."""

from __future__ import annotations

import gc
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent._support import MODELS

from turnmemory.agent._runtime import open_agent
from turnmemory.agent._spill import SpillArea, sweep_stale
from turnmemory.agent.config import AgentConfig
from turnmemory.agent.loop import Agent
from turnmemory.agent.permissions import parse_rules
from turnmemory.llm import Event
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

MakeAgent = Callable[..., Agent]
ECHO = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")
BIG = "seq 1 40000"
"""Prints about 230 kB: more than the model sees inline, so both streams' full text is spilled."""


class SpillWatcher:
    """A view that records the spill files a bash call reports, their modes while the turn runs, and can
    end the turn (an interrupt, a crash) right after the call."""

    def __init__(self, fail_with: BaseException | None = None) -> None:
        self.fail_with = fail_with
        self.files: list[Path] = []
        self.modes: list[int] = []
        self.notices: list[str] = []

    def event(self, event: Event, elapsed: float | None) -> None:
        if event.kind != "tool_end" or not isinstance(event.output, dict):
            return
        for key in ("stdout_file", "stderr_file"):
            if key in event.output:
                path = Path(event.output[key])
                self.files.append(path)
                self.modes += [stat.S_IMODE(path.stat().st_mode), stat.S_IMODE(path.parent.stat().st_mode)]
        if self.fail_with is not None:
            raise self.fail_with

    def diff(self, call_id: str, diff: str) -> None:
        pass

    def notice(self, text: str) -> None:
        self.notices.append(text)


def _spill_script(ending: Any) -> list[Any]:
    return [Reply(text="Listing.", tool_calls=[ToolCall("bash", {"command": f"{BIG}; {BIG} >&2"})]), ending]


ENDINGS = {"done": Reply(text="Listed."), "incomplete": Failure(status=400, message="bad request")}
"""How the turn ends after the call (a provider error after work is an incomplete turn; the error
ending, the turn raising, is below with the interrupt)."""


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_spill_files_are_private_and_gone_when_the_turn_ends(
    ending: str, sandbox: str, make_agent: MakeAgent, server: FakeProviderServer, data_dir: Path
) -> None:
    server.push(*_spill_script(ENDINGS[ending]))
    agent = make_agent("anthropic", allow=("bash",), sandbox=sandbox)
    watcher = SpillWatcher()
    agent.view = watcher
    outcome = agent.turn("list")
    assert outcome.status == ending
    assert len(watcher.files) == 2, "both streams were spilled"
    assert set(watcher.modes) == {0o600, 0o700}
    assert not any(path.exists() for path in watcher.files)
    assert os.listdir(agent.context.spill_dir) == []
    assert stat.S_IMODE((data_dir / "spill").stat().st_mode) == 0o700


@pytest.mark.parametrize("failure", [KeyboardInterrupt(), RuntimeError("the front end broke")])
def test_spill_files_are_gone_after_an_interrupt_or_a_crash(
    failure: BaseException, make_agent: MakeAgent, server: FakeProviderServer
) -> None:
    server.push(_spill_script(None)[0])
    agent = make_agent("anthropic", allow=("bash",))
    watcher = SpillWatcher(fail_with=failure)
    agent.view = watcher
    if isinstance(failure, KeyboardInterrupt):
        assert agent.turn("list").status == "interrupted"
    else:
        with pytest.raises(RuntimeError, match="the front end broke"):
            agent.turn("list")
    assert len(watcher.files) == 2
    assert not any(path.exists() for path in watcher.files)


def test_the_partial_output_of_a_timed_out_command_is_private_and_gone_after_the_turn(
    make_agent: MakeAgent, server: FakeProviderServer
) -> None:
    server.push(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo partial; sleep 30", "timeout": 1})]),
        Reply(text="It timed out."),
    )
    agent = make_agent("anthropic", allow=("bash",))
    seen: list[tuple[Path, int]] = []

    class Watcher(SpillWatcher):
        def event(self, event: Event, elapsed: float | None) -> None:
            if event.kind == "tool_end" and event.error and "partial output in " in event.error:
                path = Path(event.error.split("partial output in ")[1])
                seen.append((path, stat.S_IMODE(path.stat().st_mode)))

    agent.view = Watcher()
    assert agent.turn("wait").status == "done"
    assert [mode for _, mode in seen] == [0o600]
    assert not seen[0][0].exists()


_HOLD = """
import sys, time
from pathlib import Path
from turnmemory.agent._spill import SpillArea
area = SpillArea(Path(sys.argv[1]))
(area.path / "out.txt").write_text("raw output")
print(area.path, flush=True)
time.sleep(60)
"""


def test_a_crashed_agents_spill_directory_is_removed_by_the_next_one_and_a_live_ones_kept(
    tmp_path: Path,
) -> None:
    root = tmp_path / "spill"
    crashed = subprocess.Popen([sys.executable, "-c", _HOLD, str(root)], stdout=subprocess.PIPE, text=True)
    live = subprocess.Popen([sys.executable, "-c", _HOLD, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert crashed.stdout is not None and live.stdout is not None
        crashed_dir, live_dir = Path(crashed.stdout.readline().strip()), Path(live.stdout.readline().strip())
        crashed.kill()
        crashed.wait()
        old_layouts = [root / "0123456789abcdef", root / "mcp"]  # from before spill areas were locked
        for old in old_layouts:
            old.mkdir()
            (old / "stdout.txt").write_text("raw output")
        mine = SpillArea(root)
        assert crashed_dir.parent == root and not crashed_dir.exists()
        assert not Path(f"{crashed_dir}.lock").exists()
        assert not any(old.exists() for old in old_layouts)
        assert (live_dir / "out.txt").read_text() == "raw output"
        assert sorted(p.name for p in root.iterdir()) == sorted(
            [live_dir.name, f"{live_dir.name}.lock", mine.path.name, f"{mine.path.name}.lock"]
        )
        mine.close()
        assert not mine.path.exists() and not Path(f"{mine.path}.lock").exists()
    finally:
        live.kill()
        live.wait()
        crashed.wait()
    sweep_stale(root)
    assert list(root.iterdir()) == []


def test_a_spilled_mcp_result_lives_for_its_turn_and_the_area_goes_with_the_agent(
    server: FakeProviderServer, data_dir: Path, workspace: Path
) -> None:
    call = ToolCall("call_mcp_tool", {"server": "echo", "tool": "echo", "arguments": {"text": "x" * 40_000}})
    server.push(Reply(text="Echoing.", tool_calls=[call]), Reply(text="Echoed."))
    config = AgentConfig(
        provider="openai_chat",
        model=MODELS["openai_chat"],
        base_url=server.base_url("openai_chat"),
        api_key="test-key",
        allow=parse_rules(["mcp"]),
        mcp={"servers": {"echo": {"command": sys.executable, "args": [ECHO]}}},
    )
    spilled: list[Path] = []

    class Watcher(SpillWatcher):
        def event(self, event: Event, elapsed: float | None) -> None:
            if event.kind == "tool_end" and isinstance(event.output, dict) and "spill_file" in event.output:
                spilled.append(Path(event.output["spill_file"]))
                assert spilled[-1].is_file()

    with open_agent(config, workspace=str(workspace), view=Watcher(), ask=None) as agent:
        area = Path(agent.context.spill_dir)
        assert agent.turn("echo").status == "done"
        assert len(spilled) == 1 and area in spilled[0].parents
        assert not spilled[0].exists()
    assert not area.exists() and list((data_dir / "spill").iterdir()) == []


def test_an_area_nobody_holds_is_removed(tmp_path: Path) -> None:
    area = SpillArea(tmp_path / "spill")
    (area.path / "stdout.txt").write_text("raw output")
    path = area.path
    del area
    gc.collect()
    assert not path.exists() and list((tmp_path / "spill").iterdir()) == []
