"""The limits of a turn, through ``turnmemory run`` and the fake provider server on every provider.

A sequential turn of 80 calls in an 8k window, of 300 calls in a 60k window, and (opt-in:
``TURNMEMORY_LONG_TESTS=1``) of 1,000 calls in a 60k window, ends ``done``, every request valid and within the window, and every
result carried in full by the request after its call; the pending state an incomplete turn leaves
folds the same way in the next run. The round limit is a setting (flag and config key), and reaching
it says which in one line; the calls of one response past its cap, and a call whose arguments exceed
their size limit, do not run, and the model is told so in one line each.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.agent._support import PROVIDERS, Run, leaked_into
from tests.llm.test_long_turns import Sizes, rewrites

from turnmemory._text import compact_json
from turnmemory.llm import CLEARED
from turnmemory.providers import wire
from turnmemory.providers.check import check_request
from turnmemory.testing import MODELS, FakeProviderServer, Reply, ToolCall

WINDOW = 60_000
RESERVE = 4096
FILES = 40
"""Distinct files the turn reads in a cycle, 2 to 4 KB each."""
OVERSIZED = "OVERSIZED-ARGUMENT-5d1e"
"""Repeated into arguments past their size limit: nothing of them may be kept anywhere."""
FOLDED = compact_json({"status": "success"})
"""The result of a folded call that succeeded."""
LONG = pytest.mark.skipif(
    os.environ.get("TURNMEMORY_LONG_TESTS") != "1",
    reason="a thousand requests of up to 56k tokens through turnmemory run take minutes per provider: "
    "set TURNMEMORY_LONG_TESTS=1",
)


def write_files(workspace: Path, small: bool = False) -> list[str]:
    """The files of the workspace (2 to 4 KB, or 0.3 to 0.6 KB when ``small``); the first line of each
    is distinct, to find its result by."""
    heads = []
    for n in range(FILES):
        lines = 6 + (n * 37) % 6 if small else 40 + (n * 37) % 40
        head = f"marker-{n:03d}: module {n}"
        body = [head, *(f"    value_{n}_{j} = compute({j}, {n})  # line {j}" for j in range(lines))]
        (workspace / f"m{n:03d}.py").write_text("\n".join(body) + "\n")
        heads.append(head)
    return heads


def configure(
    tmp_path: Path,
    server: FakeProviderServer,
    provider: str,
    extra: str = "",
    window: int = WINDOW,
    reserve: int = RESERVE,
) -> None:
    """The user's config file: ``provider`` on the fake server, a 60k window (or ``window`` with
    ``reserve``), and ``extra`` top-level keys."""
    config = tmp_path / "config" / "turnmemory" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    section = {"bedrock": 'region = "us-east-1"\n', "gemini": 'api_key = "test-key"\n'}.get(provider, "")
    config.write_text(
        f'provider = "{provider}"\nmodel = "{MODELS[provider]}"\n'
        f'base_url = "{server.base_url(provider)}"\n'
        f"context_window = {window}\ncontext_reserve = {reserve}\n{extra}"
        + (f"[providers.{provider}]\n{section}" if section else "")
    )


def sequential(calls: int, start: int = 0) -> list[Reply]:
    """``calls`` responses of one call each (no prose: many agents call without a word), reading the
    files from ``start`` on, then an answer."""
    return [
        *(
            Reply(tool_calls=[ToolCall("read_file", {"path": f"m{k % FILES:03d}.py"})])
            for k in range(start, start + calls)
        ),
        Reply(text="Everything is read."),
    ]


def pairs(provider: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(call id, result text) of every call of a request, in order; results pair by position."""
    pieces = wire(provider).pieces(body[wire(provider).ITEMS])
    calls = [piece for piece in pieces if piece.kind == "call"]
    results = [piece for piece in pieces if piece.kind == "result"]
    assert len(calls) == len(results), "a call without its result"
    for call, result in zip(calls, results, strict=True):
        assert not result.call_id or result.call_id == call.call_id
    return [(call.call_id, result.text) for call, result in zip(calls, results, strict=True)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_round_limit_is_a_setting_and_reaching_it_says_which(
    provider: str, server: FakeProviderServer, cli: Run, tmp_path: Path, workspace: Path
) -> None:
    write_files(workspace)
    configure(tmp_path, server, provider, "max_tool_rounds = 50\n")
    server.push(*sequential(3)[:3])
    ended = cli("run", "--max-tool-rounds", "3", "Read the modules.", expect=1)

    assert len(server.requests) == 3
    last = ended.stderr.strip().splitlines()[-1]
    assert last == (
        "turnmemory: turn incomplete: the turn reached its limit of 3 tool rounds; "
        "raise it with --max-tool-rounds or max_tool_rounds in the config file"
    )
    configure(tmp_path, server, provider, "max_tool_rounds = 0\n")
    bad = cli("run", "Read.", expect=2)
    assert "max_tool_rounds must be a whole number of at least 1, got 0" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
def test_calls_past_the_cap_of_a_response_and_oversized_arguments_do_not_run(
    provider: str, server: FakeProviderServer, cli: Run, tmp_path: Path, workspace: Path, data_dir: Path
) -> None:
    configure(tmp_path, server, provider, "max_calls_per_response = 4\nmax_argument_bytes = 10000\n")
    flood = [ToolCall("write_file", {"path": f"w{k}.txt", "content": "x"}) for k in range(40)]
    huge = ToolCall("write_file", {"path": "huge.txt", "content": OVERSIZED * 2_000})
    server.push(Reply(tool_calls=flood), Reply(tool_calls=[huge]), Reply(text="Stopped."))
    done = cli("run", "--allow", "write", "Write the files.")

    written = sorted(path.name for path in workspace.iterdir())
    assert written == ["w0.txt", "w1.txt", "w2.txt", "w3.txt"]
    second = [text for _, text in pairs(provider, server.requests[1].body)]
    assert len(second) == 40
    refused = "one response may make at most 4 tool calls and this one made 40; make fewer calls per response"
    assert all(refused in text for text in second[4:]) and not any(refused in text for text in second[:4])
    third = pairs(provider, server.requests[2].body)[-1][1]
    # The size as the model sent the arguments: the JSON text streamed (Gemini sends an object).
    size = len(json.dumps(huge.arguments, **({"separators": (",", ":")} if provider == "gemini" else {})))
    assert (
        f"not run: the arguments of write_file are {size} bytes, more than the 10000 one call may carry"
        in third
    )
    assert not (workspace / "huge.txt").exists()
    # None of the refused arguments is kept: not in the next request, the session database or the output.
    assert leaked_into(OVERSIZED, server, data_dir, done.stdout, done.stderr) == []


def check_sequential(
    provider: str, bodies: list[dict[str, Any]], heads: list[str], window: int, first: int = 0
) -> None:
    """The requests of a sequential turn whose calls read the files from ``first`` on, in a cycle: each
    valid for ``check_request`` and within ``window``, its calls paired, and the request after each
    call carrying its result in full (the model read it before anything cleared it)."""
    sizes = Sizes()
    for k, body in enumerate(bodies):
        assert check_request(provider, body) == [], k
        assert sizes.body(provider, body) <= window, k
        answered = pairs(provider, body)
        assert len(answered) == first + k
        if k:
            newest = answered[-1][1]
            assert heads[(first + k - 1) % FILES] in newest and CLEARED not in newest, k


def folded(provider: str, body: dict[str, Any]) -> list[str]:
    """The results of a request that are folded calls' status results."""
    return [text for _, text in pairs(provider, body) if text == FOLDED]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_sequential_turn_far_longer_than_the_window_ends_done(
    provider: str, server: FakeProviderServer, cli: Run, tmp_path: Path, workspace: Path
) -> None:
    """Through ``turnmemory run``: a small window (8k, much of it the agent's own prompt and tools)
    and small files make 80 sequential calls clear and fold as 1,000 do in 60k (the opt-in tests below
    run those), within seconds per case."""
    heads = write_files(workspace, small=True)
    window, reserve, calls = 8000, 1024, 80
    configure(tmp_path, server, provider, "clear_at_least = 1000\n", window=window, reserve=reserve)
    server.push(*sequential(calls))
    ended = cli("run", "Read every module.")
    assert "folded" in ended.stderr, ended.stderr[-2000:]

    bodies = [request.body for request in server.requests]
    assert len(bodies) == calls + 1
    check_sequential(provider, bodies, heads, window - reserve)
    assert len(folded(provider, bodies[-1])) > calls // 4  # the earliest calls, by the end


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("calls", "folds"), [(300, 0), pytest.param(1000, 300, marks=LONG)])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_hundreds_of_sequential_calls_end_done_in_a_60k_window(
    provider: str,
    calls: int,
    folds: int,
    server: FakeProviderServer,
    cli: Run,
    tmp_path: Path,
    workspace: Path,
) -> None:
    """Through ``turnmemory run``, with 2 to 4 KB files and the default chunk: the turn ends done, its
    earliest results cleared (300 calls) or folded (1,000: at least ``folds`` calls by the end), the
    prefix rewritten rarely, and nothing cleared unread."""
    heads = write_files(workspace)
    configure(tmp_path, server, provider)
    server.push(*sequential(calls))
    ended = cli("run", "Read every module.", timeout=1800)
    assert "cleared" in ended.stderr and ("folded" in ended.stderr) == bool(folds), ended.stderr[-2000:]

    bodies = [request.body for request in server.requests]
    assert len(bodies) == calls + 1
    check_sequential(provider, bodies, heads, WINDOW - RESERVE)
    assert len(folded(provider, bodies[-1])) >= folds
    assert rewrites(provider, [body[wire(provider).ITEMS] for body in bodies]) <= len(bodies) // 5
    assert not any("does not fit" in text for body in bodies for _, text in pairs(provider, body))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_pending_state_of_an_incomplete_turn_folds_in_the_next_run(
    provider: str, server: FakeProviderServer, cli: Run, tmp_path: Path, workspace: Path
) -> None:
    """A turn that reached its round limit leaves its 30 calls as pending state; the next process
    (``--continue``) carries them before its prompt and, as its own 60 calls fill the small window,
    folds them in place: every request valid and within the window, every result read in full."""
    heads = write_files(workspace, small=True)
    window, reserve = 8000, 1024
    configure(tmp_path, server, provider, "clear_at_least = 1000\n", window=window, reserve=reserve)
    server.push(*sequential(30)[:-1])
    stopped = cli("run", "--max-tool-rounds", "30", "Read every module.", expect=1)
    assert "limit of 30 tool rounds" in stopped.stderr
    server.reset()
    server.push(*sequential(60, start=30))
    ended = cli("run", "--continue", "Go on.")
    assert "folded" in ended.stderr, ended.stderr[-2000:]

    bodies = [request.body for request in server.requests]
    assert len(bodies) == 61
    check_sequential(provider, bodies, heads, window - reserve, first=30)
    items = bodies[-1][wire(provider).ITEMS]
    prompt = max(i for i, item in enumerate(items) if "Go on." in json.dumps(item))
    pending = [p for p in wire(provider).pieces(items[: prompt + 1]) if p.kind == "result"]
    assert len(pending) == 30 and all(p.text == FOLDED for p in pending)
