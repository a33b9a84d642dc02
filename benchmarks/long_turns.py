"""Sequential long turns on every provider: how long a turn ends ``done`` in a given window.

One call per response (no prose between them), each reading a file of 2 to 4 KB, through the real
SDK client of each provider against the loopback fake server (``turnmemory.testing``), with the
client's default reserve and reducer chunk. For each provider and window it prints how many calls
the turn ran and how it ended, the longest turn that ends ``done`` (one call fewer than ran when the
turn overflowed: ask for more calls than fit to find it), how many results were cleared before the
model read them, the tokens a call costs (its call and result and the messages that carry them, as
sent) in full, cleared and folded (a folded batch's messages shared by its calls), and how many
requests did not extend the one before (prompt-cache prefix rewrites) per 100 requests, and the
milliseconds of the turn per request (the client, its SDK and the server in one process)::

    .venv/bin/python benchmarks/long_turns.py [--calls N] [--windows 32000,60000,128000] [PROVIDER ...]

Tokens are o200k counts of the compact JSON of the items (bytes / 3 without tiktoken's file).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from turnmemory.llm import CLEARED, Client, ToolResult, ToolSpec, open_client, open_counter
from turnmemory.providers import PROVIDERS, wire
from turnmemory.testing import MODELS, FakeProviderServer, Reply, ToolCall

READ = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
FOLDED = json.dumps({"status": "success"}, separators=(",", ":"))


def body(n: int) -> str:
    """A distinct file of 2 to 4 KB."""
    lines = 40 + (n * 37) % 40
    return "\n".join(
        [f"marker-{n:05d}", *(f"    value_{n}_{j} = compute({j}, {n})  # line {j}" for j in range(lines))]
    )


def uncached(value: Any) -> Any:
    """``value`` without prompt-cache markers (Anthropic ``cache_control``, Bedrock ``cachePoint`` blocks),
    which move to the newest message in every request by design."""
    if isinstance(value, dict):
        return {key: uncached(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [uncached(item) for item in value if not (isinstance(item, dict) and "cachePoint" in item)]
    return value


def run(server: FakeProviderServer, provider: str, window: int, calls: int) -> dict[str, Any]:
    server.reset()
    server.push(
        *(Reply(tool_calls=[ToolCall("read_file", {"path": f"m{k}.py"})]) for k in range(calls)),
        Reply(text="Everything is read."),
    )
    client: Client = open_client(
        provider,
        model=MODELS[provider],
        base_url=server.base_url(provider),
        api_key=None if provider == "bedrock" else "k",
        region="us-east-1",
        context_window=window,
    )
    count = iter(range(10**9))
    started = time.perf_counter()
    events = list(
        client.run_turn(
            [], "Read every module.", tools=[READ], execute=lambda *_: ToolResult(output=body(next(count)))
        )
    )
    seconds = time.perf_counter() - started
    end = events[-1]
    w = wire(provider)
    counter = open_counter()
    previous: list[Any] = []
    rewrites = unread = 0
    for request in server.requests:
        items = uncached(request.body[w.ITEMS])
        if items[: len(previous) - 1] != previous[:-1]:  # the newest item may gain a marker
            rewrites += 1
        previous = items
        latest = [piece for piece in w.pieces(items) if piece.kind == "result"][-1:]
        unread += sum(1 for piece in latest if "does not fit" in piece.text)
    items = server.requests[-1].body[w.ITEMS]
    pieces = [piece for piece in w.pieces(items) if piece.kind in ("call", "result")]
    states = {
        piece.call_id: "folded" if piece.text == FOLDED else "cleared" if CLEARED in piece.text else "full"
        for piece in pieces
        if piece.kind == "result"
    }
    costs: dict[str, float | None] = {}
    for state in ("full", "cleared", "folded"):
        ids = {call_id for call_id, found in states.items() if found == state}
        held = {piece.item for piece in pieces if piece.call_id in ids}  # a folded batch holds many calls
        costs[state] = sum(counter.value(items[i]) for i in held) / len(ids) if ids else None
    server.reset()
    return {
        "calls": sum(1 for event in events if event.kind == "tool_end"),
        "end": f"{end.kind}" + ("" if end.kind == "done" else f" ({end.reason})"),
        "unread": unread,
        "rewrites": rewrites,
        "cost": costs,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--windows", default="32000,60000,128000")
    parser.add_argument("providers", nargs="*", default=list(PROVIDERS))
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    for variable, value in (("AWS_ACCESS_KEY_ID", "fake-key"), ("AWS_SECRET_ACCESS_KEY", "fake-secret")):
        os.environ.setdefault(variable, value)  # Bedrock's client wants credentials; the server is fake
    print(f"{args.calls} sequential calls, 2-4 KB results; tokens: {open_counter().unit}")
    print(
        "| provider | window | calls run | end | longest done | unread | tokens/call full / cleared / folded "
        "| rewrites /100 req | ms/req |"
    )
    print("|---|---:|---:|---|---:|---:|---|---:|---:|")
    with FakeProviderServer() as server:
        for provider in args.providers:
            for window in windows:
                r = run(server, provider, window, args.calls)
                c = r["cost"]
                shown = " / ".join(
                    "-" if c[k] is None else f"{c[k]:.0f}" for k in ("full", "cleared", "folded")
                )
                per100 = 100 * r["rewrites"] / (r["calls"] + 1)
                # Requests fit up to the one that overflowed: a turn one call shorter ends done.
                longest = f"{r['calls']}" if r["end"] == "done" else f"{max(r['calls'] - 1, 0)}"
                print(
                    f"| {provider} | {window:,} | {r['calls']} | {r['end']} | {longest} | {r['unread']} "
                    f"| {shown} | {per100:.1f} | {1000 * r['seconds'] / (r['calls'] + 1):.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
