"""The agent: one session's conversation, its LLM client, tools and permissions, turn by turn.

:class:`Agent` is what both front ends (headless ``run`` and the ``chat`` REPL) drive, and what
tests drive in-process. Each turn:

1. persists the prompt, then runs ``client.run_turn`` over the retained conversation (system prompt,
   user messages, assistant prose with its TurnMemory), feeding every event to a ``TurnRecorder``
   and to the front end's :class:`View`;
2. runs each tool call through prepare (validation of paths and edits, the diff), permission (asked
   through the front end, or decided by rules when there is nobody to ask) and execution;
3. persists the turn's ``Message`` (prose + TurnMemory) and display transcript, whatever the ending.

An incomplete or interrupted turn keeps its provider-native pending state in the client for the next
turn; its partial ``Message`` joins the conversation (as a resumed session would see it) but is left
out of requests while the pending state carries that work. The pending state is journaled beside the
session while it lives (at each tool start and end), so a process that stops mid-turn loses no
completed call: resuming records the turn as interrupted and replays the journal (see
:mod:`turnmemory.agent._interrupted`). Switching session,
model or provider drops the pending state and persists it as a ``pending_drop`` event.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from turnmemory._text import compact_json
from turnmemory.agent import _credentials
from turnmemory.agent._context import ContextLayer, context_layers
from turnmemory.agent._interrupted import NOTE, STOPPED, journal, read_interrupted
from turnmemory.agent._oneshot import closing, run_once, subagent_answer
from turnmemory.agent._spill import SpillArea
from turnmemory.agent._usage import RequestUsage, UsageLedger, usage_dict
from turnmemory.agent.bash import open_sandbox
from turnmemory.agent.compaction import (
    Compaction,
    far_from_window,
    make_way,
    marker,
    summary_request,
    summary_words,
)
from turnmemory.agent.config import AgentConfig, ConfigError, ToolHistory, credentials
from turnmemory.agent.permissions import Access, Asker, Permissions
from turnmemory.agent.prompt import system_prompt
from turnmemory.agent.rewind import checkpoints, rewind
from turnmemory.agent.store import LoadedSession, SessionStore, TurnStatus, transcript_items
from turnmemory.agent.store._journal import JournalEntry
from turnmemory.agent.tools import READ_ONLY_TOOLS, Tool, ToolContext, ToolError, ToolRegistry, builtin_tools
from turnmemory.llm import UNKNOWN, Client, Event, Pending, ToolResult, ToolSpec, Usage, open_client, record
from turnmemory.memory import Message
from turnmemory.segments import TurnRecorder

__all__ = [
    "Agent",
    "ClientFactory",
    "ContextLayer",
    "TurnOutcome",
    "View",
    "open_agent_client",
    "session_config",
]


class View(Protocol):
    """What a front end shows of a turn."""

    def event(self, event: Event, elapsed: float | None) -> None:
        """One turn event; ``elapsed`` is the tool's run time on ``tool_end`` events."""

    def diff(self, call_id: str, diff: str) -> None:
        """The diff a write or edit would make (before its permission is decided)."""

    def notice(self, text: str) -> None:
        """A one-line note for the user (a skipped session row, dropped pending state...)."""


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended, and the ``Message`` it left in the conversation."""

    status: TurnStatus
    message: Message
    error: str | None = None
    reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    requests: tuple[RequestUsage, ...] = ()
    """Each request's usage, with the cause of its cache miss."""


ClientFactory = Callable[[AgentConfig, "str | None"], Client]
"""Opens the LLM client for a configuration and a session id (``None`` for a subagent)."""


def open_agent_client(config: AgentConfig, session_id: str | None) -> Client:
    """The default :data:`ClientFactory`: :func:`turnmemory.llm.open_client` with the config's settings;
    a :class:`ConfigError` when a credential is missing."""
    return open_client(
        config.provider,
        model=config.model,
        base_url=config.base_url,
        api_key=credentials(config),
        region=config.region,
        session_id=session_id,
        id_style=config.id_style,
        single_calls=config.single_calls,
        timeout=config.timeout,
        connect_timeout=config.connect_timeout,
        deadline=config.deadline,
        context_window=config.context_window,
        context_reserve=config.context_reserve,
        clear_at_least=config.clear_at_least,
        boundary=config.client_boundary,
        max_tool_turns=config.max_tool_rounds,
        max_calls=config.max_calls_per_response,
        max_argument_bytes=config.max_argument_bytes,
    )


