"""``turnmemory chat``: the interactive REPL (prompt_toolkit for input, rich for output).

The screen shows the original prose (as markdown), the model's reasoning dimmed while it streams
(then folded to one line; ``/thinking`` shows it whole), one status line per tool with its duration
(time spent at a permission prompt not counted), coloured diffs before a write or edit is allowed
(long ones cut, ``/diff`` shows the whole), a usage line after each turn, and a spinner while waiting.
It never shows the reconstructed historical blocks; ``/context`` says what the next request carries
and ``/memory`` what TurnMemory kept. A resumed session is shown as it looked live.

``@path`` in a prompt attaches that file's text to the message (bounded; a file outside the
workspace needs the read permission); the session stores the prompt as typed.

Ctrl-C during a turn interrupts it (its work stays pending for the next turn); a second Ctrl-C at
the prompt exits. Enter sends; Esc then Enter (or Alt-Enter) inserts a newline. While a turn runs the
terminal does not echo what is typed (it is kept for the next prompt), so neither typeahead nor the
``^C`` of an interrupt lands inside the reply being drawn.

Nothing the model, a tool, a repository or a stored session wrote reaches the terminal raw: the
console passes every piece of text it draws through :func:`turnmemory._text.terminal_safe`, and
untrusted text never becomes rich markup.
"""

from __future__ import annotations

import os
import re
import sys
import termios
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.segment import Segment
from rich.status import Status
from rich.table import Table
from rich.text import Text

from turnmemory._text import terminal_safe
from turnmemory.agent._attach import attach_mentions
from turnmemory.agent._display import (
    live_order,
    one_line,
    permission_line,
    stored_label,
    timestamp,
    tool_label,
    tool_outcome,
)
from turnmemory.agent._runtime import open_agent
from turnmemory.agent._usage import cost
from turnmemory.agent.config import TOOL_HISTORIES, AgentConfig, ConfigError, key_hint
from turnmemory.agent.loop import Agent, TurnOutcome
from turnmemory.agent.permissions import Access, Answer, Rule, session_scope
from turnmemory.agent.store import LoadedSession, SessionStoreError, data_dir
from turnmemory.llm import Event, Usage
from turnmemory.providers import PROVIDERS

__all__ = ["COMMANDS", "ReplCompleter", "ReplView", "SafeConsole", "run_chat"]

COMMANDS: Mapping[str, str] = {
    "/help": "show this help",
    "/new": "start a new session",
    "/clear": "clear the screen and start a new session",
    "/resume": "resume a session: /resume [ID] (default: the latest other one here)",
    "/sessions": "list this workspace's sessions",
    "/model": "show or switch the model: /model [PROVIDER] MODEL",
    "/memory": "this session's TurnMemory",
    "/context": "what the next request will carry, by layer, in tokens",
    "/thinking": "the model's reasoning of the last turn, whole",
    "/diff": "the last diff, whole",
    "/compact": "summarize every turn but the latest (with compaction = drop: drop them)",
    "/tool-history": "earlier turns as raw trace or as TurnMemory: full|memory",
    "/rewind": "undo the last N turns and their file edits: /rewind [N] (default 1)",
    "/exit": "leave (also Ctrl-D)",
}
"""The slash commands and what they do."""

_REFRESH_SECONDS = 0.08
DIFF_LINES = 40
"""A diff longer than this shows its first lines and how many more there are (``/diff`` shows all)."""
_REASONING_LINES = 6  # the reasoning shows its last lines while it streams


class SafeConsole(Console):
    """A rich console that shows, never sends, what a terminal would act on.

    Every segment of text it draws (markdown, tables, live regions, the spinner) passes through
    :func:`~turnmemory._text.terminal_safe`; its own colours and cursor moves are styles and control
    segments, not text, and stay as they are. Untrusted text should still be made safe before it is
    laid out (so that lines are measured as they are shown) and never be given as markup.
    """

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        """The segments of ``renderable``, their text made safe."""
        for segment in super().render(renderable, options):
            if segment.control:
                yield segment
                continue
            shown = terminal_safe(segment.text)
            yield segment if shown is segment.text else Segment(shown, segment.style)


def _markdown(prose: str) -> Markdown:
    """Prose as markdown; links show their address (a terminal hyperlink would hide it)."""
    return Markdown(prose, hyperlinks=False)


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_CONTINUES = re.compile(r"\s|[-*+] |\d+[.)] ")  # an indented continuation, a list item: the block goes on
_LINE = re.compile(r"[^\n]*\n|[^\n]+")  # markdown breaks lines only at newlines


