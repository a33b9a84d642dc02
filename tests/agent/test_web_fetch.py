"""web_fetch against a hostile web server: redirects checked hop by hop, one deadline, a capped body.

A loopback ``http.server`` plays the hostile site. The model (the fake provider server's script) asks
for pages on a host it may fetch; the site redirects elsewhere, trickles bytes or sends too much.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from tests.agent._support import Run, leaked_into, tool_results

from turnmemory.agent.loop import Agent
from turnmemory.agent.permissions import Access, Answer
from turnmemory.agent.tools import ToolError
from turnmemory.agent.tools.web import MAX_FETCH_BYTES, MAX_REDIRECTS, MAX_TEXT_CHARS, fetch_text
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

ADMIN_SECRET = "ADMIN-PAGE-SECRET-5b0e"
"""What the page behind a forbidden redirect says; the model must never see it."""
HUGE_BODY = 40 * MAX_FETCH_BYTES


@dataclass
class Site:
    """One loopback HTTP server and what it saw."""

    base: str
    paths: list[str] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)


class _Handler(http.server.BaseHTTPRequestHandler):
    site: Site

    def do_GET(self) -> None:
        site = self.server.site  # type: ignore[attr-defined]
        site.paths.append(self.path)
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.path == "/to":
            self._redirect(int(query.get("code", "302")), query["url"])
        elif parts.path.startswith("/chain/"):
            left = int(parts.path.rsplit("/", 1)[1])
            if left:
                self._redirect(302, f"/chain/{left - 1}")
            else:
                self._page(b"end of the chain")
        elif parts.path == "/admin":
            self._page(ADMIN_SECRET.encode())
        elif parts.path == "/page":
            self._page(b"public page")
        elif parts.path == "/trickle-body":
            self._trickle(headers_first=True)
        elif parts.path == "/trickle-headers":
            self._trickle(headers_first=False)
        elif parts.path == "/huge":
            self._huge(site)
        else:
            self.send_error(404)

    def _redirect(self, code: int, location: str) -> None:
        self.send_response(code)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _page(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self, *, headers_first: bool) -> None:
        """A byte every 0.2 s for as long as the client listens (far longer than any deadline)."""
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n"
        if headers_first:
            self.wfile.write(head)
            head = b"x" * 100_000
        try:
            for byte in head[:300]:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            return

    def _huge(self, site: Site) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(HUGE_BODY))
        self.end_headers()
        chunk = b"y" * 65536
        sent = 0
        try:
            while sent < HUGE_BODY:
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        site.sent["/huge"] = sent

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve() -> Iterator[Site]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    site = Site(f"http://127.0.0.1:{server.server_address[1]}")
    server.site = site  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield site
    server.shutdown()
    server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    """The hostile site the model is allowed to fetch from."""
    yield from _serve()


@pytest.fixture
def other() -> Iterator[Site]:
    """A second server (another port of the same host): what redirects point at."""
    yield from _serve()


def _port(site: Site) -> int:
    return int(site.base.rsplit(":", 1)[1])


def _errors(results: list[str]) -> list[str]:
    return [json.loads(result)["error"] for result in results]


def _allow_all(access: Access) -> None:
    return None


# -- through the command line -----------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_redirects_to_hosts_the_rules_do_not_name_are_refused_through_the_cli(
    cli: Run, server: FakeProviderServer, site: Site, other: Site, data_dir: Path
) -> None:
    localhost = f"http://localhost:{_port(site)}"
    targets = [
        f"http://127.0.0.1:{_port(site)}/admin",  # another host name for the same server
        f"{other.base}/admin",  # another host and another port
        f"https://127.0.0.1:{_port(site)}/admin",  # another scheme
        f"http://127.0.0.2:{_port(site)}/admin",  # another loopback address
    ]
    calls = [ToolCall("web_fetch", {"url": f"{localhost}/to?url={target}"}) for target in targets]
    calls += [
        ToolCall("web_fetch", {"url": f"{localhost}/to?code=307&url={localhost}/to?url={targets[0]}"}),
        ToolCall("web_fetch", {"url": f"{localhost}/to?url=file:///etc/passwd"}),
        ToolCall("web_fetch", {"url": f"{localhost}/chain/3"}),
    ]
    server.push(Reply(text="Fetching.", tool_calls=calls), Reply(text="Done."))
    url = server.base_url("openai_chat")
    done = cli("run", "--provider", "openai_chat", "--base-url", url, "--allow", "web:localhost", "fetch")

    results = tool_results(server.requests[1].body)
    *refused, chained = results
    assert json.loads(chained)["content"] == "end of the chain"
    errors = _errors(refused)
    for error, target in zip(errors, targets, strict=False):
        host = urlsplit(target).hostname
        assert error.startswith(f"redirect from {localhost}/to to "), error
        assert error.endswith(
            f"permission denied: not allowed without asking: web: {host} (rerun with --allow web)"
        )
    assert "permission denied" in errors[4] and "web: 127.0.0.1" in errors[4]
    assert errors[5] == "refused redirect to a file: URL (only http and https are followed)"
    assert all("\n" not in error for error in errors)
    assert "/admin" not in site.paths + other.paths
    assert leaked_into(ADMIN_SECRET, server, data_dir, done.stdout, done.stderr) == []


@pytest.mark.timeout(60)
def test_a_trickling_server_is_cut_off_at_the_deadline_through_the_cli(
    cli: Run, server: FakeProviderServer, site: Site
) -> None:
    calls = [
        ToolCall("web_fetch", {"url": f"{site.base}/trickle-body", "timeout": 1}),
        ToolCall("web_fetch", {"url": f"{site.base}/trickle-headers", "timeout": 1}),
        ToolCall("web_fetch", {"url": f"{site.base}/to?url=/trickle-body", "timeout": 1}),
    ]
    server.push(Reply(text="Fetching.", tool_calls=calls), Reply(text="Done."))
    url = server.base_url("openai_chat")
    cli("run", "--provider", "openai_chat", "--base-url", url, "--allow", "web:127.0.0.1", "fetch")
    errors = _errors(tool_results(server.requests[1].body))
    assert errors == [
        f"timed out after 1 s fetching {site.base}/trickle-body",
        f"timed out after 1 s fetching {site.base}/trickle-headers",
        f"timed out after 1 s fetching {site.base}/to",
    ]


@pytest.mark.timeout(60)
def test_an_oversized_body_is_read_only_up_to_the_cap_through_the_cli(
    cli: Run, server: FakeProviderServer, site: Site
) -> None:
    server.push(
        Reply(text="Fetching.", tool_calls=[ToolCall("web_fetch", {"url": f"{site.base}/huge"})]),
        Reply(text="Done."),
    )
    url = server.base_url("openai_chat")
    cli("run", "--provider", "openai_chat", "--base-url", url, "--allow", "web:127.0.0.1", "fetch")
    result = json.loads(tool_results(server.requests[1].body)[0])
    assert result["truncated"] is True and len(result["content"]) == MAX_TEXT_CHARS
    deadline = time.monotonic() + 10
    while "/huge" not in site.sent and time.monotonic() < deadline:
        time.sleep(0.05)
    assert site.sent["/huge"] < HUGE_BODY / 4, "the client read far more than its cap"


# -- in process: every hop asked about, like the first request ------------------------------------------


@pytest.mark.timeout(60)
def test_every_redirect_to_a_new_origin_is_asked_about(
    make_agent: Callable[..., Agent], server: FakeProviderServer, site: Site, other: Site
) -> None:
    asked: list[str] = []
    answers = iter(["once", "deny", "session"])

    def ask(access: Access) -> Answer:
        asked.append(access.summary())
        return Answer(next(answers), "not there")  # type: ignore[arg-type]

    calls = [
        # the first host is granted once; the hop to the other port is asked about again, and denied
        ToolCall("web_fetch", {"url": f"{site.base}/to?url={other.base}/admin"}),
        # "for this session" grants the host, which covers the hop to its other port
        ToolCall("web_fetch", {"url": f"{site.base}/to?url={other.base}/page"}),
        ToolCall("web_fetch", {"url": f"{site.base}/to?url={other.base}/page"}),
    ]
    server.push(Reply(text="Fetching.", tool_calls=calls), Reply(text="Done."))
    agent = make_agent("openai_chat", ask=ask)
    agent.turn("fetch")
    assert asked == ["web: 127.0.0.1"] * 3
    denied, *fetched = tool_results(server.requests[1].body)
    assert _errors([denied]) == [
        f"redirect from {site.base}/to to {other.base}/admin: permission denied: "
        "the user denied web: 127.0.0.1: not there"
    ]
    assert [json.loads(result)["content"] for result in fetched] == ["public page"] * 2
    assert other.paths == ["/page", "/page"]


def test_redirect_limits_and_same_origin_hops() -> None:
    for site in _serve():
        assert (
            fetch_text(f"{site.base}/chain/{MAX_REDIRECTS}", authorize=_refuse)["content"]
            == "end of the chain"
        )
        with pytest.raises(ToolError, match=f"more than {MAX_REDIRECTS} redirects"):
            fetch_text(f"{site.base}/chain/{MAX_REDIRECTS + 1}", authorize=_refuse)
        for code in (301, 302, 303, 307, 308):
            assert (
                fetch_text(f"{site.base}/to?code={code}&url=/page", authorize=_refuse)["content"]
                == "public page"
            )
        with pytest.raises(ToolError, match=r"refused redirect to a ftp: URL \(only http and https"):
            fetch_text(f"{site.base}/to?url=ftp://files.example.invalid/x", authorize=_allow_all)


def _refuse(access: Access) -> None:
    raise ToolError(f"permission denied: {access.summary()}")


def test_a_proxy_from_the_environment_gets_the_url_that_was_checked(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", site.base)
    out = fetch_text("http://user:pw@example.invalid/page?q=1#part", authorize=_refuse)
    assert out["content"] == "public page"
    assert site.paths == ["http://example.invalid:80/page?q=1"]  # no credentials, no fragment