def _raise_the_limit(event: Event) -> Event:
    """A ``tool_limit`` ending that names the setting which raises the limit."""
    limit = event.error or "the turn reached its limit of tool rounds"
    return replace(
        event, error=f"{limit}; raise it with --max-tool-rounds or max_tool_rounds in the config file"
    )


def session_config(
    config: AgentConfig, used: tuple[str, str] | None, notice: Callable[[str], None]
) -> AgentConfig:
    """``config`` switched to the provider and model a session last used (``used``) where their client
    can be opened here; else ``config``, with a notice saying why not."""
    if used is None or used == (config.provider, config.model):
        return config
    try:
        switched = config.switched(*used)
        credentials(switched)
    except ConfigError as error:
        notice(f"the session last used {used[0]} {used[1]}, which cannot be opened here ({error})")
        return config
    return switched


_TERMINAL_STATUS: dict[str, TurnStatus] = {"done": "done", "incomplete": "incomplete", "error": "error"}


def _specs(tools: ToolRegistry) -> list[ToolSpec]:
    return [
        ToolSpec(name=tool.name, description=tool.description, input_schema=tool.input_schema)
        for tool in tools
    ]


class Agent:
    """One session of the coding agent.

    ``ask`` asks the user about a permission (``None`` in headless runs: anything not allowed by a
    rule is denied, with a reason the model sees). ``session_id`` resumes a stored session; without
    it a new one starts. ``extra_tools`` (the MCP wrappers) join the built-in tools, and
    ``mcp_catalogue`` the system prompt. ``spill`` is where cut outputs are kept during a turn (by
    default a new area under the store's spill root). ``loaded`` is the session ``session_id`` as
    the caller already read it (read once per resume).
    """

    def __init__(
        self,
        config: AgentConfig,
        store: SessionStore,
        *,
        workspace: str,
        view: View,
        ask: Asker | None = None,
        session_id: str | None = None,
        client_factory: ClientFactory = open_agent_client,
        extra_tools: Sequence[Tool] = (),
        mcp_catalogue: str = "",
        spill: SpillArea | None = None,
        loaded: LoadedSession | None = None,
    ) -> None:
        self.config = config
        _remember_credentials(config)
        self.store = store
        self.workspace = os.path.realpath(workspace)
        self.view = view
        self._client_factory = client_factory
        self.tools = ToolRegistry([*builtin_tools(subagent=self._run_subagent), *extra_tools])
        self._readonly = ToolRegistry(READ_ONLY_TOOLS)
        self._spill = spill or SpillArea(store.spill_root)
        self.permissions = Permissions(
            self.workspace, config.allow, ask=ask, extra_readable=[str(self._spill.path)]
        )
        self.sandbox, unavailable = open_sandbox(config.sandbox, self.workspace, config.sandbox_readable)
        if unavailable is not None:
            view.notice(unavailable)
        self.system = Message(
            role="system", content=system_prompt(self.workspace, mcp_catalogue=mcp_catalogue)
        )
        self.messages: list[Message] = []
        self._recorder = TurnRecorder(self.workspace)
        self._waited: dict[str, float] = {}  # seconds each call of the turn spent waiting for a person
        self._note = ""  # a line for the model in the next turn's system prompt
        self.usage = UsageLedger()
        """Every request of this session in this process: reads, writes, uncached input, misses."""
        self._sent: tuple[str, str, str] | None = None  # provider, model and tool list of the last turn
        self._compacted = False  # since the last turn
        if session_id is None:
            self.session_id = store.create(self.workspace, provider=config.provider, model=config.model)
        else:
            self.session_id = session_id
            store.claim(session_id)  # one writer per session: another process's claim fails here
            loaded = loaded or store.load(session_id, transcripts=False)
            self._load(loaded)
        self._checkpoints = checkpoints(store, self.session_id)
        self._journal = journal(store, self.session_id)
        self._turn_seq = 0  # the running turn's prompt's seq: its checkpoints' and journal's name
        self.client = client_factory(config, self.session_id)
        if loaded is not None and session_id is not None:
            self._restore(loaded)

    # -- turns -------------------------------------------------------------------------------------

    @property
    def context(self) -> ToolContext:
        """Where this session's tools run."""
        return ToolContext(workspace=self.workspace, spill_dir=str(self._spill.path), sandbox=self.sandbox)

    def request_history(self, messages: Sequence[Message] | None = None) -> list[Message]:
        """The history the next request carries: the system prompt and the retained conversation (or
        ``messages``), without the records of the interrupted turns whose work the client's pending
        state carries (the client says how many: they are the latest)."""
        messages = self.messages if messages is None else messages
        return [self.system, *_carried(messages, self.client.pending_turns)]

    def turn(self, prompt: str, *, attachments: str = "") -> TurnOutcome:
        """Run one assistant turn for ``prompt``; Ctrl-C (``KeyboardInterrupt``) ends it as interrupted.

        ``attachments`` (the files a prompt mentions with ``@path``, already read) go to the model
        with this turn's request only: the session stores the prompt as typed, so later turns, live or
        resumed, carry the same history and read the files again when they need them.

        When the request would near the context window, the oldest turns are compacted first (see
        :mod:`turnmemory.agent.compaction`); a turn that overflows anyway drops its pending state, so
        the next one starts from its compact record.
        """
        self.compact(prompt)
        self._start_usage()
        history = self.request_history()
        if self._note:
            history[0], self._note = (
                Message(role="system", content=f"{self.system.content}\n\n{self._note}"),
                "",
            )
        self._turn_seq = self.store.add_user_message(self.session_id, prompt)
        carried = self.client.pending_state()
        if carried is not None:  # this turn carries it on: it counts one turn more, this one its latest
            self._save(Pending(carried.items, carried.conversation, carried.turns + 1, len(carried.items)))
        recorder = self._recorder = TurnRecorder(self.workspace)
        started: dict[str, float] = {}
        durations: dict[str, float] = {}
        usage = Usage()
        status: TurnStatus = "error"
        error: str | None = "the turn ended without a result"
        reason: str | None = None
        try:
            request = f"{prompt}\n\n{attachments}" if attachments else prompt
            events = self.client.run_turn(history, request, tools=_specs(self.tools), execute=self._execute)
            with closing(events):
                for event in events:
                    record(event, recorder)
                    elapsed = None
                    if event.kind in ("tool_start", "tool_end"):
                        self._save(self.client.pending_state())
                    if event.kind == "tool_start":
                        started[event.call_id] = time.monotonic()
                    elif event.kind == "tool_end":
                        elapsed = time.monotonic() - started.pop(event.call_id, time.monotonic())
                        elapsed = max(0.0, elapsed - self._waited.pop(event.call_id, 0.0))
                        durations[event.call_id] = elapsed
                    elif event.kind == "usage" and event.usage is not None:
                        usage = usage + event.usage
                        self.usage.add(event.usage, time.monotonic())
                    elif event.terminal:
                        status, error, reason = _TERMINAL_STATUS[event.kind], event.error, event.reason
                        if reason == "tool_limit":
                            event = _raise_the_limit(event)
                            error = event.error
                    self.view.event(event, elapsed)
        except KeyboardInterrupt:
            status, error, reason = "interrupted", "interrupted by the user", None
            _unknown(recorder, started)
        except BaseException as failure:
            _unknown(recorder, started)
            self._finish(
                prompt, recorder, durations, "error", f"{type(failure).__name__}: {failure}", None, usage
            )
            raise
        outcome = self._finish(prompt, recorder, durations, status, error, reason, usage)
        if reason == "context_overflow":
            self._drop_pending("the context window overflowed")
        elif attachments:
            self._own_pending()
        return outcome

    def _own_pending(self) -> None:
        """Let the pending state belong to the conversation as the session keeps it: the prompt as
        typed, not as it was sent with its attached files, as a resumed process would find it."""
        state = self.client.pending_state()
        if state is not None:
            carried = tuple(_carried(self.messages, state.turns))
            self.client.restore_pending(Pending(state.items, carried, state.turns, state.latest))

    def _start_usage(self) -> None:
        """Tell the usage ledger what changed since the last turn (the causes of a cache miss)."""
        sent = (
            self.config.provider,
            self.config.model,
            compact_json([s.schema() for s in _specs(self.tools)]),
        )
        last, self._sent = self._sent, sent
        self.usage.turn_started(
            time.monotonic(),
            model_switch=last is not None and last[:2] != sent[:2],
            tools_changed=last is not None and last[2] != sent[2],
            compacted=self._compacted,
        )
        self._compacted = False

    def compact(self, prompt: str = "", *, force: bool = False) -> Compaction | None:
        """Compact the oldest turns when the next request (for ``prompt``) nears the context window;
        with ``force`` (``/compact``), every turn but the latest. The compaction, or ``None``.

        The mode is the config's ``compaction``; a summary that cannot be written falls back to
        dropping the turns with a marker. ``force`` with ``compaction = "off"`` writes a summary.
        """
        mode = self.config.compaction
        if mode == "off" and not force:
            return None
        accounting = self.client.accounting
        budget = accounting.limits.budget
        specs = _specs(self.tools)
        bound = self.client.request_bound(self.request_history(), prompt or ".", tools=specs)
        if not force and bound is not None and far_from_window(bound, budget):
            return None  # surely far from the window, known without loading the tokenizer
        before = self.request_tokens(prompt)
        if not force and far_from_window(before, budget):
            return None
        sizes = [accounting.scaled(accounting.counter.value(m.to_dict())) for m in self.messages]
        limit = _turn_start(self.messages, self.client.pending_turns) if self.client.pending_turns else None
        cut = make_way(self.messages, sizes, before, budget, force=force, limit=limit)
        if cut == 0:
            if force:
                self.view.notice("nothing to compact: the session has one turn")
            return None
        old = self.messages[:cut]
        turns = sum(1 for message in old if message.role == "user")
        summary = self._summarize(old, budget) if mode != "drop" else None
        kind: Literal["summary", "drop"] = "summary" if summary else "drop"
        compaction = Compaction(
            replaces=cut, content=marker(kind, turns, summary or ""), mode=kind, turns=turns
        )
        messages = compaction.apply(self.messages)
        history = self.request_history(messages)
        after = self.client.request_tokens(history, prompt or ".", tools=specs)
        compaction = replace(compaction, freed=max(before - after, 0))
        self.store.add_compaction(self.session_id, compaction.to_dict())
        self.messages = messages
        self._compacted = True
        self.client.rebase_pending(history)  # the interrupted turns it carries are still the latest
        done = "summarized" if kind == "summary" else "dropped"
        plural = "s" if turns != 1 else ""
        self.view.notice(
            f"compacted the session: {turns} earlier turn{plural} {done} (~{compaction.freed} tokens freed)"
        )
        return compaction

    def request_tokens(self, prompt: str = "") -> int:
        """The estimated tokens of the next request for ``prompt`` (tools and pending state included)."""
        return self.client.request_tokens(self.request_history(), prompt or ".", tools=_specs(self.tools))

    def _summarize(self, messages: list[Message], budget: int) -> str | None:
        """A model-written summary of ``messages`` (a request without tools), or ``None`` on failure."""
        client = self._client_factory(self.config, None)
        history, prompt = summary_request(messages, words=summary_words(budget))
        summary, failure = run_once(client, history, prompt, self.workspace)
        if failure is None and summary:
            return summary
        why = failure or "it was empty"
        self.view.notice(f"the summary of earlier turns failed ({why}); they are dropped instead")
        return None

    def _finish(
        self,
        prompt: str,
        recorder: TurnRecorder,
        durations: dict[str, float],
        status: TurnStatus,
        error: str | None,
        reason: str | None,
        usage: Usage,
    ) -> TurnOutcome:
        self._spill.clear()  # spilled outputs exist for the model within the turn only
        self._save(self.client.pending_state())
        message = recorder.finish()
        if status == "done":
            error = None
        self.store.add_assistant_turn(
            self.session_id,
            message,
            status=status,
            error=error,
            reason=reason,
            usage=usage_dict(usage),
            transcript=transcript_items(recorder.segments, durations=durations, workspace=self.workspace),
        )
        self.messages.append(Message(role="user", content=prompt))
        if message.content or message.turn_memory is not None:
            self.messages.append(message)
        return TurnOutcome(
            status=status,
            message=message,
            error=error,
            reason=reason,
            usage=usage,
            requests=tuple(self.usage.turn),
        )

    def _execute(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        return self._run_call(self.tools, call_id, name, arguments, self._recorder)

    def _run_call(
        self,
        tools: ToolRegistry,
        call_id: str,
        name: str,
        arguments: dict[str, Any],
        recorder: TurnRecorder | None,
    ) -> ToolResult:
        """Prepare, authorize and run one call; every failure is an error result the model reads.

        A staged action (a path outside the workspace) is prepared, and its diff shown, only once its
        access is granted; accesses a tool finds while running (a redirect's host) are decided the same way.
        """

        def authorize(access: Access) -> str | None:
            asked = time.monotonic()
            decision = self.permissions.decide(access)
            if decision.how in ("once", "session", "deny"):  # a person answered: not the tool's time
                self._waited[call_id] = self._waited.get(call_id, 0.0) + time.monotonic() - asked
            if decision.how != "auto" and recorder is not None:
                recorder.permission(call_id, access.summary(), decision.label)
            return None if decision.allowed else decision.reason

        def show(diff: str | None) -> None:
            if diff is not None and recorder is not None:
                recorder.diff(call_id, diff)
                self.view.diff(call_id, diff)

        try:
            action = tools.prepare(name, arguments, replace(self.context, authorizer=authorize))
            show(action.diff)
            if action.access is not None and (refused := authorize(action.access)) is not None:
                return ToolResult(error=f"permission denied: {refused}")
            if action.staged is not None:
                action = action.staged()
                show(action.diff)
            if action.changes is None or recorder is None:
                return ToolResult(output=_credentials.scrub(action.run()))
            self._checkpoints.before_change(self._turn_seq, action.changes)
            try:
                return ToolResult(output=_credentials.scrub(action.run()))
            finally:
                self._checkpoints.after_change(self._turn_seq, action.changes)
        except ToolError as failure:
            return ToolResult(error=_credentials.scrub(str(failure)))
        except OSError as failure:
            return ToolResult(error=_credentials.scrub(f"{name} failed: {failure.strerror or failure}"))

    def _run_subagent(self, agent: str, task: str) -> str:
        """Run a delegated task with a fresh client and read-only tools (see :mod:`._oneshot`)."""

        def execute(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
            return self._run_call(self._readonly, call_id, name, arguments, None)

        client = self._client_factory(self.config, None)
        return subagent_answer(
            client, self.workspace, agent, task, tools=_specs(self._readonly), execute=execute
        )

    # -- sessions, models --------------------------------------------------------------------------

    def new_session(self) -> None:
        """Start a new session in the same workspace (``/new``, ``/clear``)."""
        self._drop_pending("new session")
        previous = self.session_id
        self.session_id = self.store.create(
            self.workspace, provider=self.config.provider, model=self.config.model
        )
        self.store.release(previous)
        self.messages = []
        self.usage = UsageLedger()
        self._checkpoints = checkpoints(self.store, self.session_id)
        self._journal = journal(self.store, self.session_id)
        self.permissions.reset_session()
        self.client = self._client_factory(self.config, self.session_id)

    def resume(self, session_id: str) -> None:
        """Continue the stored session ``session_id`` (``/resume``) with the model it last used."""
        loaded = self.store.load(session_id, transcripts=False)
        previous = self.session_id
        self.store.claim(session_id)
        self._drop_pending("resumed another session")
        if previous != session_id:
            self.store.release(previous)
        self.session_id = session_id
        self.messages = []
        self._checkpoints = checkpoints(self.store, session_id)
        self._journal = journal(self.store, session_id)
        self._load(loaded)
        self.permissions.reset_session()
        self.config = session_config(self.config, loaded.model, self.view.notice)
        _remember_credentials(self.config)
        self.client = self._client_factory(self.config, self.session_id)
        self._restore(loaded)

    def rewind(self, turns: int, *, ask: Callable[[str], bool] | None = None) -> list[str]:
        """Rewind the last ``turns`` turns (``/rewind``): see :mod:`turnmemory.agent.rewind`. Their
        pending state goes too (it carries their work); one line per thing done or not done."""
        lines = rewind(self.store, self.session_id, turns, ask=ask)
        self.client.drop_pending(TurnRecorder(self.workspace))
        self.messages = list(self.store.load(self.session_id, transcripts=False).messages)
        return lines

    def switch_model(self, provider: str | None, model: str | None) -> None:
        """Use another provider and/or model from the next turn on (``/model``); a model whose client
        cannot be opened (a missing key) leaves everything as it was."""
        config = self.config.switched(provider, model)
        _remember_credentials(config)
        client = self._client_factory(config, self.session_id)
        self._drop_pending(f"switched to {config.provider} {config.model}")
        self.config, self.client = config, client
        self.store.append(
            self.session_id, "model_switch", {"provider": config.provider, "model": config.model}
        )

    def set_tool_history(self, mode: ToolHistory) -> None:
        """``full``: the turns that finish from now on keep travelling as their raw trace (in this
        process's memory only, never stored); ``memory``: earlier turns travel as their TurnMemory
        records again from the next turn on."""
        self.config = replace(self.config, tool_history=mode)
        self.client.boundary = self.config.client_boundary

    def _drop_pending(self, reason: str) -> None:
        message = self.client.drop_pending(TurnRecorder(self.workspace))
        self._journal.delete()
        if message is not None:
            self.store.add_pending_drop(self.session_id, message, reason=reason)
            self.view.notice(
                f"dropped the pending state of the unfinished turn ({reason}); the session keeps its record"
            )

    def _save(self, state: Pending | None) -> None:
        """Journal ``state`` (the pending state the process would lose if it stopped now), or delete the
        journal when there is none."""
        if state is None:
            self._journal.delete()
            return
        entry = JournalEntry(
            session=self.session_id,
            provider=self.config.provider,
            model=self.config.model,
            turn=self._turn_seq,
            turns=state.turns,
            latest=state.latest,
            items=tuple(state.items),
        )
        self._journal.write(entry)

    def _restore(self, loaded: LoadedSession) -> None:
        """Bring back a turn the last process did not finish: record it as interrupted, and replay its
        journal as pending state (see :mod:`turnmemory.agent._interrupted`); one line for the user."""
        found = read_interrupted(loaded, self._journal, self.workspace)
        label = f"session {self.session_id[:8]}"
        if found.problem is not None:
            self.view.notice(f"the turn journal of {label} is not replayed: {found.problem}")
        if found.unrecorded:
            message = found.recorder.finish()
            self.store.add_assistant_turn(
                self.session_id,
                message,
                status="interrupted",
                error=STOPPED,
                transcript=transcript_items(found.recorder.segments, workspace=self.workspace),
            )
            if message.content or message.turn_memory is not None:
                self.messages.append(message)
            self._note = NOTE
        entry = found.entry
        if entry is None:
            self._journal.delete()
            return
        if (entry.provider, entry.model) != (self.config.provider, self.config.model):
            self.view.notice(
                f"the interrupted turn's pending state is not replayed: it is for {entry.provider} "
                f"{entry.model}; the session keeps its record"
            )
            self._journal.delete()
            return
        carried = tuple(_carried(self.messages, entry.turns))
        try:
            self.client.restore_pending(Pending(entry.items, carried, entry.turns, entry.latest))
        except ValueError as error:
            self.view.notice(f"the turn journal of {label} is not replayed: {error}")
            self._journal.delete()
            return
        unknown = f", {found.unknown} with an unknown outcome (not run again)" if found.unknown else ""
        self.view.notice(
            f"the last turn was interrupted; its work is carried into the next turn "
            f"({found.completed} completed tool calls replayed{unknown})"
        )

    def _load(self, loaded: LoadedSession) -> None:
        for problem in loaded.problems:
            self.view.notice(problem)
        if loaded.info.workspace != self.workspace:
            self.view.notice(f"session {loaded.info.id[:8]} was started in {loaded.info.workspace}")
        self.messages = list(loaded.messages)
        self.usage = UsageLedger(earlier=loaded.usage)

    # -- inspection --------------------------------------------------------------------------------

    def memory(self) -> list[Message]:
        """This session's assistant messages that carry a TurnMemory."""
        return [message for message in self.messages if message.turn_memory is not None]

    def context_layers(self) -> list[ContextLayer]:
        """What the next request will carry, by layer, in UTF-8 bytes of the provider's JSON."""
        return context_layers(self.config.provider, self.client, self.request_history(), _specs(self.tools))


def _unknown(recorder: TurnRecorder, started: dict[str, float]) -> None:
    """End the calls of an interrupted turn that started and never ended as the pending state does:
    their outcome is unknown."""
    for call_id in started:
        recorder.tool_end(call_id, error=UNKNOWN.error)


def _carried(messages: Sequence[Message], turns: int) -> list[Message]:
    """``messages`` without the records of their last ``turns`` turns (their prompts kept): the
    conversation that pending state carrying those turns' work belongs to."""
    start = _turn_start(messages, turns)
    return [*messages[:start], *(m for m in messages[start:] if m.role == "user")]


def _turn_start(messages: Sequence[Message], turns: int) -> int:
    """Where the last ``turns`` user turns of ``messages`` begin (``len(messages)`` for none)."""
    starts = [index for index, message in enumerate(messages) if message.role == "user"]
    return starts[-turns] if 0 < turns <= len(starts) else len(messages)


def _remember_credentials(config: AgentConfig) -> None:
    """Keep the credentials this configuration holds from host commands and from the model."""
    _credentials.remember([config.api_key, *_credentials.configured_keys(config.inputs.table)])
    _credentials.remember_environment()
    if config.provider == "bedrock":
        _credentials.remember(_credentials.aws_keys())
