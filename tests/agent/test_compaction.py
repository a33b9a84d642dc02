"""Session compaction and the reducer as the agent shows them, through real clients and the fake server.

A session of many turns under a small configured window compacts its oldest turns (a model-written
summary, or a marker); the compaction is stored, and a new ``turnmemory run --continue`` process
sends exactly the request the live session sends.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.agent._support import MODELS, PROVIDERS

from turnmemory.agent.compaction import MARKER, TRIGGER, Compaction, cut_point
from turnmemory.agent.config import ConfigError, load_config
from turnmemory.agent.loop import Agent, _specs, open_agent_client
from turnmemory.agent.store import open_store
from turnmemory.memory import Message
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

WINDOW = 8000
RESERVE = 1024

Run = Callable[..., Any]


def prose(turn: int, words: int = 300) -> str:
    return " ".join(f"w{turn}x{i}" for i in range(words)) + "."


@pytest.fixture
def open_agent(make_agent: Callable[..., Agent]) -> Callable[..., Agent]:
    """``open_agent(provider, compaction=..., session_id=None)``: an agent with a small window that
    retries as the real client does."""

    def make(provider: str, *, compaction: str = "summary", session_id: str | None = None) -> Agent:
        return make_agent(
            provider,
            session_id=session_id,
            client_factory=open_agent_client,
            context_window=WINDOW,
            context_reserve=RESERVE,
            compaction=compaction,
        )

    return make


def will_compact(agent: Agent, prompt: str) -> bool:
    """Whether the agent's next turn for ``prompt`` starts with a compaction (it then asks for a summary)."""
    budget = agent.client.accounting.limits.budget
    tokens = agent.client.request_tokens(agent.request_history(), prompt, tools=_specs(agent.tools))
    return agent.config.compaction != "off" and tokens > TRIGGER * budget


def turn(agent: Agent, server: FakeProviderServer, n: int, *, summary: str = "") -> None:
    """One turn answered with long prose (a summary reply first when a summary will be asked for)."""
    prompt = f"Step {n}: what next?"
    if summary and will_compact(agent, prompt):
        server.push(Reply(text=summary))
    tools = [ToolCall("read_file", {"path": "notes.txt"})] if n % 3 == 0 else []
    if tools:
        server.push(Reply(text="Reading.", tool_calls=tools))
    server.push(Reply(text=prose(n)))
    outcome = agent.turn(prompt)
    assert outcome.status == "done", outcome


