"""Start-up: ``turnmemory run`` imports only the chosen provider's SDK, and the offline tokenizer waits
until something must be counted (a first request that surely fits goes out without it).

How long start-up takes is measured in ``benchmarks/startup.py``, not asserted here.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.agent._support import MODELS, PROVIDERS, Run

from turnmemory import cli
from turnmemory.agent.loop import Agent
from turnmemory.llm import Client, ToolSpec, o200k_unavailable, open_client
from turnmemory.memory import Message
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

SDK_MODULES = {
    "anthropic": ("anthropic",),
    "openai_chat": ("openai",),
    "openai_responses": ("openai",),
    "gemini": ("google.genai",),
    "bedrock": ("boto3", "botocore"),
}
"""The top-level SDK modules each provider's client needs."""
_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| +(\S+)$", re.MULTILINE)
_TOKENIZER = "tiktoken.load"
"""Imported by tiktoken when it loads an encoding file (the costly part is the load that follows)."""


def _sdks_in(modules: set[str]) -> set[str]:
    every = {name for names in SDK_MODULES.values() for name in names}
    return {sdk for sdk in every if any(m == sdk or m.startswith(sdk + ".") for m in modules)}


def _needs_o200k() -> None:
    reason = o200k_unavailable()
    if reason is not None:
        pytest.skip(f"the o200k tokenizer is what loads lazily, and it is unavailable here: {reason}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_run_imports_only_its_providers_sdk_and_no_tokenizer(
    provider: str, cli: Run, server: FakeProviderServer
) -> None:
    server.push(Reply(text="hello"))
    done = cli(
        "run",
        "--provider",
        provider,
        "--model",
        MODELS[provider],
        "--base-url",
        server.base_url(provider),
        "--sandbox",
        "off",
        "hi",
        extra_env={"PYTHONPROFILEIMPORTTIME": "1", "GEMINI_API_KEY": "test-key", "AWS_REGION": "us-east-1"},
    )
    assert done.stdout == "hello\n" and len(server.requests) == 1
    modules = set(_IMPORTED.findall(done.stderr))
    assert "turnmemory.agent.command" in modules  # the import report is really there
    assert "turnmemory.analysis.command" not in modules  # only the named subcommand's area
    assert _sdks_in(modules) == set(SDK_MODULES[provider])
    assert _TOKENIZER not in modules  # one request that surely fits: nothing needed counting


def test_the_tokenizer_loads_for_the_calibration_of_the_next_request(
    make_agent: Callable[..., Agent], server: FakeProviderServer
) -> None:
    _needs_o200k()
    server.push(
        Reply(text="Looking.", tool_calls=[ToolCall("read_file", {"path": "missing.txt"})]),
        Reply(text="Done."),
    )
    agent = make_agent("openai_chat")
    counter = agent.client.accounting.counter
    assert counter.unit == "o200k" and not counter.loaded
    agent.turn("look")
    assert len(server.requests) == 2
    assert counter.loaded  # the second request needed the first one's calibration, hence the tokenizer


def _clients() -> list[Client]:
    return [
        open_client(
            provider,
            model=MODELS[provider],
            base_url="http://127.0.0.1:9",  # never contacted: nothing is sent
            api_key=None if provider == "bedrock" else "test-key",
            region="us-east-1",
            tokenizer="o200k",
        )
        for provider in PROVIDERS
    ]


_texts = st.text(st.characters(codec="utf-8"), max_size=300)
_history = st.lists(st.tuples(st.booleans(), _texts), max_size=6)
_tools = st.lists(
    st.builds(
        ToolSpec,
        name=st.from_regex(r"[a-z_]{1,20}", fullmatch=True),
        description=_texts,
        input_schema=st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(
                    st.from_regex(r"[a-z]{1,8}", fullmatch=True),
                    st.fixed_dictionaries({"description": _texts}),
                    max_size=3,
                ),
            }
        ),
    ),
    max_size=3,
)


def test_the_bound_is_never_below_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """One token per UTF-8 byte bounds the o200k count of any request on every wire."""
    _needs_o200k()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    bounding, counting = _clients(), _clients()

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(history=_history, prompt=_texts, tools=_tools)
    def check(history: list[tuple[bool, str]], prompt: str, tools: list[ToolSpec]) -> None:
        messages = [Message(role="user" if user else "assistant", content=text) for user, text in history]
        for bounded, counted in zip(bounding, counting, strict=True):
            bound = bounded.request_bound(messages, prompt, tools=tools)
            assert bound is not None
            assert bound >= counted.request_tokens(messages, prompt, tools=tools)

    check()
    assert not any(client.accounting.counter.loaded for client in bounding)
    assert all(client.request_bound([], "x") is None for client in counting)  # loaded: counting is cheap


def test_each_subcommand_is_listed_under_the_area_that_registers_it() -> None:
    """The command line imports only the named subcommand's area, found by the table in ``cli``."""
    typer = pytest.importorskip("typer")
    for module, commands in cli._AREAS.items():
        app = typer.Typer()
        importlib.import_module(module).register(app)
        assert tuple(command.name for command in app.registered_commands) == commands
