"""A hostile model cannot write onto the user's terminal: every escape class it tries, in prose,
reasoning, tool arguments, file names, an escalation reason and a provider error, reaches ``chat`` (a
pseudo-terminal), ``run``, ``show``, ``sessions`` and ``config`` (plain pipes) only as visible text,
while the project's own colours and cursor moves still work."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pexpect
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.agent._support import Run, spawn_chat

from turnmemory._text import terminal_safe
from turnmemory.agent.bash._sandbox import sandbox_unavailable
from turnmemory.agent.repl import ReplView, SafeConsole
from turnmemory.llm import Event
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

ATTACKS = {
    "title": "\x1b]0;pwned title\x07",
    "clipboard": "\x1b]52;c;ZWNobyBvd25lZA==\x07",
    "hyperlink": "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\",
    "conceal": "\x1b[8mconcealed words\x1b[0m",
    "clear": "\x1b[2J\x1b[H",
    "overwrite": "\x1b[1A\x1b[2K",
    "c1 csi": "\x9b2J",
    "c1 osc": "\x9d0;c1 title\x9c",
    "dcs": "\x1bP1$r q\x1b\\",
    "carriage return": "ok\rFAKE",
    "backspace": "abc\x08\x08\x08",
    "bidi": "\u202eexe.gnp",
    "bell": "bell\x07",
}
HOSTILE = " ".join(f"{name}: {attack}" for name, attack in ATTACKS.items())
"""One text with every class; its spaces make the fake server stream it in many chunks, so several
sequences arrive split across chunks."""
MARKUP = "[bold red]fake markup[/] [link=https://evil.example]x[/link] :skull:"
"""Rich markup and emoji codes: shown as typed, never interpreted."""
PROMPT = "\u203a".encode()
SHORT = "\x1b]0;t\x07\x9b2J\x1b[8mx"
"""Where a short field is wanted (a tool name, a file name)."""

_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_].*?(?:\x07|\x1b\\|$)|.)", re.S)
_C1_OR_BIDI = re.compile("[\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _sgr_conceals(params: str) -> bool:
    numbers = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else [0]
    i = 0
    while i < len(numbers):
        if numbers[i] in (38, 48, 58):  # a colour: its own arguments follow
            i += 5 if i + 1 < len(numbers) and numbers[i + 1] == 2 else 3
            continue
        if numbers[i] == 8:
            return True
        i += 1
    return False


def _own(sequence: str) -> bool:
    """Whether rich or prompt_toolkit writes ``sequence`` itself: colours, cursor moves, erasing to the
    end of the line or screen, DEC modes, saving the cursor, the keypad mode."""
    if sequence in ("\x1b7", "\x1b8", "\x1b=", "\x1b>"):
        return True
    csi = re.fullmatch(r"\x1b\[(\??)([0-9;]*)([A-Za-z])", sequence)
    if csi is None:
        return False
    params, final = csi.group(2), csi.group(3)
    if final == "J":
        return params not in ("2", "3")
    if final == "m":
        return not _sgr_conceals(params)
    return final in "ABCDGHKhl"


def _foreign_escapes(screen: str) -> list[str]:
    """The escapes on ``screen`` that the REPL (rich, prompt_toolkit) never writes itself: any OSC, DCS,
    APC or other string sequence, a bell, C1 and bidi controls, clearing the screen, concealed text."""
    found = [repr(char) for char in _C1_OR_BIDI.findall(screen)]
    found += ["BEL"] * screen.count("\x07")
    return found + [repr(match.group()) for match in _ESCAPE.finditer(screen) if not _own(match.group())]


def _plain_problems(output: str) -> list[str]:
    """Anything a terminal would act on in piped output (which holds no escape at all)."""
    return [
        repr(char) for char in re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", output)
    ]


def _visible(screen: str) -> str:
    """The screen's text without the project's own escapes or any whitespace (lines wrap anywhere)."""
    return re.sub(r"\s+", "", _ESCAPE.sub("", screen))


def _shown(text: str) -> str:
    return re.sub(r"\s+", "", terminal_safe(text))


def test_a_hostile_model_reaches_the_terminal_only_as_visible_text(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path, cli: Run
) -> None:
    sandboxed = sandbox_unavailable() is None
    hostile_file = f"notes {SHORT}.txt"
    server.push(
        Failure(status=503, message=f"overloaded {SHORT}", retry_after=0),
        Reply(
            reasoning=HOSTILE,
            text=f"{HOSTILE}\n\n{MARKUP}\n\nand an entity &#x1b;]0;entity&#x07; too",
            tool_calls=[
                ToolCall("write_file", {"path": hostile_file, "content": f"{HOSTILE}\n{MARKUP}\n"}),
                ToolCall(
                    "bash",
                    {"command": "printf 'contained\\n'", "escalate": True, "justification": HOSTILE},
                ),
                ToolCall("read_file", {"path": f"missing {SHORT}.txt"}),
            ],
        ),
        Reply(text=f"Done. {HOSTILE}"),
    )
    child = spawn_chat(server, workspace, data_dir, tmp_path, colour=True, binary=True)
    screen = bytearray()
    try:
        child.expect(PROMPT)
        child.sendline(b"go")
        answered = 0
        while True:  # the write, then the escalated command (with the sandbox on)
            index = child.expect([re.escape(b"\x1b[1;33mpermission"), b"tokens: "])
            screen += child.before + child.after
            if index == 1:
                child.expect(PROMPT)
                screen += child.before + child.after
                break
            child.expect(b"allow\\? ")
            screen += child.before + child.after
            answered += 1
            child.sendline(b"y")
        for command in (b"/thinking", b"/diff", b"/memory", b"/sessions"):
            child.sendline(command)
            child.expect(PROMPT)
            screen += child.before + child.after
        child.sendline(b"/exit")
        child.expect(pexpect.EOF)
        screen += child.before
    finally:
        child.close(force=True)
    assert answered == (2 if sandboxed else 1)
    text = screen.decode("utf-8")
    assert _foreign_escapes(text) == []
    assert "\x1b[" in text, "the project's own colours are kept"
    visible = _visible(text)
    assert _shown(HOSTILE) in visible, "the prose, and its escapes as visible text"
    assert _shown(MARKUP) in visible, "markup shows as typed"
    justification = "outside the sandbox: " + " ".join(HOSTILE.split())  # as the bash tool takes it
    assert _shown(justification) in visible or not sandboxed
    assert _shown(hostile_file) in visible, "the file name in the tool line and the diff"
    assert "missing]0;t2J[8mx.txterror" in visible, (
        "a tool line (its target as the memory keeps it: no controls)"
    )
    assert "retrying(attempt2)" in visible
    assert (workspace / hostile_file).read_bytes() == f"{HOSTILE}\n{MARKUP}\n".encode(), (
        "the file is as written"
    )

    resumed = spawn_chat(server, workspace, data_dir, tmp_path, "--resume", colour=True, binary=True)
    try:
        resumed.expect(b"/help for commands")
        replay = resumed.before.decode("utf-8")
        resumed.expect(PROMPT)
        resumed.sendline(b"/exit")
        resumed.expect(pexpect.EOF)
    finally:
        resumed.close(force=True)
    assert _foreign_escapes(replay) == []
    assert _shown(HOSTILE) in _visible(replay) and _shown(hostile_file) in _visible(replay)

    (session,) = json.loads(cli("sessions", "--format", "json").stdout)
    shown = cli("show", session["id"])
    assert _plain_problems(shown.stdout + shown.stderr) == []
    assert "\x1b" not in shown.stdout
    assert _shown(HOSTILE) in re.sub(r"\s+", "", shown.stdout)
    stored = justification[:150]  # the session keeps the prompt's first 300 bytes
    assert _shown(stored) in re.sub(r"\s+", "", shown.stdout) or not sandboxed
    assert "· allowed once" in shown.stdout
    as_json = cli("show", session["id"], "--format", "json").stdout
    assert _plain_problems(as_json) == []
    prose = [event["message"]["content"] for event in json.loads(as_json)["events"] if "message" in event]
    assert any(HOSTILE in text for text in prose), "JSON keeps the exact values"


def test_run_sessions_and_config_show_hostile_text_only_as_visible_text(
    server: FakeProviderServer, workspace: Path, cli: Run
) -> None:
    common = ["--provider", "openai_chat", "--base-url", server.base_url("openai_chat")]
    server.push(
        Reply(
            reasoning=HOSTILE,
            text=HOSTILE,
            tool_calls=[
                ToolCall("read_file", {"path": f"missing {SHORT}.txt"}),
                ToolCall(f"no_such_tool{SHORT}", {}),
            ],
        ),
        Reply(text=f"{HOSTILE}\n{MARKUP}"),
        Reply(text=HOSTILE),
        Failure(status=400, message=f"bad {HOSTILE}"),
    )
    text = cli("run", *common, "hello")
    as_json = cli("run", *common, "--format", "json", "--continue", "again")
    failed = cli("run", *common, "--continue", f"{SHORT} {HOSTILE}", expect=1)
    listed = cli("sessions")
    configured = cli("config", "--model", f"model{SHORT}", *common)
    for done in (text, as_json, failed, listed, configured):
        assert _plain_problems(done.stdout) == [] and _plain_problems(done.stderr) == [], done.args
        assert "\x1b" not in done.stdout + done.stderr
    assert _shown(HOSTILE) in re.sub(r"\s+", "", text.stdout)
    assert _shown(MARKUP) in re.sub(r"\s+", "", text.stdout)
    assert "\\x1b]0;t\\x07\\x9b2J\\x1b[8mx" in text.stderr, "the tool lines"
    assert json.loads(as_json.stdout)["text"] == HOSTILE, "JSON keeps the exact value"
    assert "\\u009b" in as_json.stdout
    assert _shown(f"bad {HOSTILE}")[:150] in re.sub(r"\s+", "", failed.stderr), "the error, cut to its bound"
    assert "\\x1b]0;t\\x07" in listed.stdout, "the last prompt, shown"
    assert f"model{terminal_safe(SHORT)}" in configured.stdout


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_class_alone_is_caught_by_the_check(name: str) -> None:
    """The screen check itself: each attack, written raw, is reported (so the tests above can fail)."""
    raw = f"\x1b[1;33mok\x1b[0m {ATTACKS[name]}"
    assert _foreign_escapes(raw) or _plain_problems(raw)
    assert _foreign_escapes(f"\x1b[1;33mok\x1b[0m {terminal_safe(ATTACKS[name])}") == []


_PIECES = st.lists(
    st.sampled_from([*"\x1b[]0;28mJPq\\\x07\x9b\x9d\x9c\r\x08\t\n a*#`:\u202e", "&#x1b;", "&#155;", "[bold]"])
).map("".join)
_EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["text", "reasoning", "tool", "notice", "diff", "error", "retry"]),
        st.one_of(_PIECES, st.text(max_size=40)),
    ),
    max_size=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_EVENTS)
def test_whatever_the_view_is_given_its_console_draws_no_foreign_escape(
    events: list[tuple[str, str]],
) -> None:
    screen = io.StringIO()
    console = SafeConsole(file=screen, force_terminal=True, color_system="truecolor", width=80, emoji=False)
    view = ReplView(console, "/ws")
    for number, (kind, text) in enumerate(events):
        if kind in ("text", "reasoning"):
            view.event(Event(kind, text=text), None)
        elif kind == "tool":
            view.event(Event("tool_start", call_id=str(number), name=text, arguments={"path": text}), None)
            view.event(Event("tool_end", call_id=str(number), name=text, error=text or None), 0.5)
        elif kind == "notice":
            view.notice(text)
        elif kind == "diff":
            view.diff(str(number), text)
        elif kind == "retry":
            view.event(Event("retry", error=text, attempt=2), None)
        else:
            view.event(Event("error", reason="api_error", error=text), None)
    view.end_prose()
    view.pause()
    assert _foreign_escapes(screen.getvalue()) == []