def stored(agent: Agent, kind: str) -> list[dict[str, Any]]:
    return [dict(event.data) for event in agent.store.load(agent.session_id).events if event.kind == kind]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_long_session_compacts_into_a_summary_and_stays_within_the_window(
    provider: str, server: FakeProviderServer, open_agent: Callable[..., Agent], workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    agent = open_agent(provider)
    for n in range(8):
        turn(agent, server, n, summary=f"SUMMARY-{n}: the user stepped through the plan.")

    compactions = stored(agent, "compaction")
    assert compactions and all(c["mode"] == "summary" and c["freed"] > 0 for c in compactions)
    assert any("compacted the session" in notice for notice in agent.view.notices)  # type: ignore[attr-defined]
    first = agent.messages[0]
    assert first.role == "user" and first.content.startswith(MARKER) and "SUMMARY-" in first.content
    assert agent.store.load(agent.session_id).messages == tuple(agent.messages)
    # The summary request is a plain request: the summary prompt, and no tool the model may call.
    summaries = [r.body for r in server.requests if "Summarize the conversation above" in json.dumps(r.body)]
    assert len(summaries) == len(compactions)
    last = json.dumps(server.requests[-1].body)
    assert "w0x1 " not in last and MARKER in last
    budget = agent.client.accounting.limits.budget
    from turnmemory.llm import open_counter

    counter = open_counter()
    assert all(counter.value(r.body) <= budget for r in server.requests)


def test_drop_mode_replaces_old_turns_with_a_marker_and_asks_no_summary(
    server: FakeProviderServer, open_agent: Callable[..., Agent]
) -> None:
    agent = open_agent("openai_chat", compaction="drop")
    for n in range(8):
        turn(agent, server, n)
    first = agent.messages[0]
    assert first.content.startswith(MARKER) and "dropped" in first.content
    assert all("Summarize the conversation" not in json.dumps(r.body) for r in server.requests)


def test_off_never_compacts_and_the_turn_overflows_cleanly(
    server: FakeProviderServer, open_agent: Callable[..., Agent]
) -> None:
    agent = open_agent("anthropic", compaction="off")
    budget = agent.client.accounting.limits.budget
    for n in range(40):
        prompt = f"Step {n}: what next?"
        fits = (
            agent.client.request_tokens(agent.request_history(), prompt, tools=_specs(agent.tools)) <= budget
        )
        if fits:
            server.push(Reply(text=prose(n)))
        sent = len(server.requests)
        outcome = agent.turn(prompt)
        if not fits:
            assert outcome.status == "error" and outcome.reason == "context_overflow"
            assert len(server.requests) == sent  # nothing was sent: never a provider 400
            break
        assert outcome.status == "done"
    else:
        raise AssertionError("the session never outgrew its window")
    assert stored(agent, "compaction") == []


def test_slash_compact_summarizes_every_turn_but_the_latest(
    server: FakeProviderServer, open_agent: Callable[..., Agent]
) -> None:
    agent = open_agent("bedrock")
    for n in range(3):
        turn(agent, server, n)
    server.push(Reply(text="They asked for three steps."))
    compaction = agent.compact(force=True)
    assert compaction is not None and compaction.turns == 2 and compaction.mode == "summary"
    assert [m.role for m in agent.messages] == ["user", "user", "assistant"]
    assert agent.messages[1].content == "Step 2: what next?"

    single = open_agent("bedrock")
    assert single.compact(force=True) is None
    assert any("nothing to compact" in n for n in single.view.notices)  # type: ignore[attr-defined]


def test_a_failed_summary_drops_the_turns_instead(
    server: FakeProviderServer, open_agent: Callable[..., Agent]
) -> None:
    from turnmemory.testing import Failure

    agent = open_agent("gemini")
    for n in range(2):
        turn(agent, server, n)
    server.push(*[Failure(status=400, message="bad request")])
    compaction = agent.compact(force=True)
    assert compaction is not None and compaction.mode == "drop"
    assert any("summary of earlier turns failed" in n for n in agent.view.notices)  # type: ignore[attr-defined]


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat", "openai_responses", "gemini", "bedrock"])
def test_a_compacted_session_resumed_in_a_new_process_sends_what_the_live_one_sends(
    provider: str,
    server: FakeProviderServer,
    open_agent: Callable[..., Agent],
    cli: Run,
    tmp_path: Path,
    workspace: Path,
) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    live = open_agent(provider)
    for n in range(7):
        turn(live, server, n, summary=f"SUMMARY-{n}.")
    assert stored(live, "compaction"), "the session should have compacted"

    config = tmp_path / "config" / "turnmemory" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    credentials = 'region = "us-east-1"' if provider == "bedrock" else 'api_key = "test-key"'
    config.write_text(
        f'provider = "{provider}"\nmodel = "{MODELS[provider]}"\nbase_url = "{server.base_url(provider)}"\n'
        f'context_window = {WINDOW}\ncontext_reserve = {RESERVE}\ncompaction = "summary"\n'
        f"[providers.{provider}]\n{credentials}\n"
    )
    prompt = "Step 99: and now?"
    compacts = will_compact(live, prompt)
    for _ in range(2):
        if compacts:
            server.push(Reply(text="SUMMARY-final."))
        server.push(Reply(text="Done."))
    live.store.release(live.session_id)
    done = cli("run", "--continue", prompt)
    resumed = server.requests[-1].body
    live.turn(prompt)
    assert server.requests[-1].body == resumed
    assert MARKER in json.dumps(resumed)
    if compacts:
        assert "compacted the session" in done.stderr
    shown = cli("show", live.session_id).stdout
    assert "[compaction: " in shown and "earlier turns summarized" in shown


def test_run_says_when_the_reducer_clears_tool_results(
    server: FakeProviderServer, cli: Run, tmp_path: Path, workspace: Path
) -> None:
    (workspace / "big.txt").write_text("\n".join(f"line {i}: " + "data " * 30 for i in range(200)))
    config = tmp_path / "config" / "turnmemory" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'provider = "openai_chat"\nmodel = "gpt-4.1"\nbase_url = "{server.base_url("openai_chat")}"\n'
        f"context_window = 16000\ncontext_reserve = 1024\nclear_at_least = 2000\n"
    )
    server.push(
        *(
            Reply(text=f"Reading {k}.", tool_calls=[ToolCall("read_file", {"path": "big.txt"})])
            for k in range(8)
        ),
        Reply(text="Read it all."),
    )
    done = cli("run", "read big.txt again and again")
    assert "turnmemory: cleared" in done.stderr and "to fit the context window" in done.stderr


