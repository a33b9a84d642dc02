"""The ``turnmemory proxy`` command."""

from __future__ import annotations

from typing import Annotated

import typer

from turnmemory.boundary import BOUNDARY_POLICIES

__all__ = ["proxy", "register"]


def register(app: typer.Typer) -> None:
    """Add the ``proxy`` command to the ``turnmemory`` CLI."""
    app.command("proxy")(proxy)


def proxy(
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback unless told).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.", min=0, max=65535)] = 8787,
    anthropic_upstream: Annotated[
        str, typer.Option("--anthropic-upstream", metavar="URL", help="Where /v1/messages goes.")
    ] = "https://api.anthropic.com",
    openai_upstream: Annotated[
        str,
        typer.Option(
            "--openai-upstream", metavar="URL", help="Where the rest of /v1/ goes (a base URL ending in /v1)."
        ),
    ] = "https://api.openai.com/v1",
    max_body_mb: Annotated[
        int, typer.Option("--max-body-mb", help="Largest model request body accepted, in MiB.", min=1)
    ] = 64,
    read_timeout: Annotated[
        float, typer.Option("--read-timeout", help="Seconds the upstream may stay silent.", min=0.1)
    ] = 600.0,
    boundary: Annotated[
        str,
        typer.Option(
            "--boundary",
            metavar="every_turn|when_it_pays|never",
            help="Which completed turns are compacted (each request is decided alone).",
        ),
    ] = "every_turn",
) -> None:
    """Compact the history of every model request an agent sends, on its way upstream.

    Run an agent against it with ANTHROPIC_BASE_URL=http://127.0.0.1:8787 (Claude Code) or
    OPENAI_BASE_URL=http://127.0.0.1:8787/v1 (Codex CLI and other OpenAI clients). Completed turns
    become their TurnMemory; the turn in progress, the system prompt, the tools and everything else
    go upstream as they came. One line per request on stderr, without content.
    """
    from urllib.parse import urlsplit

    if boundary not in BOUNDARY_POLICIES:
        raise typer.BadParameter(f"expected one of {', '.join(BOUNDARY_POLICIES)}", param_hint="--boundary")

    for name, url in (("--anthropic-upstream", anthropic_upstream), ("--openai-upstream", openai_upstream)):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise typer.BadParameter(f"expected an http(s) URL, got {url!r}", param_hint=name)
    try:
        from turnmemory.proxy import Limits, serve
    except ImportError as error:
        typer.echo(
            f"turnmemory proxy needs the 'proxy' extra ({error.name} is missing): pip install 'turnmemory[proxy]'",
            err=True,
        )
        raise typer.Exit(2) from None
    limits = Limits(max_body=max_body_mb << 20, read_timeout=read_timeout)
    serve(
        host,
        port,
        anthropic_upstream=anthropic_upstream,
        openai_upstream=openai_upstream,
        limits=limits,
        boundary=boundary,
    )
