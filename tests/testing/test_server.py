"""The fake server itself: script handling, routing, concurrency, shutdown and the command line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import pytest

from turnmemory.testing import (
    PROVIDERS,
    Failure,
    FakeProviderServer,
    Reply,
    ToolCall,
    Usage,
    load_script,
    parse_script,
)


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, headers=headers or {"x-api-key": "k"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def ask(server: FakeProviderServer) -> tuple[int, Any]:
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    return post(server.url + "/v1/messages", json.dumps(body).encode())


def test_base_urls_are_what_each_sdk_expects(server: FakeProviderServer) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    assert {provider: server.base_url(provider) for provider in PROVIDERS} == {
        "anthropic": server.url,
        "openai_chat": server.url + "/v1",
        "openai_responses": server.url + "/v1",
        "gemini": server.url,
        "bedrock": server.url,
    }
    with pytest.raises(ValueError, match="unknown provider 'mistral'"):
        server.base_url("mistral")


def test_push_appends_in_order_and_remaining_counts_down(server: FakeProviderServer) -> None:
    server.push(Reply(text="one"))
    server.push(Failure(503, "busy"), Reply(text="three"))
    assert server.remaining == 3
    status, body = ask(server)
    assert (status, body["content"]) == (200, [{"type": "text", "text": "one"}])
    assert server.remaining == 2
    status, body = ask(server)
    assert (status, body["error"]["message"]) == (503, "busy")
    assert ask(server)[1]["content"] == [{"type": "text", "text": "three"}]
    assert server.remaining == 0


def test_push_rejects_what_is_not_a_script_item(server: FakeProviderServer) -> None:
    with pytest.raises(TypeError, match="Reply, Failure or Hang"):
        server.push("hello")  # type: ignore[arg-type]
    assert server.remaining == 0


def test_reset_drops_script_and_records(server: FakeProviderServer) -> None:
    server.push(Reply(text="a"), Reply(text="b"))
    ask(server)
    server.reset()
    assert (server.remaining, server.requests) == (0, [])


def test_unknown_routes_are_404_and_consume_nothing(server: FakeProviderServer) -> None:
    server.push(Reply(text="kept"))
    status, body = post(server.url + "/v2/nothing", b"{}")
    assert status == 404 and "no route for POST /v2/nothing" in body["error"]["message"]
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(server.url + "/v1/messages", timeout=5)
    assert caught.value.code == 404
    assert server.remaining == 1 and server.requests == []
    assert ask(server)[1]["content"][0]["text"] == "kept"


def test_concurrent_requests_each_consume_exactly_one_item() -> None:
    texts = [f"reply {i}" for i in range(24)]
    with FakeProviderServer([Reply(text=text) for text in texts], check=False) as server:
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda _: ask(server), texts))
        assert sorted(body["content"][0]["text"] for _, body in answers) == sorted(texts)
        assert sorted(body["id"] for _, body in answers) == [f"msg_{i:03d}" for i in range(1, 25)]
        assert server.remaining == 0 and len(server.requests) == 24


def test_close_joins_every_thread_even_with_an_idle_client_connected() -> None:
    before = set(threading.enumerate())
    server = FakeProviderServer([Reply(text="hi")], check=False)
    idle = socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
    ask(server)
    server.close()
    server.close()
    idle.close()
    assert set(threading.enumerate()) <= before
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])), timeout=1).close()


def test_script_items_validate_their_fields() -> None:
    with pytest.raises(ValueError, match=r"Failure.status"):
        Failure(200)
    with pytest.raises(ValueError, match=r"Reply.break_after"):
        Reply(break_after=-1)
    with pytest.raises(ValueError, match=r"ToolCall.name"):
        ToolCall("", {})
    with pytest.raises(ValueError, match=r"ToolCall.arguments: not JSON-serializable"):
        ToolCall("x", {"a": object()})
    with pytest.raises(ValueError, match=r"cache_write_tokens: cannot exceed"):
        Usage(input_tokens=1, cached_tokens=2)
    with pytest.raises(ValueError, match=r"retry_after"):
        Failure(retry_after=float("nan"))
    assert Reply(tool_calls=[ToolCall("a", {})]).stop_reason == "tool_use"
    assert Reply(text="x").stop_reason == "end_turn"
    assert Reply(tool_calls=[ToolCall("a", {})]).tool_calls == (ToolCall("a", {}),)


def test_parse_script_reads_every_field() -> None:
    items = parse_script(
        [
            {
                "reply": {
                    "text": "t",
                    "reasoning": "r",
                    "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}, "id": "c1"}],
                    "usage": {"input_tokens": 3, "output_tokens": 2, "cached_tokens": 1},
                    "stop": "max_tokens",
                    "break_after": 1,
                }
            },
            {"reply": {}},
            {
                "failure": {
                    "status": 429,
                    "message": "m",
                    "kind": "k",
                    "mid_stream": True,
                    "retry_after": 1.5,
                    "partial_text": "p",
                }
            },
        ]
    )
    assert items == [
        Reply("t", "r", (ToolCall("read_file", {"path": "a"}, "c1"),), Usage(3, 2, 1), "max_tokens", 1),
        Reply(),
        Failure(429, "m", "k", True, 1.5, "p"),
    ]


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, r"script: expected a list"),
        ([{"answer": {}}], r"script\[0\]: expected"),
        ([{"reply": {}, "failure": {}}], r"script\[0\]: expected"),
        ([{"reply": {"txt": "x"}}], r"script\[0\]\.reply: unknown field 'txt'"),
        ([{"reply": {"tool_calls": {}}}], r"script\[0\]\.reply\.tool_calls: expected a list"),
        ([{"reply": {"tool_calls": [{"arguments": {}}]}}], r"script\[0\]\.reply\.tool_calls\[0\]"),
        ([{"reply": {}}, {"failure": {"status": "500"}}], r"script\[1\]\.failure: Failure\.status"),
        ([{"reply": {"usage": {"input_tokens": -1}}}], r"script\[0\]\.reply\.usage: Usage\.input_tokens"),
    ],
)
def test_parse_script_names_the_bad_item_and_field(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_script(data)


def test_load_script_reports_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read script"):
        load_script(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(ValueError, match="invalid JSON"):
        load_script(bad)


def run_cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen(
        [sys.executable, "-m", "turnmemory.testing", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_command_line_serves_a_script_file_until_interrupted(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"reply": {"text": "from the file"}}]), encoding="utf-8")
    process = run_cli("--script", str(script), "--no-check")
    try:
        assert process.stdout is not None
        urls = dict(process.stdout.readline().strip().split(": ", 1) for _ in PROVIDERS)
        assert set(urls) == set(PROVIDERS)
        assert urls["openai_chat"] == urls["anthropic"] + "/v1"
        assert "1 scripted item(s)" in process.stdout.readline()
        client = anthropic.Anthropic(api_key="k", base_url=urls["anthropic"], max_retries=0, timeout=5)
        message = client.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
        assert message.content[0].text == "from the file"  # type: ignore[union-attr]
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0


def test_command_line_rejects_a_bad_script_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"reply": {"text": 3}}]), encoding="utf-8")
    process = run_cli("--script", str(script))
    _, err = process.communicate(timeout=10)
    assert process.returncode == 2
    assert err.strip().splitlines() == [
        "error: script[0].reply: Reply.text and Reply.reasoning: expected strings"
    ]


def test_check_false_answers_a_broken_history_from_the_script() -> None:
    broken = {"model": "m", "max_tokens": 5, "messages": [{"role": "assistant", "content": "  "}]}
    with FakeProviderServer([Reply(text="accepted")], check=False) as unchecked:
        status, body = post(unchecked.url + "/v1/messages", json.dumps(broken).encode())
    assert (status, body["content"]) == (200, [{"type": "text", "text": "accepted"}])
    with FakeProviderServer([Reply(text="kept")]) as checked:
        status, body = post(checked.url + "/v1/messages", json.dumps(broken).encode())
        assert (status, body["error"]["type"]) == (400, "invalid_request_error")
        assert checked.remaining == 1
        checked.reset()
