"""The incremental formatter's cost per new turn as a conversation grows, for every provider in one run.

    .venv/bin/python benchmarks/formatter.py [--sizes 100,1000,10000] [--turns 20]

For each session length, one ``Formatter()`` per provider builds the requests of the conversation's last
``--turns`` turns (each request the history up to a user message); the table gives the least cost per
new turn, one copy of the list the request returns (what every request costs at least: the list is the
caller's; both timed from cold CPU caches, each made after its previous one was released), what
remains beyond that copy, the same as a multiple of the shortest session's, the minor page faults of a
request and of a copy (means per turn: fresh pages the allocator hands out), the release of the
previous request's list (timed apart: it touches every item as a copy does), and a cold
``to_request`` of the whole session. Flat means the "beyond the copy" column does not grow with the
session. Absolute times drift between machines and with load: read the ratios.
"""

from __future__ import annotations

import argparse
import gc
import platform
import resource
import time
from typing import Any

import synthetic
from perf import best_of, fmt_time, table
from turnmemory import providers

CACHE_SIZED = b"x" * (64 << 20)
"""More bytes than any CPU cache holds: reading them through evicts the conversation's objects."""


def cold_caches() -> None:
    """Evict what the last request touched, so a copy and a build both start from main memory (as the
    request of a new turn does, after the model's reply and the tools ran)."""
    CACHE_SIZED.upper()


def page_faults() -> int:
    """The minor page faults of this process so far (a fresh page the allocator hands out costs one)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def per_turn(module: Any, history: list[Any], turns: int) -> tuple[float, float, float, float, float, int]:
    """The least seconds, over the last ``turns``, of a new turn's request, of one copy of its item
    list and of releasing the previous request; the page faults per request and per copy (means); and
    the number of items of the last request.

    Each is timed alone from cold CPU caches, and the request and the copy the same way: each new one
    is made after the previous one is released, so both get the memory the allocator hands back for a
    list of that size (releasing a list touches every item it holds, as copying one does: it is the
    caller's cost, with the copy, and is shown apart)."""
    formatter = module.Formatter()
    last = len(history) - 1  # the final user message of the session
    ends = range(last - 2 * turns, last + 1, 2)  # each request ends with a user message
    request = formatter.to_request(history[: ends[0] + 1])
    copy = list(request[module.ITEMS])
    builds: list[float] = []
    copies: list[float] = []
    releases: list[float] = []
    faults = [0, 0]
    for end in ends[1:]:
        messages = history[: end + 1]
        gc.disable()
        cold_caches()
        start = time.perf_counter()
        del request
        releases.append(time.perf_counter() - start)
        cold_caches()
        before, start = page_faults(), time.perf_counter()
        request = formatter.to_request(messages)
        builds.append(time.perf_counter() - start)
        faults[0] += page_faults() - before
        del copy
        cold_caches()
        before, start = page_faults(), time.perf_counter()
        copy = list(request[module.ITEMS])
        copies.append(time.perf_counter() - start)
        faults[1] += page_faults() - before
        gc.enable()
    del copy
    return (
        min(builds),
        min(copies),
        min(releases),
        faults[0] / turns,
        faults[1] / turns,
        len(request[module.ITEMS]),
    )


def main() -> None:
    """Print the per-turn table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100,1000,10000", help="session lengths in turns")
    parser.add_argument("--turns", type=int, default=20, help="new turns measured per session")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"# turnmemory formatter — Python {platform.python_version()} on {platform.machine()}")
    rows: list[list[str]] = []
    first: dict[str, float] = {}
    for size in sizes:
        history = synthetic.session(size)
        for name in providers.PROVIDERS:
            module = getattr(providers, name)
            build, copy, release, build_faults, copy_faults, items = per_turn(module, history, args.turns)
            beyond = max(build - copy, 1e-9)
            base = first.setdefault(name, beyond)
            cold = best_of(lambda m=module, h=history: m.to_request(h), repeat=1 if size > 1000 else 3)
            rows.append(
                [
                    f"{size:,}",
                    name,
                    f"{items:,}",
                    fmt_time(build),
                    fmt_time(copy),
                    fmt_time(beyond),
                    f"{beyond / base:.1f}x",
                    f"{build_faults:.0f} / {copy_faults:.0f}",
                    fmt_time(release),
                    fmt_time(cold),
                    f"{cold / build:.0f}x",
                ]
            )
    table(
        f"Per new turn over a conversation's last {args.turns} turns (the least), against a cold build",
        [
            "turns",
            "provider",
            "items",
            "per new turn",
            "one list copy",
            "beyond the copy",
            f"beyond / at {sizes[0]:,}",
            "page faults: turn / copy",
            "release of the previous",
            "cold",
            "cold / turn",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
