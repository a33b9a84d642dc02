"""aider chat transcripts: edit blocks and commands recovered as activity, on fixtures written here and
on the real transcripts in ../shared."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.transcripts.conftest import EXAMPLES, manifest, shared_files

from turnmemory.transcripts import Prose, ToolCall, ToolResult, detect_format, load_session, replay_turn


def _write(tmp_path: Path, text: str, name: str = "chat.aider.chat.history.md") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


DIFF_FENCED = """
# aider chat started at 2026-10-01 09:00:00

> Aider v0.86.1

#### rename foo to bar in util.py

Renaming it.

```python
util.py
<<<<<<< SEARCH
def foo():
=======
def bar():
>>>>>>> REPLACE
```

Done.

> Applied edit to util.py
> Commit 1234567 rename foo
"""

WHOLE_FILE = """# aider chat started at 2026-10-01 09:00:00

#### write hello.py

hello.py
```
print("hello")
```

> Applied edit to hello.py
"""

FAILED_EDIT = """# aider chat started at 2026-10-01 09:00:00

#### change a.py

a.py
```
<<<<<<< SEARCH
x = 1
=======
x = 2
>>>>>>> REPLACE
```

> The LLM did not conform to the edit format.
"""

RUN_AND_REFLECT = """# aider chat started at 2026-10-01 09:00:00

#### fix the test
#### it fails on CI too

tests/test_a.py
```python
<<<<<<< ORIGINAL
assert f() == 1
=======
assert f() == 2
>>>>>>> UPDATED
```

> Applied edit to tests/test_a.py
> Running pytest -q
> 1 failed
> Running ruff check .
> All checks passed!

The test still fails; the function is wrong, not the test.

src/a.py
```python
<<<<<<< SEARCH
    return 1
=======
    return 2
>>>>>>> REPLACE
```

> Applied edit to src/a.py

#### /run pytest -q