def _settled_prose(prose: str) -> int:
    """How much of streamed ``prose`` is finished markdown blocks: up to a blank line outside a code
    fence that a whole line starting a new block (not an indented continuation nor a list item)
    follows; 0 when none is yet. More prose never settles less."""
    settled = offset = 0
    fence = ""  # the open code fence's marker
    blank = False
    for match in _LINE.finditer(prose):
        line = match.group()
        whole = line.endswith("\n")
        if not fence and blank and whole and line.strip() and not _CONTINUES.match(line):
            settled = offset
        if marker := _FENCE.match(line):
            found = marker.group(1)
            if not fence:
                fence = found
            elif found[0] == fence[0] and len(found) >= len(fence) and not line[marker.end() :].strip():
                fence = ""
        blank = not fence and whole and not line.strip()
        offset += len(line)
    return settled


def _thought(words: int) -> str:
    return f"[dim italic]✻ thought ({words} words; /thinking shows it)[/]"


@contextmanager
def _quiet_terminal() -> Iterator[None]:
    """While a turn runs, the terminal echoes nothing typed: what is typed waits for the next prompt,
    and Ctrl-C still interrupts (without an echoed ``^C`` that would shift the reply being drawn)."""
    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (OSError, ValueError, termios.error):
        yield  # not a terminal (tests drive the REPL in-process)
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ECHOCTL)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


