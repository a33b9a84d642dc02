"""``@image`` through ``turnmemory run`` and the REPL: the turn's request carries the image, the stored session, its
memory and the next request only its placeholder; and each refusal is one line that loses nothing."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.input import DummyInput
from prompt_toolkit.output import DummyOutput
from rich.console import Console
from tests.agent._support import Run, body_text, leaked_into
from tests.images import gif, png

from turnmemory.agent._attach import image_support
from turnmemory.agent.config import AgentConfig
from turnmemory.agent.loop import Agent
from turnmemory.agent.repl import Repl, ReplView
from turnmemory.providers._images import size_label
from turnmemory.testing import FakeProviderServer, Reply

KEYS = {"GEMINI_API_KEY": "test-key", "AWS_REGION": "us-east-1"}


def _common(provider: str, server: FakeProviderServer, config: Path, settings: str) -> list[str]:
    config.write_text(settings)
    model = ["--model", "anthropic.claude-sonnet-4-5"] if provider == "bedrock" else []
    return ["--config", str(config), "--provider", provider, *model, "--base-url", server.base_url(provider)]


def test_only_the_turn_of_the_prompt_carries_the_image(
    cli: Run, server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    data = png(4, 3) + bytes(range(256))  # every base64 symbol
    (workspace / "shot.png").write_bytes(data)
    # one provider: each wire's image part is tested through its SDK in tests/llm/test_images.py
    common = _common("bedrock", server, tmp_path / "config.toml", "")
    server.push(Reply(text="A black square."), Reply(text="Still a square."))
    first = cli("run", *common, "what is in @shot.png?", extra_env=KEYS)
    assert f"@shot.png attached (PNG 4x3, {len(data)} bytes, ~" in first.stderr
    encoded = base64.b64encode(data).decode()
    assert encoded in body_text(server.requests[0].body)

    second = cli("run", *common, "--continue", "--format", "json", "and now?", extra_env=KEYS)
    assert json.loads(second.stdout)["status"] == "done"
    later = body_text(server.requests[1].body)
    assert encoded not in later and f"[image shot.png, {len(data)} bytes]" in later
    assert leaked_into(encoded, server, data_dir, second.stdout) == ["request 0"]
    stored = [path for path in data_dir.rglob("*") if path.is_file()]
    assert stored and not any(data[:24] in path.read_bytes() for path in stored)


def test_over_the_caps_not_an_image_and_a_hostile_name_each_say_one_line(
    cli: Run, server: FakeProviderServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "big.png").write_bytes(png() + b"\0" * 500)
    (workspace / "fake.png").write_bytes(b"\0\1\2 not an image")
    (workspace / "\x1b]0;owned\x07.png").write_bytes(png(2, 2))
    (workspace / "second.gif").write_bytes(gif())
    settings = "max_image_bytes = 200\nmax_images = 1\n"
    common = _common("bedrock", server, tmp_path / "config.toml", settings)
    server.push(Reply(text="Seen."))
    prompt = "look: @big.png @fake.png @\x1b]0;owned\x07.png @second.gif"
    done = cli("run", *common, prompt, extra_env=KEYS)
    lines = done.stderr.splitlines()
    assert (
        "turnmemory: @big.png not attached: the image has 569 bytes, more than the 200 bytes an image may have (max_image_bytes)"
        in lines
    )
    assert (
        "turnmemory: @fake.png looks binary and is not a PNG, JPEG, GIF or WebP image: not attached" in lines
    )
    assert "turnmemory: @second.gif not attached: a prompt attaches at most 1 image (max_images)" in lines
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert any(line.startswith("turnmemory: @\\x1b]0;owned\\x07.png attached (PNG 2x2") for line in lines)
    sent = server.requests[0].body["messages"][-1]["content"]
    assert [sorted(block) for block in sent] == [["image"], ["text"]]
    assert base64.b64decode(sent[0]["image"]["source"]["bytes"]) == png(2, 2)


def test_an_openai_compatible_server_is_sent_no_image(
    cli: Run, server: FakeProviderServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "shot.png").write_bytes(png())
    common = _common("openai_chat", server, tmp_path / "config.toml", "")
    server.push(Reply(text="No picture here."))
    done = cli("run", *common, "what is in @shot.png?")
    why = "an OpenAI-compatible server is taken to take no images (set providers.openai_chat.images = true if it does)"
    assert f"turnmemory: @shot.png is a PNG image, not attached: {why}" in done.stderr.splitlines()
    sent = body_text(server.requests[0].body)
    assert base64.b64encode(png()).decode() not in sent and "[image" not in sent


@pytest.mark.parametrize(
    ("provider", "model", "settings", "why"),
    [
        ("anthropic", "claude-sonnet-4-6", {}, None),
        (
            "anthropic",
            "claude-sonnet-4-6",
            {"images": False},
            "claude-sonnet-4-6 is configured as text-only (providers.anthropic.images = false)",
        ),
        ("anthropic", "claude-2.1", {}, "claude-2.1 takes no images"),
        ("openai_chat", "gpt-4.1", {}, None),
        ("openai_chat", "gpt-3.5-turbo", {}, "gpt-3.5-turbo takes no images"),
        ("openai_chat", "o3-mini", {}, "o3-mini takes no images"),
        (
            "openai_chat",
            "llava",
            {"base_url": "http://127.0.0.1:8080/v1"},
            "an OpenAI-compatible server is taken to take no images (set providers.openai_chat.images = true if it does)",
        ),
        ("openai_chat", "llava", {"base_url": "http://127.0.0.1:8080/v1", "images": True}, None),
        ("openai_responses", "gpt-5", {}, None),
        ("gemini", "gemini-2.5-pro", {}, None),
        ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", {}, None),
        ("bedrock", "amazon.nova-pro-v1:0", {}, None),
        (
            "bedrock",
            "amazon.nova-micro-v1:0",
            {},
            "amazon.nova-micro-v1:0 is not known to take images (set providers.bedrock.images = true if it does)",
        ),
        ("bedrock", "amazon.nova-micro-v1:0", {"images": True}, None),
    ],
)
def test_which_models_take_images(
    provider: str, model: str, settings: dict[str, Any], why: str | None
) -> None:
    assert image_support(AgentConfig(provider=provider, model=model, **settings)) == why


def _repl(agent: Agent) -> tuple[Repl, io.StringIO]:
    screen = io.StringIO()
    console = Console(file=screen, width=200, color_system=None)
    view = ReplView(console, agent.workspace)
    agent.view = view
    return Repl(agent, console, view, PromptSession(input=DummyInput(), output=DummyOutput())), screen


def test_the_repl_confirms_the_image_and_context_shows_what_it_took(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path
) -> None:
    square = png(1092, 1092)
    (workspace / "shot.png").write_bytes(square)
    (workspace / "anim.gif").write_bytes(gif())
    server.push(Reply(text="Seen."), Reply(text="Again."))
    agent = make_agent("gemini")
    repl, screen = _repl(agent)
    repl._turn("compare @shot.png and @anim.gif")
    shown = screen.getvalue()
    assert "@shot.png attached (PNG 1092x1092, " in shown and "~1,032 tokens)" in shown  # Gemini: 4 tiles
    assert "@anim.gif not attached: gemini takes png, jpeg, webp images, not gif" in shown
    assert "attachments: 1 image, ~1,032 tokens" in shown
    parts = server.requests[0].body["contents"][-1]["parts"]
    assert [sorted(part) for part in parts] == [["inlineData"], ["text"]]
    repl.command("/context")
    assert "the last message's attachments: [image shot.png, " in screen.getvalue()
    placeholder = f"[image shot.png, {size_label(len(square))}]"
    assert [m.content for m in agent.messages if m.role == "user"] == [
        f"compare @shot.png and @anim.gif\n\n{placeholder}"
    ]
    outcome = agent.turn("and now?")
    assert outcome.status == "done", outcome.error
    assert len(server.requests) == 2, [r.path for r in server.requests]
    assert "inlineData" not in body_text(server.requests[1].body)