# -- units ----------------------------------------------------------------------------------------


def test_config_reads_the_context_settings_and_rejects_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    env = {"ANTHROPIC_API_KEY": "k"}
    path.write_text(
        'context_window = 32000\ncontext_reserve = 2000\nclear_at_least = 4000\ncompaction = "drop"\n'
    )
    config = load_config(config_path=path, env=env)
    assert (config.context_window, config.context_reserve, config.clear_at_least, config.compaction) == (
        32000,
        2000,
        4000,
        "drop",
    )
    for bad in (
        'compaction = "sometimes"',
        "context_window = 12",
        'context_window = "big"',
        "clear_at_least = -1",
        "context_reserve = 200000",
        "context_window = 4096\ncontext_reserve = 3000",
    ):
        path.write_text(bad + "\n")
        with pytest.raises(ConfigError) as raised:
            load_config(config_path=path, env=env)
        assert "\n" not in str(raised.value) and bad.split(" ")[-3].split("\n")[-1] in str(raised.value)


def test_a_malformed_compaction_row_is_skipped_in_one_line(data_dir: Path) -> None:
    with open_store() as store:
        session = store.create("/ws", provider="anthropic", model="m")
        store.add_user_message(session, "hi")
        store.add_compaction(session, {"replaces": 5, "mode": "drop", "turns": 1, "content": f"{MARKER}: x]"})
        store.add_compaction(session, {"replaces": 1, "mode": "maybe", "turns": 1, "content": "x"})
        loaded = store.load(session)
    assert loaded.messages == (Message(role="user", content="hi"),)
    assert len(loaded.problems) == 2 and all("compaction" in problem for problem in loaded.problems)


def conversations() -> st.SearchStrategy[list[Message]]:
    role = st.sampled_from(["user", "assistant"])
    return st.lists(role, min_size=1, max_size=30).map(
        lambda roles: (
            [Message(role="user", content="u0")]
            + [Message(role=r, content=f"{r}{i}") for i, r in enumerate(roles)]
        )
    )


