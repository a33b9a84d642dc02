"""Hostile clients and failing upstreams: the proxy fails open, answers in the client's error shape,
bounds what a request may cost, and never hangs."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anthropic
import httpx
import pytest
from tests.proxy._serving import serving

from turnmemory.proxy import Limits, ProxyApp
from turnmemory.proxy._serve import is_loopback
from turnmemory.testing import Failure, FakeProviderServer, Hang, Reply

SECRET = "sk-ant-api03-SYNTHETIC-7Q2xv9LmKp"
HISTORY = [
    {"role": "user", "content": f"deploy with {SECRET}"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "env"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": f"KEY={SECRET}"}]},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "next"},
]
BODIES = {
    "/v1/messages": {
        "model": "claude-x",
        "max_tokens": 64,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "messages": HISTORY,
    },
    "/v1/chat/completions": {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]},
    "/v1/responses": {"model": "gpt-x", "input": "hi"},
}
HEADERS = {"x-api-key": "sk-test", "authorization": "Bearer sk-test", "content-type": "application/json"}


@pytest.fixture
def upstream() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@contextmanager
def proxy_for(upstream: str, limits: Limits | None = None) -> Iterator[str]:
    app = ProxyApp(anthropic_upstream=upstream, openai_upstream=upstream + "/v1", limits=limits or Limits())
    with serving(app) as url:
        yield url


MALFORMED = [
    b"{",
    b"",
    b"[1, 2]",
    b"\xff\xfe{}",
    b'{"messages": "not a list"}',
    b'{"messages": [1, "x", null]}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"messages": [{"role": "user", "content": "a"}]' + b" " * 10 + b", ",
]


INVALID = [
    b'{"messages": [{"role": "user", "content": 7}, {"role": "assistant"}, {"role": "user"}]}',
    b'{"messages": [{"role": "wizard", "content": "a"}, {"role": "assistant", "content": "b"}, '
    b'{"role": "user", "content": "c"}]}',
    b'{"input": [{"type": "function_call_output", "call_id": "c9", "output": 1}, {"role": "user"}]}',
]
"""JSON histories the provider refuses: compacted or not, the client gets the provider's refusal."""


@pytest.mark.parametrize("path", list(BODIES))
def test_what_the_proxy_cannot_compact_goes_up_as_it_came(
    path: str, upstream: FakeProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "turnmemory.proxy")
    with proxy_for(upstream.url) as proxy, httpx.Client() as client:
        for body in MALFORMED:
            through = client.post(proxy + path, content=body, headers=HEADERS)
            straight = client.post(upstream.url + path, content=body, headers=HEADERS)
            assert (through.status_code, through.content) == (straight.status_code, straight.content)
        for body in INVALID:
            through = client.post(proxy + path, content=body, headers=HEADERS)
            straight = client.post(upstream.url + path, content=body, headers=HEADERS)
            assert through.status_code == straight.status_code == 400
    assert len(caplog.records) == len(MALFORMED) + len(INVALID)
    for record, body in zip(caplog.records[: len(MALFORMED)], MALFORMED, strict=True):
        assert f"bytes={len(body)}->{len(body)}" in record.getMessage()


def test_one_line_per_request_without_content(
    upstream: FakeProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "turnmemory.proxy")
    upstream.push(Reply(text=f"echo {SECRET}"))
    headers = {**HEADERS, "x-api-key": SECRET}
    with proxy_for(upstream.url) as proxy:
        sent = json.dumps(BODIES["/v1/messages"]).encode()
        answer = httpx.post(proxy + "/v1/messages", content=sent, headers=headers)
    assert answer.status_code == 200 and SECRET in answer.text
    assert upstream.requests[0].headers["x-api-key"] == SECRET  # authentication goes up untouched
    assert f"KEY={SECRET}" not in json.dumps(upstream.requests[0].body)  # the tool's output is gone
    [record] = caplog.records
    line = record.getMessage()
    assert SECRET not in line and "deploy" not in line
    assert line.startswith(f"POST /v1/messages turns=1 bytes={len(sent)}->")
    assert " upstream=200 added=" in line and line.endswith("ms")


def test_a_body_over_the_limit_is_refused_without_reading_it(upstream: FakeProviderServer) -> None:
    hundred_mb = 100 << 20
    with proxy_for(upstream.url) as proxy:
        host, port = proxy.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n{" % hundred_mb
            )
            answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 413") and b"request_too_large" in answer

        def chunks() -> Iterator[bytes]:
            yield b'{"messages": ["'
            for _ in range(100):
                yield b"x" * (1 << 20)

        refused = httpx.post(proxy + "/v1/chat/completions", content=chunks(), headers=HEADERS, timeout=60)
    assert refused.status_code == 413 and refused.json()["error"]["type"] == "invalid_request_error"
    assert upstream.requests == []


