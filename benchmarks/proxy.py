"""What ``turnmemory proxy`` saves on real sessions, and what it costs per request.

``sessions``: every Claude Code, Codex and OpenCode session of ``../shared/data/transcripts`` is
rebuilt as the request sequence ``turnmemory analyze`` counts (each request of each turn, in the
OpenAI Chat form), sent through a ``turnmemory proxy`` process to the fake provider server, and the
bytes and o200k tokens the proxy received and forwarded are set beside ``analyze``'s full-history and
TurnMemory figures for the same sessions.

``latency``: 1, 10 and 100 concurrent clients stream Anthropic Messages responses from the fake
server, directly and through the proxy, in one run; per request time to the last byte at p50 and p99,
requests per second, and the proxy process's peak memory.

    python benchmarks/proxy.py sessions [--data DIR]
    python benchmarks/proxy.py latency [--clients 1,10,100] [--rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from turnmemory.analysis import open_meter
from turnmemory.analysis._strategies import requests
from turnmemory.analysis._trace import conversation
from turnmemory.testing import FakeProviderServer, Reply
from turnmemory.transcripts import discover, load_session

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "transcripts"
AGENTS = ("claude-code", "codex", "opencode")
HEADERS = {"authorization": "Bearer sk-bench", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def proxy_process(upstream: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``turnmemory proxy`` on a free loopback port in front of ``upstream``."""
    port = _free_port()
    command = [str(Path(sys.executable).with_name("turnmemory")), "proxy", "--port", str(port)]
    command += ["--anthropic-upstream", upstream, "--openai-upstream", upstream + "/v1"]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("turnmemory proxy did not start") from None
                time.sleep(0.1)
        yield url, process
    finally:
        process.terminate()
        process.wait(30)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def sessions(data: Path) -> None:
    meter = open_meter("o200k")

    def size(messages: list[Any]) -> tuple[int, int]:
        texts = [json.dumps(m, ensure_ascii=False, separators=(",", ":")) for m in messages]
        return sum(len(t.encode()) for t in texts), sum(meter.block(t).size for t in texts)

    print(f"unit: bytes and {meter.unit} tokens of the request messages, summed over every request\n")
    print(
        "| agent | sessions | requests | received bytes | forwarded bytes | received tokens | forwarded tokens "
        "| analyze full | analyze TurnMemory | agree |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    with (
        FakeProviderServer(check=False) as upstream,
        proxy_process(upstream.url) as (proxy, _),
        httpx.Client(timeout=120) as client,
    ):
        for agent in AGENTS:
            paths = sorted(discover([str(data / agent)]))
            count = sent = 0
            totals = [0, 0, 0, 0, 0, 0]
            for path in paths:
                turns = conversation(load_session(path))
                full = [[json.loads(b.text) for b in r.blocks] for r in requests("full", turns, meter)]
                memory = list(requests("turnmemory", turns, meter))
                upstream.reset()
                upstream.push(*[Reply(text="ok")] * len(full))
                for messages in full:
                    client.post(
                        proxy + "/v1/chat/completions",
                        json={"model": "gpt-x", "messages": messages},
                        headers=HEADERS,
                    )
                received = [size(m) for m in full]
                forwarded = [size(r.body["messages"]) for r in upstream.requests]
                totals[0] += sum(b for b, _ in received)
                totals[1] += sum(b for b, _ in forwarded)
                totals[2] += sum(t for _, t in received)
                totals[3] += sum(t for _, t in forwarded)
                totals[4] += sum(sum(b.size for b in r.blocks) for r in requests("full", turns, meter))
                totals[5] += sum(sum(b.size for b in r.blocks) for r in memory)
                count += 1
                sent += len(full)
            agree = (
                "yes"
                if (totals[2], totals[3]) == (totals[4], totals[5])
                else f"no ({totals[3] - totals[5]:+,} tokens)"
            )
            print(
                f"| {agent} | {count} | {sent} | {totals[0]:,} | {totals[1]:,} | {totals[2]:,} | {totals[3]:,} "
                f"| {totals[4]:,} | {totals[5]:,} | {agree} |"
            )


def _script(path: Path, count: int) -> None:
    path.write_text(json.dumps([{"reply": {"text": "All tests pass now. " * 8}}] * count))


