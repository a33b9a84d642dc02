"""``web_fetch``: fetch an http(s) URL and return its text; HTML is converted to plain text."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from html.parser import HTMLParser
from http.client import HTTPMessage
from typing import Any
from urllib.parse import urlsplit

from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import Action, Tool, ToolContext, ToolError
from turnmemory.retention import sanitize_url

__all__ = ["MAX_FETCH_BYTES", "MAX_TEXT_CHARS", "WEB_FETCH", "fetch_text", "html_to_text"]

MAX_FETCH_BYTES = 2_000_000
"""The most of a response body that is downloaded."""
MAX_TEXT_CHARS = 100_000
"""The most text returned to the model."""
FETCH_TIMEOUT = 20.0
_TEXTUAL = re.compile(r"^(?:text/|application/(?:[\w.+-]*\+)?(?:json|xml|javascript|x-www-form-urlencoded))")


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


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urlsplit(newurl).scheme.lower() not in ("http", "https"):
            raise ToolError(f"refused redirect to a non-http URL: {sanitize_url(newurl) or 'invalid URL'}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch_text(url: str, *, timeout: float = FETCH_TIMEOUT) -> dict[str, Any]:
    """Fetch ``url`` and return ``{url, status_code, content_type, content, truncated}``."""
    shown = sanitize_url(url) or url
    request = urllib.request.Request(
        url,
        headers={
            "User-Agent": "turnmemory-agent",
            "Accept": "text/html, text/plain, application/json, */*;q=0.5",
        },
    )
    opener = urllib.request.build_opener(_HttpOnlyRedirects())
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(MAX_FETCH_BYTES + 1)
            status = response.status
            final_url = response.geturl()
            content_type = response.headers.get_content_type()
            charset = response.headers.get_content_charset() or "utf-8"
    except urllib.error.HTTPError as error:
        raise ToolError(f"HTTP {error.code} {error.reason} for {shown}") from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError):
            raise ToolError(f"timed out after {timeout:g} s fetching {shown}") from None
        raise ToolError(f"could not fetch {shown}: {reason}") from None
    except TimeoutError:
        raise ToolError(f"timed out after {timeout:g} s fetching {shown}") from None
    if not _TEXTUAL.match(content_type):
        raise ToolError(f"{shown} returned {content_type}, not text")
    try:
        text = body[:MAX_FETCH_BYTES].decode(charset, "replace")
    except LookupError:
        text = body[:MAX_FETCH_BYTES].decode("utf-8", "replace")
    if content_type in ("text/html", "application/xhtml+xml"):
        text = html_to_text(text)
    truncated = len(body) > MAX_FETCH_BYTES or len(text) > MAX_TEXT_CHARS
    return {
        "url": final_url,
        "status_code": status,
        "content_type": content_type,
        "content": text[:MAX_TEXT_CHARS],
        "truncated": truncated,
    }


def _prepare_fetch(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    url: str = arguments["url"].strip()
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ToolError("web_fetch takes an absolute http:// or https:// URL")
    return Action(run=lambda: fetch_text(url), access=Access("web", parts.hostname))


WEB_FETCH = Tool(
    name="web_fetch",
    description=(
        "Fetch an http(s) URL and return its text (HTML converted to plain text, at most 100,000 characters). "
        "Non-text responses and HTTP errors are reported as errors."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "url": {"type": "string", "minLength": 1, "description": "Absolute http:// or https:// URL."}
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    prepare=_prepare_fetch,
)