def test_trickling_clients_do_not_hold_up_others(upstream: FakeProviderServer) -> None:
    """A body trickled byte by byte gets a 408 when its deadline passes; headers that never end
    (uvicorn sets them no deadline) hold only their own socket; other clients are served meanwhile."""
    upstream.push(*[Reply(text="ok")] * 3)
    with proxy_for(upstream.url, Limits(client_timeout=1.0)) as proxy:
        host, port = proxy.removeprefix("http://").split(":")
        address = (host, int(port))
        with socket.create_connection(address, timeout=10) as body, socket.create_connection(address) as head:
            body.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            head.sendall(b"POST /v1/messages HTTP/1.1\r\nHo")
            started = time.monotonic()
            for _ in range(3):
                body.sendall(b" ")
                head.sendall(b"s")
                answer = httpx.post(proxy + "/v1/messages", json=BODIES["/v1/messages"], headers=HEADERS)
                assert answer.status_code == 200
            refused = body.recv(65536)
        assert refused.startswith(b"HTTP/1.1 408") and b"timeout_error" in refused
        assert time.monotonic() - started < 8


def test_an_upstream_that_never_answers_times_out(upstream: FakeProviderServer) -> None:
    upstream.push(Hang())
    with proxy_for(upstream.url, Limits(read_timeout=0.5)) as proxy:
        client = anthropic.Anthropic(api_key="sk-test", base_url=proxy, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(**BODIES["/v1/messages"])
    assert caught.value.status_code == 504
    assert "upstream timed out" in str(caught.value)


def test_an_unreachable_upstream_is_a_502() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"
    with proxy_for(dead) as proxy:
        answer = httpx.post(proxy + "/v1/responses", json=BODIES["/v1/responses"], headers=HEADERS)
    assert answer.status_code == 502 and "upstream unreachable" in answer.json()["error"]["message"]


FAILURES = [
    Failure(429, "slow down", retry_after=2),
    Failure(500, "boom"),
    Failure(529, "overloaded", kind="overloaded_error"),
    Failure(503, "busy", retry_after=1.5),
    Failure(400, "bad", kind="context_overflow"),
]


@pytest.mark.parametrize("path", list(BODIES))
def test_upstream_errors_are_relayed_as_they_came(path: str) -> None:
    with (
        FakeProviderServer(FAILURES) as proxied,
        FakeProviderServer(FAILURES) as direct,
        proxy_for(proxied.url) as proxy,
        httpx.Client() as client,
    ):
        for _ in FAILURES:
            through = client.post(proxy + path, json=BODIES[path], headers=HEADERS)
            straight = client.post(direct.url + path, json=BODIES[path], headers=HEADERS)
            assert through.status_code == straight.status_code
            assert through.content == straight.content
            assert through.headers.get("retry-after") == straight.headers.get("retry-after")


def test_an_error_inside_a_stream_is_relayed_as_it_came() -> None:
    failure = Failure(529, "overloaded", kind="overloaded_error", mid_stream=True, partial_text="half")
    body = {**BODIES["/v1/messages"], "stream": True}
    with (
        FakeProviderServer([failure]) as proxied,
        FakeProviderServer([failure]) as direct,
        proxy_for(proxied.url) as proxy,
    ):
        through = httpx.post(proxy + "/v1/messages", json=body, headers=HEADERS)
        straight = httpx.post(direct.url + "/v1/messages", json=body, headers=HEADERS)
    assert through.status_code == 200 and through.content == straight.content
    assert b"overloaded_error" in through.content


class EndlessUpstream:
    """An upstream that streams SSE comments until its client goes away, and says when it did."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.sent = 0
        self.gone = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        connection, _ = self.sock.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            try:
                while self.sent < 3000:  # a minute at most
                    connection.sendall(b"d\r\n: keep-alive\n\r\n")
                    self.sent += 1
                    time.sleep(0.02)
            except OSError:
                self.gone.set()


def test_a_client_that_disconnects_mid_stream_closes_the_upstream_stream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "turnmemory.proxy")
    upstream = EndlessUpstream()
    with proxy_for(upstream.url) as proxy:
        with httpx.stream(
            "POST", proxy + "/v1/messages", json={**BODIES["/v1/messages"], "stream": True}, headers=HEADERS
        ) as response:
            first = next(response.iter_raw())
        assert first.startswith(b": keep-alive")  # the first bytes arrive while the upstream streams on
        assert upstream.gone.wait(10), "the upstream stream stayed open after the client left"
        assert upstream.sent < 3000
    assert "client went away mid-response" in caplog.records[-1].getMessage()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("10.0.0.1", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_only_loopback_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_listening_elsewhere_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from turnmemory.proxy import serve

    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)
    said: list[str] = []
    serve("0.0.0.0", 0, say=said.append)
    serve("127.0.0.1", 0, say=said.append)
    assert [line for line in said if "warning" in line] == [said[0]]
    assert "not loopback" in said[0]
    assert len(said) == 3