class ReplView:
    """Renders a turn on a rich console: markdown prose, tool lines, diffs, a spinner."""

    def __init__(self, console: Console, workspace: str) -> None:
        self.console = console
        self.workspace = workspace
        self._prose = ""  # the streamed prose not printed for good yet
        self._settled = False  # some of this prose is printed for good, above the live region
        self._live: Live | None = None
        self._refreshed = 0.0
        self._status: Status | None = None
        self._calls: dict[str, str] = {}
        self._reasoning = ""
        self._thinking: Live | None = None
        self._streamed = False  # text streamed since the last completed request (lost on a retry)
        self.forget()

    def forget(self) -> None:
        """Forget what ``/thinking``, ``/diff`` and ``/context`` show of the last turn (a new session)."""
        self.last_reasoning = ""
        self.last_diff = ""
        self.last_input_tokens = 0

    # -- View --------------------------------------------------------------------------------------

    def event(self, event: Event, elapsed: float | None) -> None:
        """Show one turn event."""
        if event.kind == "reasoning":
            self._think(event.text)
            return
        self._fold_reasoning()
        if event.kind == "text":
            self._streamed = self._streamed or bool(event.text)
            self._text(event.text)
        elif event.kind == "usage":
            self._streamed = False
            if event.usage is not None and event.usage.input_tokens:
                self.last_input_tokens = event.usage.input_tokens
        elif event.kind == "tool_start":
            self.end_prose()
            label = tool_label(event.name, event.arguments, self.workspace)
            self._calls[event.call_id] = label
            self.wait(f"running {label}")
        elif event.kind == "tool_end":
            self.pause()
            label = self._calls.pop(event.call_id, "") or terminal_safe(event.name, multiline=False)
            self._tool_line(label, event.output, event.error, elapsed)
            self.wait("thinking")
        elif event.kind == "retry":
            self.end_prose()
            discarded = "[dim] (the text it streamed is discarded)[/]" if self._streamed else ""
            self._streamed = False
            self.console.print(
                f"[yellow]retrying (attempt {event.attempt}): {escape(one_line(event.error or ''))}[/]{discarded}"
            )
            self.wait("retrying")
        elif event.kind == "reduced":
            self.notice(event.text)
            self.wait("thinking")
        elif event.terminal:
            self.end_prose()
            self.pause()
            if event.kind != "done":
                self.console.print(
                    f"[red]turn {event.kind}: {escape(one_line(event.error or event.reason or ''))}[/]"
                )
                self.console.print("[dim]its work is kept for your next message[/]")

    def diff(self, call_id: str, diff: str) -> None:
        """A coloured diff, before the permission prompt; a long one cut at :data:`DIFF_LINES` lines."""
        self.end_prose()
        self.pause()
        self.last_diff = diff
        lines = diff.splitlines()
        self.console.print(diff_text(lines[:DIFF_LINES]), end="")
        if len(lines) > DIFF_LINES:
            self.console.print(f"[dim]… {len(lines) - DIFF_LINES} more lines (/diff shows the whole diff)[/]")

    def notice(self, text: str) -> None:
        """A dim note."""
        self.end_prose()
        self.pause()
        self.console.print(f"[dim yellow]{escape(terminal_safe(text))}[/]")

    def usage(
        self, outcome: TurnOutcome, prices: Mapping[str, float] | None, session: Usage | None = None
    ) -> None:
        """One dim line after a turn: tokens in (read from the cache, written to it, uncached) and out,
        the cache misses by cause, and the turn's and the ``session``'s cost when prices are set."""
        used = outcome.usage
        if not (used.input_tokens or used.output_tokens):
            return
        line = f"tokens: {_short(used.input_tokens)} in"
        if used.cached_tokens or used.cache_write_tokens:
            line += (
                f" ({_short(used.cached_tokens)} read, {_short(used.cache_write_tokens)} written, "
                f"{_short(used.uncached_tokens)} uncached)"
            )
        line += f", {_short(used.output_tokens)} out"
        if prices:
            line += f" · ${cost(used, prices):.4f}"
            if session is not None:
                line += f" (session ${cost(session, prices):.4f})"
        misses = [entry.miss for entry in outcome.requests if entry.miss is not None]
        if misses:
            line += " · cache miss: " + ", ".join(dict.fromkeys(miss.replace("_", " ") for miss in misses))
        self.console.print(f"[dim]{line}[/]")

    def replay(self, loaded: LoadedSession) -> None:
        """A stored session as it looked live: prompts, prose as markdown, folded reasoning, cut diffs,
        permission answers and tool lines in the order they came (``/thinking`` and ``/diff`` then
        show the session's last ones)."""
        self.forget()
        for event in loaded.events:
            data = event.data
            if event.kind == "user_message":
                self.console.print(Text(f"› {terminal_safe(str(data.get('content', '')))}", style="bold"))
            elif event.kind == "assistant_turn":
                self._replay_turn(data)
            elif event.kind == "compaction":
                self.notice(
                    f"[{data.get('turns')} earlier turns {'summarized' if data.get('mode') == 'summary' else 'dropped'}]"
                )
            elif event.kind == "model_switch":
                self.notice(f"now using {data.get('provider')} {data.get('model')}")
            elif event.kind == "rewind":
                self.notice(f"[the last {data.get('turns')} turns above were rewound]")

    def _replay_turn(self, data: Mapping[str, Any]) -> None:
        items = [item for item in data.get("transcript", []) if isinstance(item, Mapping)]
        prose = ""
        for item in live_order(items):
            kind = item.get("kind")
            if kind == "text":
                prose += terminal_safe(str(item.get("text", "")))
                continue
            if prose.strip():
                self.console.print(_markdown(prose))
            prose = ""
            if kind == "tool":
                self._stored_tool_line(item)
            elif kind == "diff":
                self.diff(str(item.get("call_id", "")), str(item.get("diff", "")))
            elif kind == "permission":
                self.console.print(Text(permission_line(item), style="dim"))
            elif kind == "reasoning":
                self.last_reasoning = terminal_safe(str(item.get("text", "")))
                self.console.print(_thought(len(self.last_reasoning.split())))
        if prose.strip():
            self.console.print(_markdown(prose))
        status = data.get("status")
        if status not in (None, "done"):
            why = one_line(str(data.get("error") or data.get("reason") or ""))
            self.console.print(f"[red]turn {escape(str(status))}: {escape(why)}[/]")

    def _stored_tool_line(self, item: Mapping[str, Any]) -> None:
        status = item.get("status")
        error = str(item.get("preview") or "failed") if status == "error" else None
        output = {"exit_code": item["exit_code"]} if isinstance(item.get("exit_code"), int) else None
        duration = item.get("duration")
        self._tool_line(
            stored_label(item), output, error, duration if isinstance(duration, int | float) else None
        )

    def _think(self, chunk: str) -> None:
        """Reasoning streams dimmed, its last lines only."""
        self.pause()
        if self._live is not None:
            self.end_prose()
        self._reasoning += terminal_safe(chunk)
        tail = "\n".join(self._reasoning.rstrip().splitlines()[-_REASONING_LINES:])
        shown = Text(tail, style="dim italic")
        if self._thinking is None:
            self._thinking = Live(shown, console=self.console, auto_refresh=False, transient=True)
            self._thinking.start()
        self._thinking.update(shown, refresh=True)

    def _fold_reasoning(self) -> None:
        """Reasoning that ended folds to one dim line."""
        if self._thinking is None and not self._reasoning:
            return
        if self._thinking is not None:
            self._thinking.stop()
            self._thinking = None
        words = len(self._reasoning.split())
        self.last_reasoning = self._reasoning
        self._reasoning = ""
        if words:
            self.console.print(_thought(words))

    # -- pieces ------------------------------------------------------------------------------------

    def wait(self, what: str) -> None:
        """Show the spinner with ``what``."""
        if self._live is not None or self._thinking is not None:
            return
        if self._status is None:
            self._status = self.console.status(f"[dim]{escape(what)}…[/]", spinner="dots")
            self._status.start()
        else:
            self._status.update(f"[dim]{escape(what)}…[/]")

    def pause(self) -> None:
        """Stop the spinner (before printing, prompting or streaming prose)."""
        if self._status is not None:
            self._status.stop()
            self._status = None

    def end_prose(self) -> None:
        """Finish the prose being streamed: its final markdown rendering stays on screen."""
        if self._live is not None:
            self._live.update(self._live_prose(), refresh=True)
            self._live.stop()
            self._live = None
        self._prose = ""
        self._settled = False

    def _text(self, chunk: str) -> None:
        """Prose streams as markdown in a live region that holds only its unfinished blocks: each
        finished one is printed above it once, so the region never outgrows the screen (a terminal
        cannot redraw lines that scrolled away: they would stay on screen twice)."""
        self.pause()
        self._prose += terminal_safe(chunk)
        cut = _settled_prose(self._prose)
        if cut:
            head, self._prose = self._prose[:cut], self._prose[cut:]
            if self._live is not None:
                self._live.update(self._live_prose(), refresh=False)  # drawn below what is printed now
            self.console.print(Group(Text(), _markdown(head)) if self._settled else _markdown(head))
            self._settled = True
        if self._live is None:
            self._live = Live(
                self._live_prose(), console=self.console, auto_refresh=False, vertical_overflow="visible"
            )
            self._live.start()
        now = time.monotonic()
        if now - self._refreshed >= _REFRESH_SECONDS:
            self._live.update(self._live_prose(), refresh=True)
            self._refreshed = now

    def _live_prose(self) -> RenderableType:
        if not self._settled:
            return _markdown(self._prose)
        return Group(Text(), _markdown(self._prose)) if self._prose.strip() else Group()

    def _tool_line(self, label: str, output: Any, error: str | None, elapsed: float | None) -> None:
        outcome = tool_outcome(output, error)
        colour = "green" if outcome == "ok" else "yellow" if outcome.startswith("exit") else "red"
        took = f" [dim]{elapsed:.1f}s[/]" if elapsed is not None else ""
        self.console.print(f"[{colour}]●[/] {escape(label)} [{colour}]{escape(outcome)}[/]{took}")


