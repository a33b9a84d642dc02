"""One large tool-call argument costs the client its size, on every provider, through the official SDKs.

The fake server runs in its own process (so that what the test measures is the client alone) and
streams arguments in 4 KB fragments, so that megabytes take a few seconds: the time a response
takes grows linearly with the argument (4 times the size may not take 12 times as long; re-reading
the argument at each fragment, as the SDKs' stream helpers do, takes 16 times as long and more), and
past the client's cap the argument is only counted: the memory the client allocates stays far below
the argument's size where the wire streams it in fragments, and proportional to it where the wire
delivers it whole (Gemini's calls; Responses' finished items).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from turnmemory.llm import ToolResult, ToolSpec, open_client
from turnmemory.providers import PROVIDERS
from turnmemory.testing import MODELS

WRITE = ToolSpec(
    "write_file",
    "Write a file.",
    {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
)
MB = 1_000_000
SMALL, LARGE = MB // 2, 2 * MB
CAP = 64_000
WHOLE = ("gemini", "openai_responses")
"""Wires that deliver a call's arguments whole in one event as well as (or instead of) in fragments."""
SERVE = (
    "import sys, turnmemory.testing._chunks as chunks\n"
    "chunks._JSON_PIECE = int(sys.argv.pop(1))\n"
    "from turnmemory.testing.__main__ import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def reply(size: int) -> list[dict[str, Any]]:
    """A response with one ``write_file`` call of ``size`` characters of content, and the answer after it."""
    call = {"name": "write_file", "arguments": {"path": "big.txt", "content": "x" * size}}
    return [{"reply": {"tool_calls": [call]}}, {"reply": {"text": "Written."}}]


@contextmanager
def serving(tmp_path: Path, piece: int, sizes: list[int]) -> Iterator[dict[str, str]]:
    """A fake server in its own process, streaming arguments in fragments of ``piece`` characters,
    scripted with one call per size; its URLs."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([step for size in sizes for step in reply(size)]))
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(piece), "--script", str(script), "--no-check"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    urls = dict(server.stdout.readline().strip().split(": ", 1) for _ in PROVIDERS)
    try:
        yield urls
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture
def base_urls(tmp_path: Path) -> Iterator[dict[str, str]]:
    """4 KB fragments, arguments of 1 KB, 0.5 MB, 2 MB and 2 MB."""
    with serving(tmp_path, 4096, [1000, SMALL, LARGE, LARGE]) as urls:
        yield urls


def open_turn(provider: str, base_url: str, cap: int, execute: Any) -> Callable[[], list[Any]]:
    """One turn of ``provider`` asking for ``write_file``, arguments capped at ``cap`` bytes."""
    client = open_client(
        provider,
        model=MODELS[provider],
        base_url=base_url,
        api_key=None if provider == "bedrock" else "k",
        region="us-east-1",
        context_window=10_000_000,
        max_argument_bytes=cap,
    )
    return lambda: list(client.run_turn([], "Write it.", tools=[WRITE], execute=execute))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_large_argument_costs_its_size_and_past_the_cap_only_a_count(
    provider: str, base_urls: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    written: list[int] = []

    def execute(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        written.append(len(arguments["content"]))
        return ToolResult(output="written")

    def turn(cap: int) -> tuple[float, list[Any]]:
        run = open_turn(provider, base_urls[provider], cap, execute)
        started = time.perf_counter()
        events = run()
        return time.perf_counter() - started, events

    turn(10 * MB)  # the SDK imported and the tokenizer loaded, before anything is timed
    small, _ = turn(10 * MB)
    large, _ = turn(10 * MB)
    assert written == [1000, SMALL, LARGE]
    assert large < 12 * small, f"4 times the argument took {large / small:.1f} times as long"

    tracemalloc.start()
    try:
        _, events = turn(CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written == [1000, SMALL, LARGE], "an argument past the cap ran"
    bound = 6 * LARGE if provider in WHOLE else LARGE // 4
    assert peak < bound, f"{peak / MB:.2f} MB allocated for a 2 MB argument past a {CAP} byte cap"
    ends = [event for event in events if event.kind == "tool_end"]
    assert len(ends) == 1 and ends[0].error is not None
    assert ends[0].error.startswith("not run: the arguments of write_file are ")
    assert f"more than the {CAP} one call may carry" in ends[0].error


@pytest.mark.parametrize("provider", [provider for provider in PROVIDERS if provider not in WHOLE])
def test_past_the_cap_memory_does_not_grow_with_the_number_of_fragments(
    provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is kept per fragment once the arguments are only counted: eight times the fragments
    (64 characters each, as servers stream them) allocate no more at the peak, within one socket
    read's worth (a list entry per fragment would be some 200 KB more)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    cap, sizes = 16_000, [1000, 256_000, 2_000_000]

    def execute(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(output="written")

    peaks = []
    with serving(tmp_path, 64, sizes) as urls:
        run = open_turn(provider, urls[provider], cap, execute)
        run()  # the SDK imported and the tokenizer loaded, before anything is measured
        for _ in sizes[1:]:
            tracemalloc.start()
            try:
                run()
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
    grown = peaks[1] - peaks[0]
    assert grown < 64_000, f"{grown} more bytes at the peak for {(sizes[2] - sizes[1]) // 64} more fragments"