@settings(max_examples=200, deadline=None)
@given(conversations(), st.data())
def test_cut_point_keeps_whole_turns_and_the_latest(messages: list[Message], data: st.DataObject) -> None:
    sizes = data.draw(st.lists(st.integers(0, 500), min_size=len(messages), max_size=len(messages)))
    excess = data.draw(st.integers(0, 10_000))
    keep = data.draw(st.integers(0, 3))
    cut = cut_point(messages, sizes, excess, keep=keep)
    starts = [i for i, m in enumerate(messages) if m.role == "user" and i > 0] + [len(messages)]
    if cut:
        assert cut == len(messages) or messages[cut].role == "user"
        assert sum(1 for m in messages[cut:] if m.role == "user") >= keep
        # Minimal: one turn less would not have freed enough (or it is the first possible cut).
        earlier = [s for s in starts if s < cut]
        if earlier:
            assert sum(sizes[: earlier[-1]]) < excess
    eligible = starts[: max(len(starts) - keep, 0)]
    if excess > 0 and eligible and not cut:
        raise AssertionError("an eligible turn was not compacted")
    if cut and sum(sizes[:cut]) < excess:
        assert cut == eligible[-1]  # not enough anywhere: everything eligible goes


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 20), st.integers(0, 5), st.integers(1, 9), st.sampled_from(["summary", "drop"]))
def test_compaction_round_trips_and_applies(replaces: int, extra: int, turns: int, mode: str) -> None:
    messages = [Message(role="user", content=str(i)) for i in range(replaces + extra)]
    compaction = Compaction(replaces=replaces, content=f"{MARKER}: {turns}]", mode=mode, turns=turns)  # type: ignore[arg-type]
    assert Compaction.from_dict(json.loads(json.dumps(compaction.to_dict()))) == compaction
    applied = compaction.apply(messages)
    assert applied[0].content.startswith(MARKER) and applied[1:] == messages[replaces:]
    with pytest.raises(ValueError):
        compaction.apply(messages[: replaces - 1])


def test_the_store_replays_compactions_in_order(data_dir: Path) -> None:
    with open_store() as store:
        session = store.create("/ws", provider="anthropic", model="m")
        for n in range(3):
            store.add_user_message(session, f"u{n}")
        store.add_compaction(session, Compaction(2, f"{MARKER}: a]", "drop", 2).to_dict())
        store.add_user_message(session, "u3")
        store.add_compaction(session, Compaction(2, f"{MARKER}: b]", "drop", 2).to_dict())
        loaded = store.load(session)
    assert [m.content for m in loaded.messages] == [f"{MARKER}: b]", "u3"]
    db = sqlite3.connect(data_dir / "sessions.sqlite3")
    assert db.execute("SELECT COUNT(*) FROM events WHERE kind = 'compaction'").fetchone() == (2,)


def test_the_repl_compacts_on_request_and_shows_reductions(
    server: FakeProviderServer, open_agent: Callable[..., Agent]
) -> None:
    import io

    from prompt_toolkit import PromptSession
    from prompt_toolkit.input import DummyInput
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    from turnmemory.agent.repl import Repl, ReplView
    from turnmemory.llm import Event

    agent = open_agent("anthropic")
    screen = io.StringIO()
    console = Console(file=screen, width=200, color_system=None)
    view = ReplView(console, agent.workspace)
    agent.view = view
    repl = Repl(agent, console, view, PromptSession(input=DummyInput(), output=DummyOutput()))
    for n in range(2):
        turn(agent, server, n)
    server.push(Reply(text="Two steps so far."))
    assert repl.command("/help") and repl.command("/compact") and repl.command("/context")
    view.event(Event("reduced", text="cleared 3 tool results (~1200 tokens) to fit the context window"), None)
    out = screen.getvalue()
    assert "/compact" in out and "compacted the session: 1 earlier turn summarized" in out
    assert "cleared 3 tool results (~1200 tokens)" in out
    assert f"the window is {WINDOW:,} tokens" in out