def diff_text(lines: list[str]) -> Text:
    """Diff lines coloured: headers bold, additions green, removals red, hunks cyan."""
    text = Text()
    for line in lines:
        style = (
            "bold"
            if line.startswith(("+++", "---"))
            else "green"
            if line.startswith("+")
            else "red"
            if line.startswith("-")
            else "cyan"
            if line.startswith("@@")
            else ""
        )
        text.append(terminal_safe(line) + "\n", style=style)
    return text


def _short(count: int) -> str:
    return f"{count:,}" if count < 10_000 else f"{count / 1000:.1f}k"


class ReplCompleter(Completer):
    """Completes slash commands at the start of the input and ``@path`` mentions anywhere."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        """Completions for the word before the cursor."""
        before = document.text_before_cursor
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if before.startswith("/") and " " not in before:
            for command, meaning in COMMANDS.items():
                if command.startswith(before):
                    yield Completion(command, start_position=-len(before), display_meta=meaning)
        elif word.startswith("@"):
            yield from self._paths(word[1:])

    def _paths(self, partial: str) -> Iterable[Completion]:
        head, _, stem = partial.rpartition("/")
        directory = os.path.realpath(os.path.join(self.workspace, head))
        if not (directory == self.workspace or directory.startswith(self.workspace + os.sep)):
            return
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            if (
                entry.name.startswith(stem)
                and entry.name != ".git"
                and (stem or not entry.name.startswith("."))
            ):
                name = f"{head}/{entry.name}" if head else entry.name
                suffix = "/" if entry.is_dir() else ""
                yield Completion(f"@{name}{suffix}", start_position=-len(partial) - 1)


class PermissionPrompter:
    """Asks the user about one access, after the view has shown any diff."""

    def __init__(self, console: Console, view: ReplView) -> None:
        self.console = console
        self.view = view
        self._answers: PromptSession[str] | None = None

    def read(self, message: str) -> str:
        """One line of input (a session of its own, so answers stay out of the prompt history)."""
        if self._answers is None:
            self._answers = PromptSession()
        return self._answers.prompt(message)

    def __call__(self, access: Access) -> Answer:
        """One answer; Ctrl-C here interrupts the turn."""
        self.view.end_prose()
        self.view.pause()
        self.console.print(Text.assemble(("permission", "bold yellow"), " ", access.summary()))
        scope = session_scope(access, self.view.workspace)
        granted = ", ".join(_grant_label(rule) for rule in scope)
        choices = f"[y] once  [a] {granted} for this session  [n] deny" if scope else "[y] once  [n] deny"
        question = terminal_safe(f"allow? {choices}: ", multiline=False)
        while True:
            reply = self.read(question).strip().lower()
            if reply in ("y", "yes"):
                return Answer("once")
            if reply in ("a", "always") and scope:
                return Answer("session")
            if reply in ("n", "no"):
                if access.attachment:  # the user's own @path: no model reads a reason
                    return Answer("deny")
                return Answer("deny", self.read("reason for the model (optional): ").strip())


def _grant_label(rule: Rule) -> str:
    """How the prompt names what "allow for this session" grants: `git status *`, web:host..."""
    if rule.kind == "bash":
        return f"`{rule.pattern}`"
    return str(rule) if rule.pattern else f"{rule.kind} in the workspace"


class Repl:
    """The read-eval-print loop over one :class:`Agent`."""

    def __init__(
        self,
        agent: Agent,
        console: Console,
        view: ReplView,
        session: PromptSession[str],
        prompter: PermissionPrompter | None = None,
    ) -> None:
        self.agent = agent
        self.console = console
        self.view = view
        self.session = session
        self.prompter = prompter or PermissionPrompter(console, view)

    def loop(self) -> int:
        """Read prompts until ``/exit``, Ctrl-D or a second Ctrl-C; the exit status."""
        self.console.print(
            f"[bold]turnmemory[/] [dim]{escape(self.agent.config.provider)} {escape(self.agent.config.model)} · "
            f"session {self.agent.session_id[:8]} · /help for commands[/]"
        )
        interrupted = False  # the last thing that happened was a Ctrl-C: another one exits
        while True:
            try:
                text = self.session.prompt("› ")
                interrupted = False
                if text.strip().startswith("/"):
                    if not self.command(text.strip()):
                        return 0
                elif text.strip():
                    interrupted = self._turn(text)
            except KeyboardInterrupt:
                if interrupted:
                    return 0
                interrupted = True
                self.console.print("[dim](Ctrl-C again to exit)[/]")
            except EOFError:
                return 0

    def _turn(self, text: str) -> bool:
        """Run one turn; whether it was interrupted. A Ctrl-C while it is being saved propagates."""
        attached, notes = attach_mentions(text, self.agent)
        for note in notes:
            self.view.notice(note)
        if attached:
            tokens = self.agent.client.accounting.scaled(self.agent.client.accounting.counter.text(attached))
            window = self.agent.client.accounting.limits.window
            self.view.notice(
                f"attachments: ~{tokens:,} tokens ({tokens / window:.1%} of the window), this message only"
            )
        self.view.wait("thinking")
        try:
            with _quiet_terminal():
                outcome = self.agent.turn(text, attachments=attached)
        finally:
            self.view.end_prose()
            self.view.pause()
        if hint := key_hint(self.agent.config, outcome.error or ""):
            self.view.notice(hint)
        self.view.usage(outcome, self.agent.config.prices, self.agent.usage.session_total)
        if outcome.status != "interrupted":
            return False
        self.console.print("[yellow]interrupted[/] [dim]- the work so far is kept; Ctrl-C again to exit[/]")
        return True

    def command(self, line: str) -> bool:
        """Run one slash command; ``False`` means exit."""
        name, _, rest = line.partition(" ")
        argument = rest.strip()
        try:
            if name in ("/exit", "/quit"):
                return False
            if name == "/help":
                for command, meaning in COMMANDS.items():
                    self.console.print(f"  [bold]{command:<10}[/] {meaning}")
                self.console.print(
                    "  [dim]@path mentions a file; Esc Enter inserts a newline; Ctrl-C interrupts a turn[/]"
                )
            elif name in ("/new", "/clear"):
                self.agent.new_session()
                self.view.forget()
                if name == "/clear":
                    self.console.clear()
                self.console.print(f"[dim]new session {self.agent.session_id[:8]}[/]")
            elif name == "/resume":
                self._resume(argument)
            elif name == "/sessions":
                self._sessions()
            elif name == "/model":
                self._model(argument)
            elif name == "/memory":
                self._memory()
            elif name == "/context":
                self._context()
            elif name == "/compact":
                with _quiet_terminal():
                    self.agent.compact(force=True)
            elif name == "/tool-history":
                self._tool_history(argument)
            elif name == "/rewind":
                self._rewind(argument)
            elif name == "/thinking":
                shown = self.view.last_reasoning.strip()
                self.console.print(
                    Text(shown, style="dim italic") if shown else "[dim]no reasoning shown yet[/]"
                )
            elif name == "/diff":
                if self.view.last_diff:
                    self.console.print(diff_text(self.view.last_diff.splitlines()), end="")
                else:
                    self.console.print("[dim]no diff yet[/]")
            else:
                self.console.print(f"[red]unknown command {escape(name)}[/] [dim](/help lists them)[/]")
        except (ConfigError, KeyError, SessionStoreError) as error:
            message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
            self.console.print(f"[red]{escape(str(message))}[/]")
        return True

    def _resume(self, argument: str) -> None:
        store = self.agent.store
        if argument:
            session_id = store.resolve(argument)
        else:
            others = [
                s.id for s in store.sessions(self.agent.workspace, limit=2) if s.id != self.agent.session_id
            ]
            if not others:
                raise KeyError("no other session in this workspace")
            session_id = others[0]
        self.agent.resume(session_id)
        self.view.replay(store.load(session_id))
        self.console.print(
            f"[dim]resumed session {session_id[:8]} · {escape(self.agent.config.provider)} "
            f"{escape(self.agent.config.model)}[/]"
        )

    def _rewind(self, argument: str) -> None:
        if argument and not (argument.isdigit() and int(argument) > 0):
            raise KeyError(f"/rewind takes a number of turns, got {argument!r}")

        def ask(question: str) -> bool:
            reply = self.prompter.read(terminal_safe(f"{question} [y/N]: ", multiline=False))
            return reply.strip().lower() in ("y", "yes")

        for line in self.agent.rewind(int(argument or 1), ask=ask):
            self.console.print(Text(terminal_safe(line), style="dim"))
        self.view.forget()  # the last turn's reasoning and diff may be gone with it

    def _sessions(self) -> None:
        table = Table("id", "started", "turns", "last prompt", box=None)
        for found in self.agent.store.sessions(self.agent.workspace):
            marker = " *" if found.id == self.agent.session_id else ""
            table.add_row(
                found.id[:8] + marker,
                timestamp(found.created_at),
                str(found.turns),
                Text(one_line(found.last_prompt or "", 60)),
            )
        self.console.print(table)

    def _model(self, argument: str) -> None:
        words = argument.split()
        if not words:
            self.console.print(Text(f"{self.agent.config.provider} {self.agent.config.model}"))
            return
        provider, model = (words[0], words[1]) if len(words) > 1 else (None, words[0])
        if provider is None and ":" in model and model.split(":", 1)[0] in PROVIDERS:
            provider, model = model.split(":", 1)
        self.agent.switch_model(provider, model)
        self.console.print(
            Text(f"now using {self.agent.config.provider} {self.agent.config.model}", style="dim")
        )

    def _memory(self) -> None:
        table = Table("turn", "offset", "tool", "status", "target", "outcome", box=None)
        turn = 0
        for message in self.agent.messages:
            if message.role != "assistant":
                continue
            turn += 1
            for activity in message.activities:
                outcome = activity.file_changed or (
                    f"{activity.failed_command} (exit {activity.exit_code})" if activity.exit_code else ""
                )
                tool = f"{activity.server}.{activity.tool}" if activity.server else activity.tool
                table.add_row(
                    str(turn),
                    str(activity.text_offset),
                    *(
                        Text(terminal_safe(cell, multiline=False))
                        for cell in (tool, activity.status, activity.target or "", outcome)
                    ),
                )
        if table.row_count:
            self.console.print(table)
        else:
            self.console.print("[dim]no tool activity retained yet[/]")

    def _context(self) -> None:
        layers = self.agent.context_layers()
        accounting = self.agent.client.accounting
        limits = accounting.limits
        table = Table("layer", "tokens", "of window", "bytes", box=None)
        total = self.agent.request_tokens()
        rows = [(layer.name, layer.tokens, f"{layer.size:,}") for layer in layers]
        # what the layers leave out: roles, keys and the request's parameters (so the rows add up)
        rows.append(("framing", max(total - sum(layer.tokens for layer in layers), 0), ""))
        for name, tokens, size in rows:
            table.add_row(name, f"{tokens:,}", f"{tokens / limits.window:.1%}", size)
        total = sum(tokens for _, tokens, _ in rows)
        table.add_row(
            "[bold]next request[/]", f"[bold]{total:,}[/]", f"[bold]{total / limits.window:.1%}[/]", ""
        )
        self.console.print(table)
        calibrated = (
            f", calibrated x{accounting.ratio:.2f} by reported usage" if accounting.ratio != 1 else ""
        )
        self.console.print(
            f"[dim]tokens: an offline {accounting.counter.unit} estimate{calibrated}; the window is "
            f"{limits.window:,} tokens, a request may carry {limits.budget:,}; the new message comes on top[/]"
        )
        self._session_usage()
        if self.view.last_input_tokens:
            self.console.print(
                f"[dim]the last request carried {self.view.last_input_tokens:,} input tokens "
                f"({self.view.last_input_tokens / limits.window:.1%} of the window), as the provider reported[/]"
            )

    def _tool_history(self, argument: str) -> None:
        if argument not in TOOL_HISTORIES:
            current = self.agent.config.tool_history
            self.console.print(f"[dim]tool history: {current} (/tool-history full|memory)[/]")
            return
        self.agent.set_tool_history(argument)
        self.console.print(
            "[dim]tool history: full - the turns that finish from now on keep their raw trace, "
            "in this process only (never stored)[/]"
            if argument == "full"
            else "[dim]tool history: memory - earlier turns travel as their TurnMemory[/]"
        )

    def _session_usage(self) -> None:
        """The session's input so far: read from the cache, written to it, uncached; misses; cost."""
        ledger = self.agent.usage
        total = ledger.session_total
        if not (total.input_tokens or total.output_tokens):
            return
        line = (
            f"session: {total.input_tokens:,} input tokens ({total.cached_tokens:,} read from the cache, "
            f"{total.cache_write_tokens:,} written to it, {total.uncached_tokens:,} uncached), "
            f"{total.output_tokens:,} output"
        )
        prices = self.agent.config.prices
        if prices:
            line += f"; ${cost(total, prices):.4f}"
        misses = ledger.misses()
        if misses:
            line += "; cache misses: " + ", ".join(
                f"{count} {cause.replace('_', ' ')}" for cause, count in misses.items()
            )
        self.console.print(f"[dim]{line}[/]")


def _bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return bindings


def run_chat(
    config: AgentConfig, *, workspace: str, session: str | None, latest: bool, session_model: bool = False
) -> int:
    """Run the REPL; its exit status. ``ConfigError`` propagates for the caller to report.

    With ``session_model`` a resumed session continues with the model it last used.
    """
    console = SafeConsole(highlight=False, emoji=False)
    workspace = os.path.realpath(workspace)
    view = ReplView(console, workspace)
    ask = PermissionPrompter(console, view)
    with open_agent(
        config,
        workspace=workspace,
        view=view,
        ask=ask,
        session=session,
        latest=latest,
        session_model=session_model,
    ) as agent:
        history_file = data_dir() / "prompt_history"
        history_file.parent.mkdir(parents=True, exist_ok=True)  # absent with a store elsewhere
        prompt: PromptSession[str] = PromptSession(
            history=FileHistory(str(history_file)),
            completer=ReplCompleter(workspace),
            complete_while_typing=False,
            key_bindings=_bindings(),
            multiline=False,
        )
        if agent.messages:
            view.replay(agent.store.load(agent.session_id))
        return Repl(agent, console, view, prompt, ask).loop()
