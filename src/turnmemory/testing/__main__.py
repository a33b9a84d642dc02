"""``python -m turnmemory.testing``: run the fake provider server until interrupted."""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections.abc import Sequence

from turnmemory.testing._script import ScriptItem, load_script
from turnmemory.testing._server import PROVIDERS, FakeProviderServer


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, serve the script, print each provider's base URL; 2 on a bad script."""
    parser = argparse.ArgumentParser(
        prog="python -m turnmemory.testing",
        description="A loopback fake of the Anthropic, OpenAI, Gemini and Bedrock APIs, answering from a script.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--script", help="JSON script file (format: docs/fake-provider.md)")
    parser.add_argument("--no-check", action="store_true", help="do not validate request bodies")
    args = parser.parse_args(argv)
    script: list[ScriptItem] = []
    if args.script:
        try:
            script = load_script(args.script)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    try:
        server = FakeProviderServer(script, check=not args.no_check, host=args.host, port=args.port)
    except OSError as err:
        print(f"error: cannot listen on {args.host}:{args.port} ({err.strerror or err})", file=sys.stderr)
        return 2
    with server:
        for provider in PROVIDERS:
            print(f"{provider}: {server.base_url(provider)}")
        print(f"{len(script)} scripted item(s); Ctrl-C to stop", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
