"""Performance of the memory layer at session scale, measured side by side in one run.

    .venv/bin/python benchmarks/perf.py [--sizes 10,100,1000,10000] [--quick]

Prints tables: recorder cost per event against ``json.dumps`` of the event's input; ``finish()`` per turn;
``Message.from_dict`` of a persisted session; ``to_request`` per provider, cold and per new turn (an
incremental formatter against a cold re-format, with byte-identical output); the cold build against a
``json.dumps`` of the request it returns; peak memory (``formatter.py`` follows the incremental formatter
over a conversation's last turns). Absolute times drift between machines: read the ratios.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic
import turnmemory as tm
from turnmemory import providers


def best_of(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """The best mean seconds per call over ``repeat`` rounds of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        gc.disable()
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = (time.perf_counter() - start) / number
        gc.enable()
        best = min(best, elapsed)
    return best


def fmt_time(seconds: float) -> str:
    """Seconds in the unit that reads best."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:8.2f} ms"
    return f"{seconds:8.2f} s "


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    """Print one aligned markdown table."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n### {title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |")


def bench_recorder() -> None:
    """Recording cost per event, against one json.dumps of the event's input."""
    import random

    rng = random.Random(1)
    events = [synthetic._tool(rng, 0, n) for n in range(2000)]

    def record() -> None:
        rec = tm.TurnRecorder(synthetic.WORKSPACE)
        for ev in events:
            rec.tool_start(ev.call_id, ev.name, ev.arguments)
            rec.tool_end(ev.call_id, output=ev.output, error=ev.error)

    def dumps() -> None:
        for ev in events:
            json.dumps(ev.arguments)

    per_event = best_of(record) / (2 * len(events))
    per_dumps = best_of(dumps) / len(events)

    chunks = [f"chunk {i} of prose " for i in range(20000)]

    def text() -> None:
        rec = tm.TurnRecorder()
        for chunk in chunks:
            rec.text(chunk)

    per_chunk = best_of(text) / len(chunks)
    table(
        "Recording (per event)",
        ["operation", "time", "json.dumps(input)", "ratio"],
        [
            [
                "tool_start or tool_end",
                fmt_time(per_event),
                fmt_time(per_dumps),
                f"{per_event / per_dumps:.2f}x",
            ],
            ["text chunk", fmt_time(per_chunk), "", ""],
        ],
    )


def bench_sizes(sizes: list[int]) -> None:
    """finish(), from_dict and to_request (cold, per new turn) per session length."""
    load_rows: list[list[str]] = []
    cold_rows: list[list[str]] = []
    incr_rows: list[list[str]] = []
    mem_rows: list[list[str]] = []
    for turns in sizes:
        repeat = 5 if turns <= 1000 else 2
        history = synthetic.session(turns)
        activities = sum(len(m.activities) for m in history)
        sample = synthetic.traced_session(20, seed=turns)
        finish = best_of(lambda s=sample: [synthetic.record_turn(events) for _, events in s], repeat=5) / len(
            sample
        )
        persisted = json.dumps([m.to_dict() for m in history])
        loaded = json.loads(persisted)
        from_dict = best_of(lambda d=loaded: [tm.Message.from_dict(x) for x in d], repeat=repeat)
        load_rows.append(
            [
                f"{turns:,}",
                f"{activities:,}",
                fmt_time(finish),
                fmt_time(from_dict),
                fmt_time(from_dict / len(loaded)),
            ]
        )
        for name in providers.PROVIDERS:
            module = getattr(providers, name)
            cold = best_of(lambda m=module, h=history: m.to_request(h), repeat=repeat)
            request = module.to_request(history)
            dumps = best_of(lambda r=request: json.dumps(r), repeat=repeat)
            cold_rows.append(
                [
                    f"{turns:,}",
                    name,
                    fmt_time(cold),
                    fmt_time(dumps),
                    f"{cold / dumps:.2f}x",
                    f"{len(json.dumps(request)):,}",
                ]
            )
            incremental = _incremental(module, history, repeat)
            if incremental is not None:
                per_turn, identical = incremental
                incr_rows.append(
                    [
                        f"{turns:,}",
                        name,
                        fmt_time(per_turn),
                        fmt_time(cold),
                        f"{cold / per_turn:.0f}x",
                        "yes" if identical else "NO",
                    ]
                )
        tracemalloc.start()
        peak_history = synthetic.session(turns)
        retained, peak_build = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        providers.anthropic.to_request(peak_history)
        _, peak_format = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        mem_rows.append(
            [
                f"{turns:,}",
                f"{retained / 2**20:.1f} MiB",
                f"{peak_build / 2**20:.1f} MiB",
                f"{(peak_format - retained) / 2**20:.1f} MiB",
            ]
        )
        del peak_history
    table(
        "Recording and loading",
        ["turns", "activities", "finish() per turn", "from_dict (session)", "from_dict per message"],
        load_rows,
    )
    table(
        "Cold to_request against json.dumps of its own output",
        ["turns", "provider", "to_request", "json.dumps", "ratio", "request bytes"],
        cold_rows,
    )
    if incr_rows:
        table(
            "Per new turn: incremental formatter against a cold re-format",
            ["turns", "provider", "per new turn", "cold", "speed-up", "identical"],
            incr_rows,
        )
    table(
        "Memory (tracemalloc)",
        [
            "turns",
            "history held (prose + TurnMemory)",
            "peak while recording raw turns",
            "anthropic to_request",
        ],
        mem_rows,
    )


def _incremental(module: Any, history: list[tm.Message], repeat: int) -> tuple[float, bool] | None:
    """Time building the request after one more turn with an incremental formatter, if the module has one."""
    formatter_cls = getattr(module, "Formatter", None)
    if formatter_cls is None:
        return None
    previous = history[:-2]  # the last request: it ended with the user message the last turn answered
    times = []
    identical = True
    for _ in range(repeat):
        formatter = formatter_cls()
        formatter.to_request(previous)
        start = time.perf_counter()
        out = formatter.to_request(history)
        times.append(time.perf_counter() - start)
        identical = identical and json.dumps(out) == json.dumps(module.to_request(history))
    return min(times), identical


def main() -> None:
    """Run every benchmark and print the tables."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10,100,1000,10000", help="session lengths in turns")
    parser.add_argument("--quick", action="store_true", help="sizes 10,100,1000 only")
    args = parser.parse_args()
    sizes = [10, 100, 1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    print(
        f"# turnmemory performance — Python {platform.python_version()} on {platform.machine()}, {platform.processor() or 'cpu'}"
    )
    bench_recorder()
    bench_sizes(sizes)


if __name__ == "__main__":
    main()
