"""``web_fetch``: fetch an http(s) URL and return its text; HTML is converted to plain text.

Redirects are followed here, not by a library, so that every hop to a new origin (scheme, host, port)
is decided like the first request: by the rules, by asking, or refused with the reason. One deadline
covers the whole fetch, every hop and every byte (a server that trickles its answer is cut off at
it), and at most :data:`MAX_FETCH_BYTES` of a body are read. Proxies come from the usual environment
variables (``https_proxy``, ``http_proxy``, ``no_proxy``).
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import ssl
import threading
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import Action, Deadline, Tool, ToolContext, ToolError, int_argument
from turnmemory.agent.tools._schema import arguments, integer, string
from turnmemory.retention import sanitize_url

__all__ = [
    "DEFAULT_FETCH_TIMEOUT",
    "MAX_FETCH_BYTES",
    "MAX_FETCH_TIMEOUT",
    "MAX_REDIRECTS",
    "MAX_TEXT_CHARS",
    "WEB_FETCH",
    "fetch_text",
    "html_to_text",
]

MAX_FETCH_BYTES = 2_000_000
"""The most of a response body that is downloaded."""
MAX_TEXT_CHARS = 100_000
"""The most text returned to the model."""
DEFAULT_FETCH_TIMEOUT = 30
"""Seconds one whole fetch (every redirect and the body) may take, unless the call says otherwise."""
MAX_FETCH_TIMEOUT = 120
MAX_REDIRECTS = 10
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TEXTUAL = re.compile(r"^(?:text/|application/(?:[\w.+-]*\+)?(?:json|xml|javascript|x-www-form-urlencoded))")
_HEADERS = {
    "User-Agent": "turnmemory-agent",
    "Accept": "text/html, text/plain, application/json, */*;q=0.5",
    "Accept-Encoding": "identity",
}


class _TextExtractor(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "svg"})
    _BLOCK = frozenset(
        [
            "address",
            "article",
            "aside",
            "blockquote",
            "br",
            "dd",
            "div",
            "dl",
            "dt",
            "figcaption",
            "figure",
            "footer",
            "form",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "header",
            "hr",
            "li",
            "main",
            "nav",
            "ol",
            "p",
            "pre",
            "section",
            "table",
            "tbody",
            "td",
            "th",
            "thead",
            "tr",
            "ul",
            "title",
        ]
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        if tag == "pre":
            self._pre += 1
        if tag in self._BLOCK:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1
        if tag == "pre" and self._pre:
            self._pre -= 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data if self._pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """The readable text of an HTML document: scripts and styles dropped, blocks on their own lines."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (line.strip() for line in "".join(parser.parts).splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    reason: str
    headers: http.client.HTTPMessage
    body: bytes


