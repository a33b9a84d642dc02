"""The README's Frameworks examples run as written: each in its own interpreter, against the fake server.

The examples name real OpenAI models; ``OPENAI_BASE_URL`` points the official SDK at the loopback
fake provider server, which scripts a tool call, the answer to it, and the answer of the second turn.
The second turn's request must carry the first turn as TurnMemory: the call with ``{}`` arguments and
its result as status and outcome, and nothing of the command's real output.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from turnmemory.testing import FakeProviderServer, Reply, ToolCall

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = "RAW-OUTPUT-e5a1"


def _examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Frameworks\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _run(code: str, server: FakeProviderServer, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url("openai_chat"),
        "OPENAI_API_KEY": "test",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_section_has_one_example_per_framework_and_one_for_plain_lists() -> None:
    examples = _examples()
    assert len(examples) == 4
    for number, example in enumerate(examples):
        compile(example, f"README Frameworks example {number}", "exec")  # at least valid Python everywhere
    for example, module in zip(
        examples, ("integrations import", "langchain", "pydantic_ai", "openai_agents"), strict=True
    ):
        assert module in example


def test_the_compact_example_prints_the_compacted_list(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _examples()[0]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    printed = ast.literal_eval(done.stdout)
    call = {"id": "historical_1_0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    assert printed == [
        {"role": "user", "content": "Run the tests"},
        {"role": "assistant", "content": "Running them.", "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": "historical_1_0",
            "content": '{"status":"success","failed_command":"pytest -q","exit_code":1}',
        },
        {"role": "assistant", "content": "One test fails."},
        {"role": "user", "content": "Fix it"},
    ]


@pytest.mark.parametrize(("index", "package"), [(1, "langchain_openai"), (2, "pydantic_ai"), (3, "agents")])
def test_framework_example_runs_and_sends_the_compact_record(
    index: int, package: str, server: FakeProviderServer, tmp_path: Path
) -> None:
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed: the example needs it")
    (tmp_path / "a.txt").write_text("x")
    server.push(
        Reply(tool_calls=(ToolCall("bash", {"command": f"echo {MARKER}"}),)),
        Reply(text="One file: a.txt."),
        Reply(text="There is 1 file."),
    )
    done = _run(_examples()[index], server, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "There is 1 file." in done.stdout
    _, inner, second = server.requests
    assert MARKER in json.dumps(inner.body)  # the tool really ran, and its output reached the model in-turn
    later = json.dumps(second.body)
    assert MARKER not in later and "echo" not in later
    assert re.search(r"historical_\d+_0", later)
    assert '\\"exit_code\\":0' not in later and '\\"status\\":\\"success\\"' in later