def test_a_turn_that_overflows_drops_its_pending_state_and_the_session_goes_on(
    server: FakeProviderServer, open_agent: Callable[..., Agent], workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    agent = open_agent("openai_responses", compaction="drop")
    # Prose is never cleared: long prose with a call per response outgrows the window within the turn.
    server.push(
        *(
            Reply(text=prose(k, words=250), tool_calls=[ToolCall("read_file", {"path": "notes.txt"})])
            for k in range(8)
        )
    )
    outcome = agent.turn("Think aloud and keep reading.")
    assert outcome.status == "incomplete" and outcome.reason == "context_overflow"
    server.reset()
    assert agent.client.pending is None and stored(agent, "pending_drop")
    assert any("context window overflowed" in notice for notice in agent.view.notices)  # type: ignore[attr-defined]

    server.push(Reply(text="Fresh start."))
    assert agent.turn("Summarize where we are.").status == "done"
    assert "Think aloud and keep reading." in json.dumps(server.requests[-1].body) or stored(
        agent, "compaction"
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_compaction_keeps_the_pending_state_of_an_interrupted_turn_and_the_session_goes_on(
    provider: str, server: FakeProviderServer, open_agent: Callable[..., Agent], workspace: Path
) -> None:
    from turnmemory.testing import Failure

    (workspace / "notes.txt").write_text("hello\n")
    agent = open_agent(provider, compaction="drop")
    budget = agent.client.accounting.limits.budget
    n = 0
    while agent.request_tokens("Next?") <= 0.5 * budget:  # history near the compaction trigger
        turn(agent, server, n)
        n += 1
    server.push(
        Reply(
            text="Reading. " + prose(99, words=250), tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]
        ),
        Failure(status=400, message="a rejected request"),
    )
    assert agent.turn("Read the notes.").status == "incomplete"
    assert agent.client.pending_turns == 1 and will_compact(agent, "Go on.")

    server.push(Reply(text="Carried on."))
    outcome = agent.turn("Go on.")
    assert outcome.status == "done", outcome
    sent = json.dumps(server.requests[-1].body)
    assert MARKER in sent and "w99x1 " in sent  # compacted, and the interrupted turn's raw work injected
    assert stored(agent, "compaction") and agent.client.pending is None
    assert [m.content for m in agent.request_history()[-4:] if m.role == "user"] == [
        "Read the notes.",
        "Go on.",
    ]


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_the_summary_request_counts_in_the_turn_and_the_session_labelled_compaction(
    provider: str, server: FakeProviderServer, open_agent: Callable[..., Agent]
) -> None:
    from turnmemory.agent._usage import cost
    from turnmemory.llm import Usage as Reported
    from turnmemory.testing import Usage

    agent = open_agent(provider)
    n = 0
    while not will_compact(agent, f"Step {n}: what next?"):
        turn(agent, server, n)
        n += 1
    before = agent.usage.session_total
    summary = Usage(input_tokens=5000, output_tokens=321, cached_tokens=1000, cache_write_tokens=2500)
    answer = Usage(input_tokens=900, output_tokens=77, cached_tokens=0, cache_write_tokens=800)
    server.push(Reply(text="SUMMARY: the plan.", usage=summary), Reply(text=prose(n), usage=answer))
    outcome = agent.turn(f"Step {n}: what next?")
    assert outcome.status == "done" and stored(agent, "compaction")

    def reported(u: Usage) -> Reported:
        return Reported(u.input_tokens, u.output_tokens, u.cached_tokens, u.cache_write_tokens)

    kinds = [(entry.kind, entry.usage) for entry in outcome.requests]
    assert kinds == [("compaction", reported(summary)), ("turn", reported(answer))]
    assert outcome.requests[0].miss == "compaction"
    assert outcome.requests[0].to_dict()["kind"] == "compaction"
    assert outcome.usage == reported(summary) + reported(answer)
    assert agent.usage.session_total == before + reported(summary) + reported(answer)
    stored_usage = stored(agent, "assistant_turn")[-1]["usage"]
    assert stored_usage["input_tokens"] == 5900 and stored_usage["output_tokens"] == 398
    prices = {"input": 3.0, "output": 15.0, "cached_input": 0.3, "cache_write": 3.75}
    assert cost(outcome.usage, prices) == pytest.approx(
        cost(reported(summary), prices) + cost(reported(answer), prices)
    )