def _shown(url: str) -> str:
    return sanitize_url(url) or "an invalid URL"


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        raise ToolError(f"invalid port in {_shown(url)}") from None
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection for ``url`` (through the environment's proxy when one applies) and the request target."""
    scheme, host, port = _origin(url)
    parts = urlsplit(url)
    target = urlunsplit(("", "", parts.path or "/", parts.query, ""))
    proxy = None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get(scheme)
    if proxy:
        via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        proxy_host, proxy_port = via.hostname or "", via.port or 8080
        if scheme == "http":  # the proxy gets the URL rebuilt from what was checked, never the raw text
            netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            return http.client.HTTPConnection(
                proxy_host, proxy_port, timeout=timeout
            ), f"http://{netloc}{target}"
        tunnelled = http.client.HTTPSConnection(
            proxy_host, proxy_port, timeout=timeout, context=ssl.create_default_context()
        )
        tunnelled.set_tunnel(host, port)
        return tunnelled, target
    if scheme == "https":
        return http.client.HTTPSConnection(
            host, port, timeout=timeout, context=ssl.create_default_context()
        ), target
    return http.client.HTTPConnection(host, port, timeout=timeout), target


def _abort(connection: http.client.HTTPConnection) -> None:
    """Unblock a read in progress on ``connection`` (the deadline has passed)."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _get(url: str, deadline: Deadline, shown: str) -> _Answer:
    """One GET of ``url`` within ``deadline``; a redirect's body is not read."""
    connection, target = _connection(url, max(deadline.remaining(), 0.001))
    watchdog = threading.Timer(deadline.remaining(), _abort, (connection,))
    watchdog.start()
    try:
        connection.request("GET", target, headers=_HEADERS)
        response = connection.getresponse()
        body = b"" if response.status in _REDIRECTS else response.read(MAX_FETCH_BYTES + 1)
        if deadline.expired:
            raise TimeoutError
        return _Answer(response.status, response.reason, response.headers, body)
    except (OSError, http.client.HTTPException) as error:
        if deadline.expired or isinstance(error, TimeoutError):
            raise ToolError(f"timed out after {deadline.seconds:g} s fetching {shown}") from None
        raise ToolError(f"could not fetch {shown}: {error}") from None
    finally:
        watchdog.cancel()
        connection.close()


def fetch_text(
    url: str, *, authorize: Callable[[Access], None], timeout: float = DEFAULT_FETCH_TIMEOUT
) -> dict[str, Any]:
    """Fetch ``url`` and return ``{url, status_code, content_type, content, truncated}``.

    The host of ``url`` is taken as granted; a redirect to another origin calls ``authorize`` with its
    web access first (which raises :class:`ToolError` to refuse it). ``timeout`` bounds the whole fetch.
    """
    deadline = Deadline(timeout)
    shown = _shown(url)
    granted = {_origin(url)}
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        answer = _get(current, deadline, shown)
        if answer.status not in _REDIRECTS:
            return _text(current, answer)
        location = answer.headers.get("Location", "").strip()
        if not location:
            raise ToolError(f"HTTP {answer.status} without a Location from {_shown(current)}")
        following = urljoin(current, location)
        parts = urlsplit(following)
        if parts.scheme.lower() not in ("http", "https"):
            raise ToolError(f"refused redirect to a {parts.scheme}: URL (only http and https are followed)")
        if not parts.hostname:
            raise ToolError(f"refused redirect to a URL without a host from {_shown(current)}")
        if _origin(following) not in granted:
            try:
                authorize(Access("web", parts.hostname))
            except ToolError as refusal:
                raise ToolError(
                    f"redirect from {_shown(current)} to {_shown(following)}: {refusal}"
                ) from None
            granted.add(_origin(following))
        current = urlunsplit(parts._replace(fragment=""))
    raise ToolError(f"more than {MAX_REDIRECTS} redirects fetching {shown}")


def _text(url: str, answer: _Answer) -> dict[str, Any]:
    shown = _shown(url)
    if not 200 <= answer.status < 300:
        raise ToolError(f"HTTP {answer.status} {answer.reason[:200]} for {shown}")
    content_type = answer.headers.get_content_type()
    if not _TEXTUAL.match(content_type):
        raise ToolError(f"{shown} returned {content_type}, not text")
    body = answer.body[:MAX_FETCH_BYTES]
    try:
        text = body.decode(answer.headers.get_content_charset() or "utf-8", "replace")
    except LookupError:
        text = body.decode("utf-8", "replace")
    if content_type in ("text/html", "application/xhtml+xml"):
        text = html_to_text(text)
    return {
        "url": url,
        "status_code": answer.status,
        "content_type": content_type,
        "content": text[:MAX_TEXT_CHARS],
        "truncated": len(answer.body) > MAX_FETCH_BYTES or len(text) > MAX_TEXT_CHARS,
    }


def _prepare_fetch(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    url: str = arguments["url"].strip()
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ToolError("web_fetch takes an absolute http:// or https:// URL")
    _origin(url)
    timeout = int_argument(arguments, "timeout", DEFAULT_FETCH_TIMEOUT, 1, MAX_FETCH_TIMEOUT)
    return Action(
        run=lambda: fetch_text(url, authorize=ctx.authorize, timeout=timeout),
        access=Access("web", parts.hostname),
    )


WEB_FETCH = Tool(
    name="web_fetch",
    description=(
        "Fetch an http(s) URL and return its text (HTML converted to plain text, at most 100,000 characters). "
        "Redirects to another host need their own permission. Non-text responses and HTTP errors are "
        "reported as errors."
    ),
    input_schema=arguments(
        {
            "url": string("Absolute http:// or https:// URL.", non_empty=True),
            "timeout": integer(
                f"Seconds the whole fetch may take. Default {DEFAULT_FETCH_TIMEOUT}.", 1, MAX_FETCH_TIMEOUT
            ),
        },
        "url",
    ),
    prepare=_prepare_fetch,
)