async def _round(
    client: httpx.AsyncClient, url: str, clients: int, body: dict[str, Any]
) -> list[float | None]:
    """The time of each of ``clients`` concurrent requests; ``None`` for one that failed."""

    async def one() -> float | None:
        started = time.perf_counter()
        try:
            async with client.stream("POST", url + "/v1/messages", json=body, headers=HEADERS) as response:
                async for _ in response.aiter_raw():
                    pass
        except httpx.HTTPError:
            return None
        return time.perf_counter() - started if response.status_code == 200 else None

    return list(await asyncio.gather(*(one() for _ in range(clients))))


def latency(levels: list[int], rounds: int) -> None:
    history = [
        {"role": "user", "content": "fix the test"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 20_000}]},
        {"role": "assistant", "content": "Fixed."},
        {"role": "user", "content": "now the docs"},
    ]
    body = {
        "model": "claude-x",
        "max_tokens": 256,
        "stream": True,
        "messages": history,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
    }
    total = sum(levels) * rounds * 4 + 20  # room for requests that fail
    print(
        f"request: {len(json.dumps(body)):,} bytes (one completed turn with a 20 kB tool result), streamed answer; "
        f"{rounds} rounds per level; time to the last byte\n"
    )
    print(
        "| clients | direct p50 ms | direct p99 ms | proxy p50 ms | proxy p99 ms | added p50 ms | added p99 ms "
        "| direct req/s | proxy req/s | proxy CPU ms/request | failed direct / proxy |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.json"
        _script(script, total)
        port = _free_port()
        fake = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "turnmemory.testing",
                "--port",
                str(port),
                "--script",
                str(script),
                "--no-check",
            ],
            stdout=subprocess.DEVNULL,
        )
        upstream = f"http://127.0.0.1:{port}"
        try:
            time.sleep(2)
            with proxy_process(upstream) as (proxy, process):
                peak = asyncio.run(_levels(levels, rounds, upstream, proxy, body, process.pid))
        finally:
            fake.terminate()
            fake.wait(30)
    print(f"\nproxy peak memory (VmHWM): {peak / 1024:.0f} MiB")


async def _levels(
    levels: list[int], rounds: int, upstream: str, proxy: str, body: dict[str, Any], pid: int
) -> int:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=200)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        await _round(client, proxy, 5, body)  # warm both up
        await _round(client, upstream, 5, body)
        for clients in levels:
            times: dict[str, list[float | None]] = {"direct": [], "proxy": []}
            walls = {"direct": 0.0, "proxy": 0.0}
            cpu = _cpu_seconds(pid)
            for _ in range(rounds):
                for name, url in (("direct", upstream), ("proxy", proxy)):
                    started = time.perf_counter()
                    times[name] += await _round(client, url, clients, body)
                    walls[name] += time.perf_counter() - started

            def q(answered: list[float | None], p: float) -> float:
                values = [t for t in answered if t is not None]
                return (
                    statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1] * 1000
                    if len(values) > 1
                    else values[0] * 1000
                )

            d50, d99, p50, p99 = (
                q(times["direct"], 50),
                q(times["direct"], 99),
                q(times["proxy"], 50),
                q(times["proxy"], 99),
            )
            cpu = _cpu_seconds(pid) - cpu
            done = {name: sum(t is not None for t in values) for name, values in times.items()}
            failed = {name: len(values) - done[name] for name, values in times.items()}
            print(
                f"| {clients} | {d50:.1f} | {d99:.1f} | {p50:.1f} | {p99:.1f} | {p50 - d50:+.1f} | {p99 - d99:+.1f} "
                f"| {done['direct'] / walls['direct']:.0f} | {done['proxy'] / walls['proxy']:.0f} "
                f"| {cpu * 1000 / max(done['proxy'], 1):.1f} | {failed['direct']} / {failed['proxy']} |"
            )
    return _peak_kib(pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("sessions")
    one.add_argument("--data", type=Path, default=DATA)
    two = sub.add_parser("latency")
    two.add_argument("--clients", default="1,10,100")
    two.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if args.what == "sessions":
        if not args.data.is_dir():
            sys.exit(f"no transcripts at {args.data}")
        sessions(args.data)
    else:
        latency([int(n) for n in args.clients.split(",")], args.rounds)


if __name__ == "__main__":
    os.environ.setdefault("NO_PROXY", "*")
    main()
