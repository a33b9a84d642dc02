"""What the REPL shows: reasoning, retries, long diffs, usage, /context in tokens, resumed sessions as
they looked live (the model switch remembered), @file attachments and honest tool durations."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit import PromptSession
from prompt_toolkit.input import DummyInput
from prompt_toolkit.output import DummyOutput
from rich.console import Console
from tests.agent._support import body_text, spawn_chat

from turnmemory.agent._attach import MAX_FILE_BYTES, attach_mentions, mentions
from turnmemory.agent._usage import cost
from turnmemory.agent.loop import Agent
from turnmemory.agent.permissions import Access, Answer, Permissions, parse_rules
from turnmemory.agent.repl import DIFF_LINES, Repl, ReplView, _markdown, _settled_prose
from turnmemory.agent.store import SqliteStore
from turnmemory.llm import Event, Usage
from turnmemory.testing import FakeProviderServer, Reply, ToolCall
from turnmemory.testing import Usage as WireUsage


def _view(width: int = 100) -> tuple[ReplView, io.StringIO]:
    screen = io.StringIO()
    return ReplView(Console(file=screen, width=width, color_system=None), "/ws"), screen


def _repl(agent: Agent) -> tuple[Repl, io.StringIO]:
    screen = io.StringIO()
    console = Console(file=screen, width=120, color_system=None)
    view = ReplView(console, agent.workspace)
    agent.view = view
    return Repl(agent, console, view, PromptSession(input=DummyInput(), output=DummyOutput())), screen


def test_reasoning_folds_to_one_line_and_thinking_shows_it_whole(
    make_agent: Callable[..., Agent], server: FakeProviderServer
) -> None:
    thought = " ".join(f"step{n}" for n in range(40))
    server.push(Reply(reasoning=thought, text="The answer."))
    agent = make_agent("anthropic")
    repl, screen = _repl(agent)
    repl._turn("why?")
    out = screen.getvalue()
    assert "✻ thought (40 words; /thinking shows it)" in out
    assert out.index("✻ thought") < out.index("The answer.")
    before = len(out)
    repl.command("/thinking")
    assert "step0" in screen.getvalue()[before:] and "step39" in screen.getvalue()[before:]


@pytest.mark.parametrize("streamed", [True, False])
def test_a_retry_says_text_was_discarded_only_when_some_was_streamed(streamed: bool) -> None:
    view, screen = _view()
    if streamed:
        view.event(Event("text", text="Half an answ"), None)
    view.event(Event("retry", error="overloaded", attempt=2), None)
    out = screen.getvalue()
    assert "retrying (attempt 2): overloaded" in out
    assert ("discarded" in out) == streamed


_MARKDOWN_LINES = st.lists(
    st.sampled_from(
        [
            "",
            "",
            "A paragraph line.",
            "more words",
            "```",
            "    indented code",
            "- an item",
            "* another",
            "1. first",
            "2) second",
            "# A heading",
            "> quoted",
            "| a | b |",
            "|---|---|",
            "  continued",
            "---",
        ]
    ),
    max_size=24,
)
_PROSE = st.tuples(_MARKDOWN_LINES, st.booleans()).map(lambda t: "\n".join(t[0]) + ("\n" if t[1] else ""))


@settings(max_examples=300, deadline=None)
@given(_PROSE, st.data())
def test_streamed_prose_settles_only_whole_blocks_and_never_less(prose: str, data: st.DataObject) -> None:
    cut = _settled_prose(prose)
    head, rest = prose[:cut], prose[cut:]
    if cut:
        assert head.endswith("\n") and not head.split("\n")[-2].strip(), "a block ends at a blank line"
        assert rest[:1].strip() and not rest.startswith((" ", "- ", "* ", "1. ", "2) ")), "a new block starts"
        assert sum(line == "```" for line in head.split("\n")) % 2 == 0, "never inside a code fence"
    prefix = data.draw(st.integers(0, len(prose)))
    assert _settled_prose(prose[:prefix]) <= cut, "more prose never settles less"


@settings(max_examples=60, deadline=None)
@given(_PROSE, st.lists(st.integers(1, 12), min_size=1, max_size=30))
def test_prose_streamed_in_chunks_shows_what_the_whole_prose_shows(prose: str, sizes: list[int]) -> None:
    def console(file: io.StringIO) -> Console:
        return Console(file=file, width=80, force_terminal=False, color_system="truecolor")

    screen = io.StringIO()
    view = ReplView(console(screen), "/ws")
    offset = 0
    for size in sizes * (len(prose) // sum(sizes) + 1):
        if offset < len(prose):
            view.event(Event("text", text=prose[offset : offset + size]), None)
        offset += size
    view.end_prose()
    whole = io.StringIO()
    console(whole).print(_markdown(prose))
    assert screen.getvalue().split() == whole.getvalue().split(), "the same words in the same styles"


@pytest.mark.parametrize("length", [5, DIFF_LINES, DIFF_LINES + 1, 300])
def test_long_diffs_are_cut_with_a_count_and_diff_shows_all(length: int, tmp_path: Path) -> None:
    view, screen = _view()
    diff = "--- a/x\n+++ b/x\n" + "".join(f"+line {n}\n" for n in range(length - 2))
    view.diff("c", diff)
    out = screen.getvalue()
    shown = [line for line in out.splitlines() if line.startswith(("+", "-"))]
    assert len(shown) == min(length, DIFF_LINES)
    hidden = length - DIFF_LINES
    assert (f"… {hidden} more lines (/diff shows the whole diff)" in out) == (hidden > 0)
    assert view.last_diff == diff


def test_the_diff_command_prints_the_whole_last_diff(make_agent: Callable[..., Agent]) -> None:
    repl, screen = _repl(make_agent("openai_chat"))
    repl.view.diff("c", "".join(f"+l{n}\n" for n in range(100)))
    repl.command("/diff")
    assert "+l99" in screen.getvalue()


def test_a_usage_line_after_each_turn_with_cost_when_prices_are_set(
    make_agent: Callable[..., Agent], server: FakeProviderServer
) -> None:
    server.push(
        Reply(
            text="Hi.",
            usage=WireUsage(
                input_tokens=12_000, output_tokens=300, cached_tokens=2000, cache_write_tokens=1500
            ),
        ),
        Reply(text="Again.", usage=WireUsage(input_tokens=12_100, output_tokens=20, cached_tokens=900)),
    )
    agent = make_agent("anthropic")
    repl, screen = _repl(agent)
    repl._turn("hello")
    assert "tokens: 12.0k in (2,000 read, 1,500 written, 8,500 uncached), 300 out" in screen.getvalue()
    assert "cache miss: first request" in screen.getvalue()
    repl._turn("again")  # reads less than the first request read and wrote: the boundary rewrite
    assert "cache miss: turn boundary" in screen.getvalue()
    prices = {"input": 3.0, "output": 15.0, "cached_input": 0.3, "cache_write": 3.75}
    used = Usage(input_tokens=12_000, output_tokens=300, cached_tokens=2000, cache_write_tokens=1500)
    assert cost(used, prices) == pytest.approx(8500 * 3e-6 + 2000 * 0.3e-6 + 1500 * 3.75e-6 + 300 * 15e-6)
    view, shown = _view()
    from turnmemory.agent.loop import TurnOutcome
    from turnmemory.memory import Message

    view.usage(
        TurnOutcome("done", Message("assistant", "x"), usage=Usage(100, 10, 0)), prices, Usage(300, 30)
    )
    assert (
        f"${cost(Usage(100, 10, 0), prices):.4f} (session ${cost(Usage(300, 30), prices):.4f})"
        in shown.getvalue()
    )


def test_context_reports_tokens_and_the_share_of_the_window(
    make_agent: Callable[..., Agent], server: FakeProviderServer
) -> None:
    server.push(Reply(text="Done.", usage=WireUsage(input_tokens=5000, output_tokens=3)))
    agent = make_agent("openai_chat")
    repl, screen = _repl(agent)
    repl._turn("a question")
    repl.command("/context")
    out = screen.getvalue()
    assert "tokens" in out and "of window" in out and "next request" in out
    window = agent.client.accounting.limits.window
    assert f"{window:,} tokens" in out
    assert "the last request carried 5,000 input tokens" in out
    layers = agent.context_layers()
    assert all(layer.tokens <= layer.size for layer in layers)  # never more tokens than bytes
    assert any(layer.tokens > 0 for layer in layers)


def test_resume_shows_the_conversation_as_it_looked_live(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    server.push(
        Reply(text="Reading **app.py**.", tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(text="It holds `value`."),
    )
    first = make_agent("openai_chat")
    first.turn("look")
    view, screen = _view()
    view.replay(first.store.load(first.session_id))
    out = screen.getvalue()
    assert "› look" in out and "Reading app.py." in out and "**" not in out
    assert "● read_file app.py ok" in out
    assert "memory:" not in out and "tool_activity" not in out


def test_a_model_switch_is_remembered_when_the_session_is_resumed(
    make_agent: Callable[..., Agent], server: FakeProviderServer
) -> None:
    server.push(Reply(text="One."), Reply(text="Two."))
    agent = make_agent("openai_chat")
    agent.turn("first")
    agent.switch_model(None, "gpt-5-mini")
    session = agent.session_id
    loaded = agent.store.load(session)
    assert loaded.model == ("openai_chat", "gpt-5-mini")
    agent.store.release(session)
    other = make_agent("openai_chat")
    other.resume(session)
    assert other.config.model == "gpt-5-mini" and other.client.model == "gpt-5-mini"
    other.turn("second")
    assert server.requests[-1].body["model"] == "gpt-5-mini"


def test_tool_durations_leave_out_the_time_at_the_permission_prompt(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path
) -> None:
    import time

    (workspace / "a.txt").write_text("a\n")

    def slow_person(access: Access) -> Answer:
        time.sleep(1.0)
        return Answer("once")

    server.push(
        Reply(
            text="Editing.",
            tool_calls=[ToolCall("edit_file", {"path": "a.txt", "oldString": "a", "newString": "b"})],
        ),
        Reply(text="Done."),
    )
    agent = make_agent("openai_chat", ask=slow_person)
    agent.turn("edit")
    loaded = agent.store.load(agent.session_id)
    (turn,) = [event.data for event in loaded.events if event.kind == "assistant_turn"]
    (tool,) = [item for item in turn["transcript"] if item["kind"] == "tool"]
    assert tool["duration"] < 0.9, "the second spent waiting for the person is not the tool's"
    assert (workspace / "a.txt").read_text() == "b\n"


# -- @file -------------------------------------------------------------------------------------------


class _Session:
    def __init__(self, workspace: Path, rules: tuple[str, ...] = ()) -> None:
        self.workspace = str(workspace)
        self.permissions = Permissions(self.workspace, parse_rules(rules))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("look at @src/app.py please", ["src/app.py"]),
        ("@a.txt, @b.txt.", ["a.txt", "b.txt"]),
        ("mail me@example.com", []),
        ("(@x.py) and @x.py again", ["x.py"]),
    ],
)
def test_mentions(text: str, expected: list[str]) -> None:
    assert mentions(text) == expected


def test_attachments_inside_outside_and_not_files(workspace: Path, tmp_path: Path) -> None:
    (workspace / "app.py").write_text("print('hi')\n")
    (workspace / "big.txt").write_text("x" * (MAX_FILE_BYTES + 5000))
    (workspace / "blob.bin").write_bytes(b"\0\1\2" * 10)
    (workspace / "dir").mkdir()
    os.mkfifo(workspace / "pipe")
    outside = tmp_path / "secret.txt"
    outside.write_text("outside text\n")
    text = f"@app.py @big.txt @blob.bin @dir @pipe @{outside} @nonexistent @someone"
    found = attach_mentions(text, _Session(workspace))
    attached, notes = found.text, found.notes
    assert "<file path=\"app.py\">\nprint('hi')\n\n</file>" in attached
    assert attached.count("x") >= MAX_FILE_BYTES and attached.count("x") < MAX_FILE_BYTES + 10
    assert "outside text" not in attached and "\0" not in attached
    joined = "\n".join(notes)
    assert f"attached its first {MAX_FILE_BYTES:,}" in joined
    assert "@blob.bin looks binary" in joined and "@dir is a directory" in joined
    assert "@pipe is not a regular file" in joined
    assert f"@{outside} not attached: not allowed" in joined
    assert "nonexistent" not in joined and "someone" not in joined
    granted = attach_mentions(f"@{outside}", _Session(workspace, (f"read:{tmp_path}/*",)))
    assert "outside text" in granted.text


def test_an_attachment_goes_to_the_request_not_to_the_session(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "notes.md").write_text("the attached words\n")
    server.push(Reply(text="Seen."), Reply(text="Again."))
    agent = make_agent("openai_chat")
    repl, _ = _repl(agent)
    repl._turn("summarize @notes.md")
    assert "the attached words" in body_text(server.requests[0].body)
    assert [m.content for m in agent.messages if m.role == "user"] == ["summarize @notes.md"]
    agent.turn("and now?")
    assert "the attached words" not in body_text(server.requests[1].body)
    with SqliteStore(agent.store.path) as store:
        raw = Path(store.path).read_bytes()
    assert b"the attached words" not in raw


# -- a real terminal ---------------------------------------------------------------------------------


def test_in_a_terminal_reasoning_attachments_context_and_resume(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    (workspace / "notes.md").write_text("attached words\n")
    server.push(
        Reply(reasoning="first I consider the notes carefully", text="The notes are **short**."),
        Reply(text="Still here."),
    )
    child = spawn_chat(server, workspace, data_dir, tmp_path)
    try:
        child.expect_exact("›")
        child.sendline("read @notes.md")
        child.expect_exact("✻ thought (6 words; /thinking shows it)")
        child.expect(r"The notes are \S*short")  # bold markup, never the raw **
        child.expect_exact("tokens: 10 in, 5 out")
        child.expect_exact("›")
        child.sendline("/context")
        child.expect_exact("of window")
        child.expect_exact("next request")
        child.expect_exact("the window is 200,000 tokens")
        child.expect_exact("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "attached words" in body_text(server.requests[0].body)
    resumed = spawn_chat(server, workspace, data_dir, tmp_path, "--resume")
    try:
        resumed.expect_exact("› read @notes.md")
        resumed.expect(r"The notes are \S*short")
        resumed.expect_exact("›")
        before = resumed.before
        assert "memory:" not in before and "**" not in before and "tool_activity" not in before
        resumed.sendline("and?")
        resumed.expect_exact("Still here.")
        resumed.expect_exact("›")
        resumed.sendline("/exit")
        resumed.expect(pexpect.EOF)
    finally:
        resumed.close(force=True)
    assert "attached words" not in body_text(server.requests[-1].body)
