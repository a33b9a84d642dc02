"""The sessions store on SQLite and on PostgreSQL: appending a turn and resuming a session at 10,
1,000 and 10,000 turns.

A turn is what the agent writes: the prompt (before the turn runs), then the assistant turn (its
Message with about 20 tool activities, and its display transcript), each event in its own
transaction. Turns are recorded once from ``synthetic.py`` (a pool reused in a cycle), so what is
timed is the store. *Append* is the mean of the last turns appended to a session of that size;
*resume* reads the conversation back as ``run --continue`` and ``chat --resume`` do (without the
display transcripts); *show* reads everything, transcripts included, as ``turnmemory show`` does.
CPU is this process's (PostgreSQL's own work is in the server's processes, so wall time is shown
beside it). PostgreSQL runs as a throwaway cluster on a Unix socket with fsync on, as SQLite's WAL
commits are. Prints a markdown table::

    .venv/bin/python benchmarks/store.py [--sizes 10,1000,10000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.agent._postgres import start_cluster

import synthetic
import turnmemory as tm
from turnmemory.agent.store import SessionStore, open_store, transcript_items

POOL = 50
TIMED_APPENDS = 100


def _pool() -> list[tuple[str, tm.Message, list[dict[str, Any]]]]:
    turns = []
    for user, events in synthetic.traced_session(POOL, 20):
        recorder = synthetic.recorded(events)
        items = transcript_items(recorder.segments, workspace=synthetic.WORKSPACE)
        turns.append((user, recorder.finish(), items))
    return turns


def _timed(work: Callable[[], object]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    return time.process_time() - cpu, time.perf_counter() - wall


def _measure(store: SessionStore, sizes: list[int], pool: list[Any]) -> Iterator[list[str]]:
    session = store.create(synthetic.WORKSPACE, provider="anthropic", model="m")
    written = 0

    def append(count: int) -> None:
        nonlocal written
        for _ in range(count):
            user, message, items = pool[written % len(pool)]
            store.add_user_message(session, user)
            store.add_assistant_turn(session, message, status="done", transcript=items)
            written += 1

    for size in sizes:
        timed = min(TIMED_APPENDS, size)
        append(size - timed - written)
        cpu, wall = _timed(lambda timed=timed: append(timed))  # type: ignore[misc]
        resume = _timed(lambda: store.load(session, transcripts=False))
        show = _timed(lambda: store.load(session))
        yield [
            f"{size:,}",
            f"{cpu / timed * 1000:.2f} ms",
            f"{wall / timed * 1000:.2f} ms",
            f"{resume[0]:.3f} s",
            f"{resume[1]:.3f} s",
            f"{show[0]:.3f} s",
        ]


@contextmanager
def _stores(root: Path) -> Iterator[Iterator[tuple[str, SessionStore]]]:
    cluster = start_cluster(durable=True)

    def opened() -> Iterator[tuple[str, SessionStore]]:
        with open_store(f"sqlite://{root}/sessions.sqlite3") as sqlite:
            yield "SQLite", sqlite
        if isinstance(cluster, str):
            print(f"PostgreSQL skipped: {cluster}", file=sys.stderr)
            return
        with open_store(cluster.fresh_url()) as postgres:
            yield "PostgreSQL", postgres

    try:
        yield opened()
    finally:
        if not isinstance(cluster, str):
            cluster.remove()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,1000,10000")
    sizes = sorted(int(size) for size in parser.parse_args().sizes.split(","))
    pool = _pool()
    print("| store | turns | append CPU | append wall | resume CPU | resume wall | show CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as root, _stores(Path(root)) as stores:
        for name, store in stores:
            for row in _measure(store, sizes, pool):
                print(f"| {name} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