> 1 passed
"""


def test_a_diff_fenced_edit_is_an_edit_call_with_its_file_changed(tmp_path: Path) -> None:
    path = _write(tmp_path, DIFF_FENCED)
    assert detect_format(path) == "aider"
    session = load_session(path)
    (turn,) = session.turns
    assert turn.user == "rename foo to bar in util.py"
    (call,) = turn.tool_calls
    assert (call.name, dict(call.arguments), call.source_name) == (
        "edit_file",
        {"path": "util.py"},
        "edit_block",
    )
    assert "<<<<<<< SEARCH" in call.source_input and "def bar():" in call.source_input
    message, _ = replay_turn(turn)
    assert "SEARCH" not in message.content and "def bar" not in message.content
    assert message.content.strip().startswith("Renaming it.") and message.content.rstrip().endswith("Done.")
    (activity,) = message.activities
    assert (activity.tool, activity.target, activity.file_changed) == ("edit_file", "util.py", "util.py")
    assert message.content.encode()[: activity.text_offset].decode().strip() == "Renaming it."


def test_a_whole_file_block_after_its_name_is_an_edit(tmp_path: Path) -> None:
    (turn,) = load_session(_write(tmp_path, WHOLE_FILE)).turns
    message, _ = replay_turn(turn)
    assert [(a.tool, a.file_changed) for a in message.activities] == [("edit_file", "hello.py")]
    assert "print(" not in message.content


def test_an_edit_aider_did_not_apply_changes_no_file(tmp_path: Path) -> None:
    (turn,) = load_session(_write(tmp_path, FAILED_EDIT)).turns
    message, _ = replay_turn(turn)
    assert [(a.tool, a.target, a.file_changed) for a in message.activities] == [("edit_file", "a.py", None)]


def test_commands_and_reflections_become_bash_calls_and_iterations(tmp_path: Path) -> None:
    session = load_session(_write(tmp_path, RUN_AND_REFLECT))
    first, second = session.turns
    assert first.user == "fix the test\nit fails on CI too"
    assert [(c.name, dict(c.arguments)) for c in first.tool_calls] == [
        ("edit_file", {"path": "tests/test_a.py"}),
        ("bash", {"command": "pytest -q"}),
        ("bash", {"command": "ruff check ."}),
        ("edit_file", {"path": "src/a.py"}),
    ]
    results = {e.call_id: e.text for e in first.events if isinstance(e, ToolResult)}
    bash = [c for c in first.tool_calls if c.name == "bash"]
    assert results[bash[0].call_id] == "1 failed" and results[bash[1].call_id] == "All checks passed!"
    message, _ = replay_turn(first)
    assert [(a.tool, a.file_changed) for a in message.activities] == [
        ("edit_file", "tests/test_a.py"),
        ("bash", None),
        ("bash", None),
        ("edit_file", "src/a.py"),
    ]
    offsets = [a.text_offset for a in message.activities]
    assert offsets == sorted(offsets) and offsets[1] == offsets[2] < offsets[3]
    assert second.user == "/run pytest -q"
    (run,) = second.tool_calls
    assert (run.name, dict(run.arguments)) == ("bash", {"command": "pytest -q"})
    assert any(isinstance(e, ToolResult) and e.text == "1 passed" for e in second.events)


def test_other_markdown_is_not_an_aider_transcript(tmp_path: Path) -> None:
    readme = _write(tmp_path, "# Project\n\n#### A heading\n\nSome text.\n", name="README.md")
    assert detect_format(readme) is None


def test_the_bundled_example() -> None:
    session = load_session(EXAMPLES / "aider-chat.md")
    assert [len(turn.tool_calls) for turn in session.turns] == [4, 1, 1]
    changed = [
        a.file_changed for turn in session.turns for a in replay_turn(turn)[0].activities if a.file_changed
    ]
    assert changed == ["cli.py", "cli.py", "tests/test_cli.py", "README.md"]


def test_the_real_transcripts_recover_every_applied_edit_in_order() -> None:
    files = shared_files("aider", "*.md")
    assert len(files) == 13
    applied_total = 0
    for path in files:
        text = path.read_text()
        applied = re.findall(r"^> Applied edit to (.+?)\s*$", text, re.M)
        session = load_session(path)
        assert session.format == "aider" and not session.problems
        changed = [
            a.file_changed
            for turn in session.turns
            for a in replay_turn(turn)[0].activities
            if a.file_changed
        ]
        assert changed == applied, path.name
        users = len(re.findall(r"^#### ", text, re.M))
        assert 0 < len(session.turns) <= users  # consecutive #### lines are one message
        for turn in session.turns:
            prose = "".join(e.text for e in turn.events if isinstance(e, Prose))
            assert "<<<<<<<" not in prose and ">>>>>>> " not in prose
            assert all(isinstance(c, ToolCall) for c in turn.tool_calls)
        applied_total += len(applied)
    published = sum(
        int(entry["tool_calls"])  # type: ignore[call-overload]
        for name, entry in manifest().items()
        if name.startswith(("aider__", "zen-mcp-server__")) and name.endswith(".md")
    )
    assert applied_total == published  # the collection's own count: applied edits and Running lines


@pytest.mark.parametrize("marker", ["# aider chat started at 2026-01-01 00:00:00", "> Aider v0.86.1"])
def test_detection_needs_an_aider_marker(tmp_path: Path, marker: str) -> None:
    assert detect_format(_write(tmp_path, f"{marker}\n\n#### hi\n\nHello.\n")) == "aider"


def test_an_edit_block_cut_off_by_an_interrupt_is_a_failed_edit(tmp_path: Path) -> None:
    text = "> Aider v0.86.1\n\n#### change a.py\n\n```python\na.py\n<<<<<<< SEARCH\nx = 1\n```\n\n> ^C KeyboardInterrupt\n"
    (turn,) = load_session(_write(tmp_path, text)).turns
    message, _ = replay_turn(turn)
    assert [(a.tool, a.status, a.file_changed) for a in message.activities] == [("edit_file", "error", None)]
    assert "SEARCH" not in message.content
